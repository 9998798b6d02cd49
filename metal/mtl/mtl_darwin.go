//go:build !metalsim

package mtl

import (
	"unsafe"

	"github.com/ebitengine/purego/objc"
)

// The thin binding: one Go type per Metal object, each one objc.ID, methods
// named after their selectors. Ownership is stated per method: "owned" results
// (new*, alloc, copy) must be Released; "autoreleased" results live until the
// enclosing pool drains and must be Retained to be kept.

// Device is an MTLDevice. https://developer.apple.com/documentation/metal/mtldevice
type Device struct{ id objc.ID }

// CreateSystemDefaultDevice calls MTLCreateSystemDefaultDevice; owned, or 0
// when the machine has no Metal GPU.
func CreateSystemDefaultDevice() Device { return Device{mtlCreateSystemDefaultDevice()} }

// Name is the GPU's name ("Apple M3 Max").
func (d Device) Name() string { return goString(d.id.Send(sel("name"))) }

// MaxBufferLength is the largest MTLBuffer in bytes.
func (d Device) MaxBufferLength() uint64 { return objc.Send[uint64](d.id, sel("maxBufferLength")) }

// RecommendedMaxWorkingSetSize is the GPU memory budget in bytes.
func (d Device) RecommendedMaxWorkingSetSize() uint64 {
	return objc.Send[uint64](d.id, sel("recommendedMaxWorkingSetSize"))
}

// NewCommandQueueWithMaxCommandBufferCount: owned.
func (d Device) NewCommandQueueWithMaxCommandBufferCount(n int) CommandQueue {
	return CommandQueue{d.id.Send(sel("newCommandQueueWithMaxCommandBufferCount:"), uint64(n))}
}

// NewBufferWithLength:options: owned; 0 when out of memory.
func (d Device) NewBufferWithLength(n int, options uint64) Buffer {
	return Buffer{d.id.Send(sel("newBufferWithLength:options:"), uint64(n), options)}
}

// NewBufferWithBytesNoCopy:length:options:deallocator: wraps n bytes at p
// (page-aligned, n a whole number of pages) without copying; owned. No
// deallocator: the caller keeps the memory alive until the buffer is released.
func (d Device) NewBufferWithBytesNoCopy(p unsafe.Pointer, n int, options uint64) Buffer {
	return Buffer{d.id.Send(sel("newBufferWithBytesNoCopy:length:options:deallocator:"), p, uint64(n), options, uintptr(0))}
}

// NewLibraryWithSource:options:error: compiles MSL source; owned. On failure the
// error carries the compiler log.
func (d Device) NewLibraryWithSource(src string, opts CompileOptions) (Library, error) {
	var errID objc.ID
	lib := d.id.Send(sel("newLibraryWithSource:options:error:"), nsString(src), opts.id, unsafe.Pointer(&errID))
	if lib == 0 {
		if err := nsError("compiling the kernel library", errID); err != nil {
			return Library{}, err
		}
		return Library{}, &NSError{Op: "compiling the kernel library", Description: "no library and no error"}
	}
	return Library{lib}, nil
}

// NewComputePipelineStateWithFunction:error: owned.
func (d Device) NewComputePipelineStateWithFunction(f Function) (ComputePipelineState, error) {
	var errID objc.ID
	p := d.id.Send(sel("newComputePipelineStateWithFunction:error:"), f.id, unsafe.Pointer(&errID))
	if p == 0 {
		return ComputePipelineState{}, nsError("creating a compute pipeline", errID)
	}
	return ComputePipelineState{p}, nil
}

// SupportsResidencySets reports whether the device responds to
// newResidencySetWithDescriptor:error: (macOS 15 and later).
func (d Device) SupportsResidencySets() bool {
	return respondsTo(d.id, "newResidencySetWithDescriptor:error:")
}

// NewResidencySetWithDescriptor:error: owned.
func (d Device) NewResidencySetWithDescriptor(initialCapacity int) (ResidencySet, error) {
	desc := class("MTLResidencySetDescriptor").Send(sel("alloc")).Send(sel("init")) // owned
	defer release(desc)
	desc.Send(sel("setInitialCapacity:"), uint64(initialCapacity))
	var errID objc.ID
	s := d.id.Send(sel("newResidencySetWithDescriptor:error:"), desc, unsafe.Pointer(&errID))
	if s == 0 {
		return ResidencySet{}, nsError("creating the residency set", errID)
	}
	return ResidencySet{s}, nil
}

// Release gives up ownership.
func (d Device) Release() { release(d.id) }

// IsNil reports whether d is no device (MTLCreateSystemDefaultDevice found none).
func (d Device) IsNil() bool { return d.id == 0 }

// CompileOptions is an MTLCompileOptions.
type CompileOptions struct{ id objc.ID }

// NewCompileOptions is [[MTLCompileOptions alloc] init]; owned.
func NewCompileOptions() CompileOptions {
	return CompileOptions{class("MTLCompileOptions").Send(sel("alloc")).Send(sel("init"))}
}

// SetLanguageVersion sets the MSL version (MTLLanguageVersion).
func (o CompileOptions) SetLanguageVersion(v uint64) { o.id.Send(sel("setLanguageVersion:"), v) }

// LanguageVersion reads the MSL version back.
func (o CompileOptions) LanguageVersion() uint64 {
	return objc.Send[uint64](o.id, sel("languageVersion"))
}

// Release gives up ownership.
func (o CompileOptions) Release() { release(o.id) }

// Library is an MTLLibrary.
type Library struct{ id objc.ID }

// NewFunctionWithName: owned; 0 when the library has no such function.
func (l Library) NewFunctionWithName(name string) Function {
	return Function{l.id.Send(sel("newFunctionWithName:"), nsString(name))}
}

// Release gives up ownership.
func (l Library) Release() { release(l.id) }

// Function is an MTLFunction.
type Function struct{ id objc.ID }

// Release gives up ownership.
func (f Function) Release() { release(f.id) }

// IsNil reports whether f is no function (the library has none of that name).
func (f Function) IsNil() bool { return f.id == 0 }

// ComputePipelineState is an MTLComputePipelineState.
type ComputePipelineState struct{ id objc.ID }

// MaxTotalThreadsPerThreadgroup is the largest threadgroup this pipeline runs.
func (p ComputePipelineState) MaxTotalThreadsPerThreadgroup() int {
	return int(objc.Send[uint64](p.id, sel("maxTotalThreadsPerThreadgroup")))
}

// Release gives up ownership.
func (p ComputePipelineState) Release() { release(p.id) }

// Buffer is an MTLBuffer.
type Buffer struct{ id objc.ID }

// IsNil reports whether b is no buffer (a failed allocation).
func (b Buffer) IsNil() bool { return b.id == 0 }

// Contents is the CPU address of the buffer (shared storage).
func (b Buffer) Contents() unsafe.Pointer { return objc.Send[unsafe.Pointer](b.id, sel("contents")) }

// Length is the buffer's size in bytes.
func (b Buffer) Length() int { return int(objc.Send[uint64](b.id, sel("length"))) }

// Release gives up ownership.
func (b Buffer) Release() { release(b.id) }

// CommandQueue is an MTLCommandQueue.
type CommandQueue struct{ id objc.ID }

// CommandBuffer returns a new command buffer; autoreleased. It retains the
// buffers it uses until it completes.
func (q CommandQueue) CommandBuffer() CommandBuffer {
	return CommandBuffer{q.id.Send(sel("commandBuffer"))}
}

// AddResidencySet makes every command buffer of the queue use the set (macOS 15+).
func (q CommandQueue) AddResidencySet(s ResidencySet) { q.id.Send(sel("addResidencySet:"), s.id) }

// Release gives up ownership.
func (q CommandQueue) Release() { release(q.id) }

// CommandBuffer is an MTLCommandBuffer.
type CommandBuffer struct{ id objc.ID }

// IsNil reports whether c is no command buffer.
func (c CommandBuffer) IsNil() bool { return c.id == 0 }

// ComputeCommandEncoder returns a new compute encoder; autoreleased.
func (c CommandBuffer) ComputeCommandEncoder() ComputeCommandEncoder {
	return ComputeCommandEncoder{c.id.Send(sel("computeCommandEncoder"))}
}

// Commit sends the command buffer to the GPU.
func (c CommandBuffer) Commit() { c.id.Send(sel("commit")) }

// WaitUntilCompleted blocks until the GPU finished (or failed) the buffer.
func (c CommandBuffer) WaitUntilCompleted() { c.id.Send(sel("waitUntilCompleted")) }

// Status is the MTLCommandBufferStatus.
func (c CommandBuffer) Status() uint64 { return objc.Send[uint64](c.id, sel("status")) }

// Error is the failure of a buffer whose status is error, as a Go error.
func (c CommandBuffer) Error() error { return nsError("command buffer", c.id.Send(sel("error"))) }

// GPUStartTime and GPUEndTime are when the GPU started and finished the buffer,
// in seconds of the host's mach absolute time.
func (c CommandBuffer) GPUStartTime() float64 { return objc.Send[float64](c.id, sel("GPUStartTime")) }

// GPUEndTime: see GPUStartTime.
func (c CommandBuffer) GPUEndTime() float64 { return objc.Send[float64](c.id, sel("GPUEndTime")) }

// Retain takes ownership of an autoreleased command buffer.
func (c CommandBuffer) Retain() CommandBuffer { return CommandBuffer{retain(c.id)} }

// Release gives up ownership.
func (c CommandBuffer) Release() { release(c.id) }

// ComputeCommandEncoder is an MTLComputeCommandEncoder.
type ComputeCommandEncoder struct{ id objc.ID }

// SetComputePipelineState: the kernel of the next dispatches.
func (e ComputeCommandEncoder) SetComputePipelineState(p ComputePipelineState) {
	e.id.Send(sel("setComputePipelineState:"), p.id)
}

// SetBuffer binds b at byte offset off to [[buffer(index)]].
func (e ComputeCommandEncoder) SetBuffer(b Buffer, off, index int) {
	e.id.Send(sel("setBuffer:offset:atIndex:"), b.id, uint64(off), uint64(index))
}

// SetBytes copies n bytes at p into the encoder for [[buffer(index)]] (scalars).
func (e ComputeCommandEncoder) SetBytes(p unsafe.Pointer, n, index int) {
	e.id.Send(sel("setBytes:length:atIndex:"), p, uint64(n), uint64(index))
}

// DispatchThreadgroups launches grid threadgroups of group threads.
func (e ComputeCommandEncoder) DispatchThreadgroups(grid, group Size) {
	e.id.Send(sel("dispatchThreadgroups:threadsPerThreadgroup:"), grid, group)
}

// EndEncoding closes the encoder; the command buffer may then be committed.
func (e ComputeCommandEncoder) EndEncoding() { e.id.Send(sel("endEncoding")) }

// Retain takes ownership of an autoreleased encoder.
func (e ComputeCommandEncoder) Retain() ComputeCommandEncoder {
	return ComputeCommandEncoder{retain(e.id)}
}

// Release gives up ownership.
func (e ComputeCommandEncoder) Release() { release(e.id) }

// ResidencySet is an MTLResidencySet (macOS 15+): allocations the GPU keeps
// resident for every command buffer of the queues it is added to.
type ResidencySet struct{ id objc.ID }

// AddAllocation adds a buffer; takes effect at the next Commit.
func (s ResidencySet) AddAllocation(b Buffer) { s.id.Send(sel("addAllocation:"), b.id) }

// RemoveAllocation removes a buffer; takes effect at the next Commit.
func (s ResidencySet) RemoveAllocation(b Buffer) { s.id.Send(sel("removeAllocation:"), b.id) }

// Commit applies the added and removed allocations.
func (s ResidencySet) Commit() { s.id.Send(sel("commit")) }

// RequestResidency asks the GPU to make the set resident now.
func (s ResidencySet) RequestResidency() { s.id.Send(sel("requestResidency")) }

// Release gives up ownership.
func (s ResidencySet) Release() { release(s.id) }

// IsNil reports whether s is no set.
func (s ResidencySet) IsNil() bool { return s.id == 0 }
