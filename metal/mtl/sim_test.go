//go:build !darwin || metalsim

package mtl

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"unsafe"
)

// Each rule the simulator enforces is broken on purpose here, and the test
// checks the simulator catches it the way the brief of each rule says: a
// panic where Metal asserts or the behaviour is undefined, nil or an NSError
// where Metal returns one.

// simDevice opens the simulator and checks at the end that the test left no
// object alive.
func openSim(t *testing.T) Device {
	t.Helper()
	t.Setenv(SimulatorEnv, "1")
	if err := Load(); err != nil {
		t.Fatal(err)
	}
	before := LiveObjects()
	dev := CreateSystemDefaultDevice()
	if dev.IsNil() {
		t.Fatal("no simulated device")
	}
	t.Cleanup(func() {
		dev.Release()
		if after := LiveObjects(); after != before {
			t.Errorf("live objects %q after the test, %q before: a reference was not released", after, before)
		}
	})
	return dev
}

// mustPanic runs f and fails unless it panics with a message containing want.
func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("no panic, want one containing %q", want)
			return
		}
		if msg, _ := r.(string); !strings.Contains(msg, want) {
			t.Errorf("panic %v, want one containing %q", r, want)
		}
	}()
	f()
}

// addPipeline compiles a one-kernel source and returns add_bf16's pipeline.
func addPipeline(t *testing.T, dev Device) ComputePipelineState {
	t.Helper()
	opts := NewCompileOptions()
	defer opts.Release()
	lib, err := dev.NewLibraryWithSource("KERNEL(add_bf16, BUFFER(const bf16_t, a, 0), ...)", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Release()
	fn := lib.NewFunctionWithName("add_bf16")
	if fn.IsNil() {
		t.Fatal("add_bf16 not in the library")
	}
	defer fn.Release()
	p, err := dev.NewComputePipelineStateWithFunction(fn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Release)
	return p
}

// bf16 buffer of n copies of the bf16 value bits.
func bf16Buffer(t *testing.T, dev Device, n int, bits uint16) Buffer {
	t.Helper()
	b := dev.NewBufferWithLength(2*n, ResourceStorageModeShared)
	mem := unsafe.Slice((*byte)(b.Contents()), 2*n)
	for i := range n {
		binary.LittleEndian.PutUint16(mem[2*i:], bits)
	}
	return b
}

// encodeAdd records out = a + b over n elements (add_bf16) into a new command
// buffer, retained, with its encoder ended.
func encodeAdd(dev Device, q CommandQueue, p ComputePipelineState, a, b, out Buffer, n int) CommandBuffer {
	var cb CommandBuffer
	WithPool(func() {
		cb = q.CommandBuffer().Retain()
		enc := cb.ComputeCommandEncoder()
		enc.SetComputePipelineState(p)
		enc.SetBuffer(a, 0, 0)
		enc.SetBuffer(b, 0, 1)
		enc.SetBuffer(out, 0, 2)
		v := int32(n)
		enc.SetBytes(unsafe.Pointer(&v), 4, 3)
		enc.DispatchThreadgroups(Size{Width: 1, Height: 1, Depth: 1}, Size{Width: 256, Height: 1, Depth: 1})
		enc.EndEncoding()
	})
	return cb
}

// TestSimRunsKernel: a dispatch runs the CPU kernel over the buffers, the
// command buffer completes with GPU times, and every reference is returned.
func TestSimRunsKernel(t *testing.T) {
	dev := openSim(t)
	p := addPipeline(t, dev)
	q := dev.NewCommandQueueWithMaxCommandBufferCount(4)
	defer q.Release()
	const n = 1000
	a, b, out := bf16Buffer(t, dev, n, 0x3f80), bf16Buffer(t, dev, n, 0x4000), bf16Buffer(t, dev, n, 0) // 1, 2
	defer a.Release()
	defer b.Release()
	defer out.Release()
	cb := encodeAdd(dev, q, p, a, b, out, n)
	defer cb.Release()
	cb.Commit()
	cb.WaitUntilCompleted()
	if st := cb.Status(); st != StatusCompleted || cb.Error() != nil {
		t.Fatalf("status %s, error %v", CommandBufferStatus(st), cb.Error())
	}
	if s, e := cb.GPUStartTime(), cb.GPUEndTime(); s <= 0 || e < s {
		t.Errorf("GPU times %v..%v", s, e)
	}
	mem := unsafe.Slice((*byte)(out.Contents()), 2*n)
	for i := range n {
		if v := binary.LittleEndian.Uint16(mem[2*i:]); v != 0x4040 { // 3
			t.Fatalf("out[%d] = %#x, want 0x4040 (bf16 3)", i, v)
		}
	}
}

// TestSimKernelFailureIsCommandBufferError: a kernel whose arguments run past
// its buffers fails the command buffer with an NSError, as a GPU fault does.
func TestSimKernelFailureIsCommandBufferError(t *testing.T) {
	dev := openSim(t)
	p := addPipeline(t, dev)
	q := dev.NewCommandQueueWithMaxCommandBufferCount(4)
	defer q.Release()
	a, b, out := bf16Buffer(t, dev, 10, 0), bf16Buffer(t, dev, 10, 0), bf16Buffer(t, dev, 10, 0)
	defer a.Release()
	defer b.Release()
	defer out.Release()
	cb := encodeAdd(dev, q, p, a, b, out, 1000) // 1000 elements of 10-element buffers
	defer cb.Release()
	cb.Commit()
	cb.WaitUntilCompleted()
	var nsErr *NSError
	if cb.Status() != StatusError || !errors.As(cb.Error(), &nsErr) || nsErr.Domain != "MTLCommandBufferErrorDomain" {
		t.Fatalf("status %s, error %v: want error status and an MTLCommandBufferErrorDomain error", CommandBufferStatus(cb.Status()), cb.Error())
	}
	if !strings.Contains(nsErr.Error(), "add_bf16") {
		t.Errorf("error %v does not name the kernel", nsErr)
	}
}

// TestSimEncoderRules breaks each rule of the argument table and of dispatch.
func TestSimEncoderRules(t *testing.T) {
	dev := openSim(t)
	p := addPipeline(t, dev)
	q := dev.NewCommandQueueWithMaxCommandBufferCount(4)
	defer q.Release()
	buf := dev.NewBufferWithLength(64, ResourceStorageModeShared)
	defer buf.Release()
	var v int32
	big := make([]byte, 4097)
	group := func(x uint64) Size { return Size{Width: x, Height: 1, Depth: 1} }
	for _, c := range []struct {
		name, want string
		record     func(enc ComputeCommandEncoder)
	}{
		{"buffer index 31", "index 31, want 0..30", func(e ComputeCommandEncoder) { e.SetBuffer(buf, 0, 31) }},
		{"setBytes index 31", "index 31, want 0..30", func(e ComputeCommandEncoder) { e.SetBytes(unsafe.Pointer(&v), 4, 31) }},
		{"setBytes over 4 KB", "setBytes of 4097 bytes", func(e ComputeCommandEncoder) { e.SetBytes(unsafe.Pointer(&big[0]), len(big), 0) }},
		{"offset past the end", "offset 65 outside", func(e ComputeCommandEncoder) { e.SetBuffer(buf, 65, 0) }},
		{"no pipeline", "without a compute pipeline", func(e ComputeCommandEncoder) { e.DispatchThreadgroups(group(1), group(32)) }},
		{"1025 threads", "1025 threads", func(e ComputeCommandEncoder) {
			e.SetComputePipelineState(p)
			e.DispatchThreadgroups(group(1), group(1025))
		}},
		{"no threads", "0 threads", func(e ComputeCommandEncoder) {
			e.SetComputePipelineState(p)
			e.DispatchThreadgroups(group(1), group(0))
		}},
		{"unbound buffer", "holds no buffer", func(e ComputeCommandEncoder) {
			e.SetComputePipelineState(p)
			e.SetBuffer(buf, 0, 0)
			e.DispatchThreadgroups(group(1), group(32))
		}},
		{"scalar not set", "holds 0 bytes of setBytes", func(e ComputeCommandEncoder) {
			e.SetComputePipelineState(p)
			for i := range 3 {
				e.SetBuffer(buf, 0, i)
			}
			e.DispatchThreadgroups(group(1), group(32))
		}},
		{"encoding after endEncoding", "setBuffer after endEncoding", func(e ComputeCommandEncoder) {
			e.EndEncoding()
			e.SetBuffer(buf, 0, 0)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			WithPool(func() {
				cb := q.CommandBuffer()
				enc := cb.ComputeCommandEncoder()
				mustPanic(t, c.want, func() { c.record(enc) })
			})
		})
	}
}

// TestSimPipelineThreadLimit: a pipeline that runs fewer threads (register
// pressure on a real GPU) refuses a threadgroup within 1024 but over its limit.
func TestSimPipelineThreadLimit(t *testing.T) {
	dev := openSim(t)
	p := addPipeline(t, dev)
	p.SetMaxTotalThreadsPerThreadgroup(512)
	q := dev.NewCommandQueueWithMaxCommandBufferCount(1)
	defer q.Release()
	WithPool(func() {
		enc := q.CommandBuffer().ComputeCommandEncoder()
		enc.SetComputePipelineState(p)
		mustPanic(t, "runs 1..512", func() {
			enc.DispatchThreadgroups(Size{Width: 1, Height: 1, Depth: 1}, Size{Width: 1024, Height: 1, Depth: 1})
		})
	})
}

// TestSimCommandBufferRules: commit twice, commit with an open encoder, an
// encoder after commit, waiting on a buffer never committed, a second open
// encoder, and a queue whose every command buffer is uncommitted.
func TestSimCommandBufferRules(t *testing.T) {
	dev := openSim(t)
	q := dev.NewCommandQueueWithMaxCommandBufferCount(2)
	defer q.Release()
	WithPool(func() {
		cb := q.CommandBuffer()
		enc := cb.ComputeCommandEncoder()
		mustPanic(t, "another encoder", func() { cb.ComputeCommandEncoder() })
		mustPanic(t, "encoder not ended", cb.Commit)
		mustPanic(t, "never committed", cb.WaitUntilCompleted)
		enc.EndEncoding()
		cb.Commit()
		mustPanic(t, "already committed", cb.Commit)
		mustPanic(t, "on a committed command buffer", func() { cb.ComputeCommandEncoder() })
		cb.WaitUntilCompleted()
		if cb.Status() != StatusCompleted {
			t.Errorf("empty command buffer: status %s", CommandBufferStatus(cb.Status()))
		}
	})
	WithPool(func() {
		q.CommandBuffer()
		q.CommandBuffer()
		mustPanic(t, "would block forever", func() { q.CommandBuffer() })
	})
}

// TestSimBufferRules: no-copy buffers need a page-aligned pointer and whole
// pages; no buffer may exceed maxBufferLength (settable); a released buffer
// cannot be used or released again; simulator memory is poisoned on release.
func TestSimBufferRules(t *testing.T) {
	dev := openSim(t)
	mem := make([]byte, 4*simPageSize)
	skip := (simPageSize - int(uintptr(unsafe.Pointer(&mem[0])))%simPageSize) % simPageSize
	aligned := unsafe.Pointer(&mem[skip])
	if b := dev.NewBufferWithBytesNoCopy(aligned, 2*simPageSize, ResourceStorageModeShared); b.IsNil() {
		t.Error("an aligned whole-page region was refused")
	} else {
		if b.Contents() != aligned || b.Length() != 2*simPageSize {
			t.Error("the no-copy buffer is not the caller's memory")
		}
		b.Release()
	}
	for _, c := range []struct {
		name string
		p    unsafe.Pointer
		n    int
	}{
		{"unaligned pointer", unsafe.Add(aligned, 4096), simPageSize},
		{"ragged length", aligned, simPageSize + 100},
		{"empty", aligned, 0},
	} {
		if b := dev.NewBufferWithBytesNoCopy(c.p, c.n, ResourceStorageModeShared); !b.IsNil() {
			b.Release()
			t.Errorf("%s: newBufferWithBytesNoCopy accepted it", c.name)
		}
	}
	dev.SetMaxBufferLength(simPageSize)
	if b := dev.NewBufferWithBytesNoCopy(aligned, 2*simPageSize, ResourceStorageModeShared); !b.IsNil() {
		b.Release()
		t.Error("a no-copy buffer over maxBufferLength was made")
	}
	if b := dev.NewBufferWithLength(simPageSize+1, ResourceStorageModeShared); !b.IsNil() {
		b.Release()
		t.Error("a buffer over maxBufferLength was made")
	}

	b := dev.NewBufferWithLength(16, ResourceStorageModeShared)
	view := unsafe.Slice((*byte)(b.Contents()), 16)
	b.Release()
	if view[0] != 0xFF || view[15] != 0xFF {
		t.Error("released simulator memory is not poisoned")
	}
	mustPanic(t, "contents on a released MTLBuffer", func() { b.Contents() })
	mustPanic(t, "over-release", b.Release)
}

// TestSimLiveObjects: an object not released shows in LiveObjects; an
// autoreleased one needs a pool.
func TestSimLiveObjects(t *testing.T) {
	t.Setenv(SimulatorEnv, "1")
	before := LiveObjects()
	dev := CreateSystemDefaultDevice()
	b := dev.NewBufferWithLength(16, ResourceStorageModeShared)
	if got := LiveObjects(); !strings.Contains(got, "MTLBuffer 1") || !strings.Contains(got, "MTLDevice 1") {
		t.Errorf("live objects %q with a device and a buffer", got)
	}
	b.Release()
	q := dev.NewCommandQueueWithMaxCommandBufferCount(1)
	mustPanic(t, "no pool in place", func() { q.CommandBuffer() })
	q.Release()
	dev.Release()
	if after := LiveObjects(); after != before {
		t.Errorf("live objects %q after releasing everything, %q before", after, before)
	}
}

// TestSimLibrary: bfloat under MSL 2.4 and a source without kernels fail to
// "compile" with MTLLibraryErrorDomain errors; unknown names have no function.
func TestSimLibrary(t *testing.T) {
	dev := openSim(t)
	opts := NewCompileOptions()
	defer opts.Release()
	if _, err := dev.NewLibraryWithSource("KERNEL(add_bf16, ...) bfloat x;", opts); err == nil || !strings.Contains(err.Error(), "MSL 3.1") {
		t.Errorf("bfloat under MSL 2.4: %v", err)
	}
	opts.SetLanguageVersion(3<<16 | 1)
	if _, err := dev.NewLibraryWithSource("kernel void f() {}", opts); err == nil || !strings.Contains(err.Error(), "MTLLibraryErrorDomain") {
		t.Errorf("no KERNEL declaration: %v", err)
	}
	lib, err := dev.NewLibraryWithSource("KERNEL(add_bf16, ...)\nKERNEL(not_a_cpu_kernel, ...)", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Release()
	for _, name := range []string{"not_a_cpu_kernel", "rms_norm_bf16"} {
		if f := lib.NewFunctionWithName(name); !f.IsNil() {
			f.Release()
			t.Errorf("%s: a function, want none", name)
		}
	}
}

// TestLoadNeedsSwitch: without BAGEL_METAL_SIM=1 there is no device.
func TestLoadNeedsSwitch(t *testing.T) {
	t.Setenv(SimulatorEnv, "")
	if Load() == nil || !CreateSystemDefaultDevice().IsNil() {
		t.Error("the simulator opened without BAGEL_METAL_SIM=1")
	}
}
