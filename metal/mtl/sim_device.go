//go:build !darwin || metalsim

package mtl

import (
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"unsafe"

	"bagel/cpu"
	"bagel/kernels"
)

// The simulated device and the objects it makes that hold no GPU work:
// compile options, library, function, pipeline, buffer, residency set.

// Simulated limits. maxBufferLength is settable (SetMaxBufferLength) so that
// tests can make the backend split a wrapped region; the others are those of
// Apple silicon GPUs.
const (
	simMaxBufferLength = 1 << 32 // a stand-in: real devices report about half their RAM or more
	simWorkingSet      = 16 << 30
	simMaxThreads      = 1024 // maxTotalThreadsPerThreadgroup of a pipeline
	simMaxBufferIndex  = 30   // [[buffer(0..30)]]: 31 argument table entries
	simMaxSetBytes     = 4096 // setBytes:length:atIndex: is for data under 4 KB
	// MTLLanguageVersion 2.4: the version of an MTLCompileOptions nobody set.
	simDefaultLanguageVersion = 2<<16 | 4
	simBfloatLanguageVersion  = 3<<16 | 1
)

// Device is a simulated MTLDevice whose GPU runs the CPU backend's kernels.
type Device struct{ d *simDevice }

type simDevice struct {
	object
	maxBufferLength      uint64
	maxThreadgroupMemory int                // maxThreadgroupMemoryLength, bytes (SetMaxThreadgroupMemoryLength)
	kernels              *cpu.Device        // runs every dispatch (sim_queue.go)
	residency            residencyLog       // what the residency checks found (sim_residency.go)
	sets                 []*simResidencySet // the residency sets made and not deallocated
}

// CreateSystemDefaultDevice returns the simulated GPU, owned; nil when the
// simulator is switched off (as Metal returns nil on a machine without a GPU).
func CreateSystemDefaultDevice() Device {
	if !Enabled() {
		return Device{}
	}
	sim.mu.Lock()
	defer sim.mu.Unlock()
	d := &simDevice{object: newObject("MTLDevice"), maxBufferLength: simMaxBufferLength,
		maxThreadgroupMemory: kernels.MetalThreadgroupLimit, kernels: cpu.New(runtime.NumCPU())}
	track(&d.object)
	return Device{d}
}

// lock takes the simulator's mutex and checks the device is alive; callers
// defer sim.mu.Unlock.
func (d Device) lock(op string) *simDevice {
	sim.mu.Lock()
	d.d.use("MTLDevice " + op)
	return d.d
}

// Name says it is the simulator.
func (d Device) Name() string { return "Metal simulator (CPU kernels)" }

// MaxBufferLength is the largest buffer in bytes.
func (d Device) MaxBufferLength() uint64 {
	defer sim.mu.Unlock()
	return d.lock("maxBufferLength").maxBufferLength
}

// SetMaxBufferLength lowers (or raises) the largest buffer the simulated
// device makes, so tests can exercise the splitting of large regions.
// Simulator only.
func (d Device) SetMaxBufferLength(n uint64) {
	defer sim.mu.Unlock()
	d.lock("setMaxBufferLength").maxBufferLength = n
}

// SetMaxThreadgroupMemoryLength changes the threadgroup memory a pipeline
// may use (32 KiB, Apple GPUs' maxThreadgroupMemoryLength), so tests can
// make a real kernel exceed it. Simulator only.
func (d Device) SetMaxThreadgroupMemoryLength(n int) {
	defer sim.mu.Unlock()
	d.lock("setMaxThreadgroupMemoryLength").maxThreadgroupMemory = n
}

// RecommendedMaxWorkingSetSize is a fixed stand-in figure (16 GiB).
func (d Device) RecommendedMaxWorkingSetSize() uint64 {
	defer sim.mu.Unlock()
	d.lock("recommendedMaxWorkingSetSize")
	return simWorkingSet
}

// NewBufferWithLength makes n zero bytes of Go memory; owned. nil, as on
// Metal, for a length of 0 or over maxBufferLength. Only shared storage is
// simulated. (Metal's memory is page-aligned, this is 8-byte aligned.)
func (d Device) NewBufferWithLength(n int, options uint64) Buffer {
	defer sim.mu.Unlock()
	dev := d.lock("newBufferWithLength")
	checkShared(options)
	if n <= 0 || uint64(n) > dev.maxBufferLength {
		return Buffer{}
	}
	words := make([]uint64, (n+7)/8)
	return newSimBuffer(unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n), true)
}

// NewBufferWithBytesNoCopy wraps n bytes at p without copying; owned. nil, as
// on Metal, unless p is page-aligned (16 KiB), n a positive whole number of
// pages and at most maxBufferLength.
func (d Device) NewBufferWithBytesNoCopy(p unsafe.Pointer, n int, options uint64) Buffer {
	defer sim.mu.Unlock()
	dev := d.lock("newBufferWithBytesNoCopy")
	checkShared(options)
	if p == nil || uintptr(p)%simPageSize != 0 || n <= 0 || n%simPageSize != 0 || uint64(n) > dev.maxBufferLength {
		return Buffer{}
	}
	return newSimBuffer(unsafe.Slice((*byte)(p), n), false)
}

func checkShared(options uint64) {
	if options != ResourceStorageModeShared {
		panic(fmt.Sprintf("metal simulator: resource options %#x: only shared storage is simulated", options))
	}
}

// kernelDecl finds the kernels a library source declares.
var kernelDecl = regexp.MustCompile(`(?m)^KERNEL\((\w+),`)

// NewLibraryWithSource does not compile MSL: the library is the set of
// kernels the source declares with KERNEL(name, ...), each of which runs as
// the CPU backend's function of that name. It fails, with a
// MTLLibraryErrorDomain error as Metal's compiler would, when the source uses
// bfloat under MSL older than 3.1 or declares no kernel. Owned.
func (d Device) NewLibraryWithSource(src string, opts CompileOptions) (Library, error) {
	defer sim.mu.Unlock()
	d.lock("newLibraryWithSource")
	opts.o.use("MTLCompileOptions")
	fail := func(desc string) (Library, error) {
		return Library{}, &NSError{Op: "compiling the kernel library", Domain: "MTLLibraryErrorDomain", Code: 3, Description: desc}
	}
	if v := opts.o.version; v < simBfloatLanguageVersion && strings.Contains(src, "bfloat") {
		return fail(fmt.Sprintf("metal simulator: the source uses bfloat, which needs MSL 3.1; the options ask for %d.%d", v>>16, v&0xffff))
	}
	l := &simLibrary{object: newObject("MTLLibrary")}
	for _, m := range kernelDecl.FindAllStringSubmatch(src, -1) {
		l.kernels = append(l.kernels, m[1])
	}
	if len(l.kernels) == 0 {
		return fail("metal simulator: no KERNEL(name, ...) declaration in the source (the simulator runs the CPU kernels of the declared names; it does not compile MSL)")
	}
	track(&l.object)
	return Library{l}, nil
}

// NewComputePipelineStateWithFunction makes the pipeline of f's kernel; owned.
// Like Metal, whose GPU compiler lays out a kernel's threadgroup arrays when it
// builds the pipeline, it fails when the kernel's static threadgroup memory
// (kernels.MetalThreadgroupBytes: its TG_MEM arrays as Metal compiles them)
// exceeds the device's maxThreadgroupMemoryLength. Metal reports that from
// pipeline creation with an error in the GPU driver's domain, not at dispatch.
func (d Device) NewComputePipelineStateWithFunction(f Function) (ComputePipelineState, error) {
	defer sim.mu.Unlock()
	dev := d.lock("newComputePipelineStateWithFunction")
	f.f.use("MTLFunction")
	if n := kernels.MetalThreadgroupBytes(f.f.kernel); n > dev.maxThreadgroupMemory {
		return ComputePipelineState{}, &NSError{Op: "creating the compute pipeline", Domain: "AGXMetal", Code: 3,
			Description: fmt.Sprintf("metal simulator: %s: threadgroup memory size (%d) exceeds the maximum threadgroup memory allowed (%d)",
				f.f.kernel, n, dev.maxThreadgroupMemory)}
	}
	p := &simPipeline{object: newObject("MTLComputePipelineState"), kernel: f.f.kernel, maxThreads: simMaxThreads}
	track(&p.object)
	return ComputePipelineState{p}, nil
}

// SupportsResidencySets is true: the simulator has residency sets.
func (d Device) SupportsResidencySets() bool { return true }

// NewResidencySetWithDescriptor makes an empty residency set; owned
// (sim_residency.go).
func (d Device) NewResidencySetWithDescriptor(initialCapacity int) (ResidencySet, error) {
	defer sim.mu.Unlock()
	d.lock("newResidencySetWithDescriptor")
	return newSimResidencySet(d.d), nil
}

// Release gives up ownership.
func (d Device) Release() {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	d.d.release()
}

// IsNil reports whether d is no device.
func (d Device) IsNil() bool { return d.d == nil }

// CompileOptions is a simulated MTLCompileOptions: only the language version.
type CompileOptions struct{ o *simCompileOptions }

type simCompileOptions struct {
	object
	version uint64
}

// NewCompileOptions starts at MSL 2.4; owned.
func NewCompileOptions() CompileOptions {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	o := &simCompileOptions{object: newObject("MTLCompileOptions"), version: simDefaultLanguageVersion}
	track(&o.object)
	return CompileOptions{o}
}

// SetLanguageVersion sets the MSL version (MTLLanguageVersion).
func (o CompileOptions) SetLanguageVersion(v uint64) {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	o.o.use("setLanguageVersion")
	o.o.version = v
}

// LanguageVersion reads the MSL version back.
func (o CompileOptions) LanguageVersion() uint64 {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	o.o.use("languageVersion")
	return o.o.version
}

// Release gives up ownership.
func (o CompileOptions) Release() { releaseLocked(&o.o.object) }

// releaseLocked drops a reference of an object that holds nothing to free.
func releaseLocked(o *object) {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	o.release()
}

// Library is a simulated MTLLibrary: the kernel names its source declared.
type Library struct{ l *simLibrary }

type simLibrary struct {
	object
	kernels []string
}

// NewFunctionWithName returns the kernel's function, owned; nil when the
// source did not declare it or the CPU backend has no kernel of that name
// (the simulator could not run it).
func (l Library) NewFunctionWithName(name string) Function {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	l.l.use("newFunctionWithName")
	if !slices.Contains(l.l.kernels, name) || !slices.Contains(cpu.Kernels(), name) {
		return Function{}
	}
	f := &simFunction{object: newObject("MTLFunction"), kernel: name}
	track(&f.object)
	return Function{f}
}

// Release gives up ownership.
func (l Library) Release() { releaseLocked(&l.l.object) }

// Function is a simulated MTLFunction: one kernel name.
type Function struct{ f *simFunction }

type simFunction struct {
	object
	kernel string
}

// Release gives up ownership.
func (f Function) Release() { releaseLocked(&f.f.object) }

// IsNil reports whether f is no function.
func (f Function) IsNil() bool { return f.f == nil }

// ComputePipelineState is a simulated MTLComputePipelineState.
type ComputePipelineState struct{ p *simPipeline }

type simPipeline struct {
	object
	kernel     string
	maxThreads int
}

// MaxTotalThreadsPerThreadgroup is 1024, Apple silicon's most. (A real
// pipeline may allow fewer, depending on its registers; see
// SetMaxTotalThreadsPerThreadgroup.)
func (p ComputePipelineState) MaxTotalThreadsPerThreadgroup() int {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	p.p.use("maxTotalThreadsPerThreadgroup")
	return p.p.maxThreads
}

// SetMaxTotalThreadsPerThreadgroup lowers the pipeline's threadgroup limit,
// as register pressure does on a real GPU. Simulator only.
func (p ComputePipelineState) SetMaxTotalThreadsPerThreadgroup(n int) {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	p.p.use("setMaxTotalThreadsPerThreadgroup")
	p.p.maxThreads = n
}

// Release gives up ownership.
func (p ComputePipelineState) Release() { releaseLocked(&p.p.object) }

// Buffer is a simulated MTLBuffer: bytes the CPU and the simulated GPU share.
type Buffer struct{ b *simBuffer }

type simBuffer struct {
	object
	mem   []byte
	owned bool // allocated by the simulator (not the caller's memory)
}

// newSimBuffer makes an owned buffer over mem; callers hold sim.mu.
func newSimBuffer(mem []byte, owned bool) Buffer {
	b := &simBuffer{object: newObject("MTLBuffer"), mem: mem, owned: owned}
	track(&b.object)
	return Buffer{b}
}

// IsNil reports whether b is no buffer.
func (b Buffer) IsNil() bool { return b.b == nil }

// Contents is the buffer's first byte.
func (b Buffer) Contents() unsafe.Pointer {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	b.b.use("contents")
	return unsafe.Pointer(&b.b.mem[0])
}

// Length is the buffer's size in bytes.
func (b Buffer) Length() int {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	b.b.use("length")
	return len(b.b.mem)
}

// Release gives up ownership. When the last reference goes, memory the
// simulator allocated is filled with 0xFF (NaN in bf16 and f32), so a host
// view kept past the release reads garbage at once rather than stale values.
func (b Buffer) Release() { b.b.releaseRef() }

func (b *simBuffer) releaseRef() {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	if b.release() && b.owned {
		for i := range b.mem {
			b.mem[i] = 0xFF
		}
	}
}
