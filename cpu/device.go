// Package cpu is the reference backend: every kernel of kernels/README.md as a
// plain Go function of the same name, reading its arguments in the documented
// order, written to be checked by eye against the contract (llama2.c's run.c is
// the model: loops, shapes in comments, f32 accumulation).
//
// It is the oracle. The GPU kernels (cuda/, metal/) are tested by running them and
// this package on the same random inputs and comparing under a stated tolerance,
// and the whole model runs on it in tests, so the bf16 roundings that the contract
// spells out (`bf16(...)`) are reproduced exactly here, one line each. Everything
// else is "f32 math": inputs widened to f32, computed in f32, rounded once to bf16
// where stored. Transcendentals (exp, cos, rsqrt) are computed in float64 and
// rounded to f32, so they are as exact as an f32 result can be; GPU fast-math
// versions differ from them by a few f32 ulps. The Go compiler may fuse a*b+c into one FMA on
// arm64 (not on amd64 at the default GOAMD64=v1), so results can differ between
// those two by f32 ulps as well; neither is "more right" than the GPU.
//
// Mapping to the contract:
//   - registry.go: kernel name → Go function (the argument names, types and
//     order are the KERNEL declarations' in kernels/*.metal), and the argument
//     readers that check count, kind and bounds.
//   - quant.go: MLX affine dequantization, embed_dequant, qmatmul*, qmatmul_gather.
//   - quant_fused.go: qmatmul_multi, qmatmul_gather_swiglu, moe_down.
//   - norm.go: rms_norm, rms_norm_gated, add_rms_norm.
//   - attention.go: split_qgate, rope_neox, kv_append, attention.
//   - gdn.go: conv1d_silu, gdn_gates, gdn_recurrence.
//   - moe.go: router_topk, moe_combine.
//   - elementwise.go: sigmoid_mul, add, swiglu, add_sigmoid_scaled.
//   - sample.go: argmax, topk, repetition_penalty.
//
// Dispatch runs the kernel at once, so execution order is record order. Only the
// matmuls, attention and the GDN recurrence fan out over goroutines; the dispatch
// itself returns when the kernel is done.
package cpu

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"bagel/backend"
	"bagel/kernels"
)

// Device is the CPU backend. Its buffers are host memory.
type Device struct {
	threads int

	dispatches     atomic.Int64
	commandBuffers atomic.Int64
	hostSyncs      atomic.Int64
}

// New returns a CPU device whose kernels use up to threads goroutines
// (threads ≤ 0: one per CPU).
func New(threads int) *Device {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	return &Device{threads: threads}
}

var _ backend.Device = (*Device)(nil)

// buffer is a byte slice of host memory. Memory from Alloc is backed by []uint64,
// so every f32/u32/i32 view at an aligned offset is aligned. Memory from WrapHost
// is the caller's (an mmap'd file) and may start at any address: views of it can
// be unaligned, which amd64 and arm64 load and store without fault, and which
// Go's checkptr allows for pointer-free element types.
type buffer struct {
	data  []byte
	freed bool
}

func (b *buffer) Len() int { return len(b.data) }

// Name describes the device for stats.
func (d *Device) Name() string { return fmt.Sprintf("cpu (%d threads)", d.threads) }

// Threads is the number of goroutines a kernel may use.
func (d *Device) Threads() int { return d.threads }

// Alloc returns n zero bytes, 8-byte aligned.
func (d *Device) Alloc(n int) (backend.Buffer, error) {
	if n < 0 {
		return nil, fmt.Errorf("cpu: alloc of %d bytes", n)
	}
	words := make([]uint64, (n+7)/8)
	if n == 0 {
		return &buffer{data: []byte{}}, nil
	}
	return &buffer{data: unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n)}, nil
}

// WrapHost makes a buffer over data without copying; writes through the buffer
// are seen in data and the reverse. data may be unaligned (see buffer).
func (d *Device) WrapHost(data []byte) (backend.Buffer, error) {
	if data == nil {
		data = []byte{}
	}
	return &buffer{data: data}, nil
}

// Write copies src into b at byte offset off.
func (d *Device) Write(b backend.Buffer, off int, src []byte) error {
	buf, err := hostBytes(b, off, len(src))
	if err != nil {
		return fmt.Errorf("cpu: write: %w", err)
	}
	copy(buf, src)
	return nil
}

// Read copies len(dst) bytes of b at off into dst. Work is already done when
// Dispatch returns, but the read still counts as a host sync, as it would on a GPU.
func (d *Device) Read(b backend.Buffer, off int, dst []byte) error {
	buf, err := hostBytes(b, off, len(dst))
	if err != nil {
		return fmt.Errorf("cpu: read: %w", err)
	}
	d.hostSyncs.Add(1)
	copy(dst, buf)
	return nil
}

var _ backend.AsyncReader = (*Device)(nil)

var _ backend.AtDispatchRunner = (*Device)(nil)

// RunsAtDispatch is true: every dispatch has run when Dispatch returns.
func (d *Device) RunsAtDispatch() bool { return true }

// ReadAsync reads at once: the CPU backend's work is done by the time it is
// submitted. It lets the engine's tests run the decode pipeline here; the
// engine itself does not (RunsAtDispatch: a step launched ahead would run
// before the token it follows reached the reader).
func (d *Device) ReadAsync(b backend.Buffer, off, n int) (backend.PendingRead, error) {
	if n < 0 || n > backend.AsyncReadMax {
		return nil, fmt.Errorf("cpu: read of %d bytes: at most %d at a time", n, backend.AsyncReadMax)
	}
	dst := make([]byte, n)
	if err := d.Read(b, off, dst); err != nil {
		return nil, err
	}
	return doneRead(dst), nil
}

// doneRead is a read that has completed.
type doneRead []byte

func (r doneRead) Wait() ([]byte, error) { return r, nil }

// hostBytes is the n bytes of b at off, or an error when they are not all there.
func hostBytes(b backend.Buffer, off, n int) ([]byte, error) {
	buf, ok := b.(*buffer)
	switch {
	case !ok || buf == nil:
		return nil, fmt.Errorf("buffer %T is not a cpu buffer", b)
	case buf.freed:
		return nil, fmt.Errorf("buffer was freed")
	case off < 0 || n < 0 || off > len(buf.data) || n > len(buf.data)-off:
		return nil, fmt.Errorf("%d bytes at offset %d outside a buffer of %d", n, off, len(buf.data))
	}
	return buf.data[off : off+n], nil
}

// Encoder returns an encoder whose dispatches run immediately.
func (d *Device) Encoder() backend.Encoder { return &encoder{dev: d} }

// Counters returns the running totals.
func (d *Device) Counters() backend.Counters {
	return backend.Counters{
		Dispatches:     d.dispatches.Load(),
		CommandBuffers: d.commandBuffers.Load(),
		HostSyncs:      d.hostSyncs.Load(),
	}
}

// Free drops the buffer's memory (for WrapHost, the reference to the caller's
// bytes). Using it afterwards panics in Dispatch and errors in Read and Write.
func (d *Device) Free(b backend.Buffer) {
	if buf, ok := b.(*buffer); ok && buf != nil {
		buf.data, buf.freed = nil, true
	}
}

// Close releases nothing: buffers are garbage collected.
func (d *Device) Close() error { return nil }

type encoder struct{ dev *Device }

// Dispatch runs kernel now; grid and group are ignored. An unknown kernel or
// arguments that do not fit its signature panic (programmer errors).
func (e *encoder) Dispatch(kernel string, grid, group backend.Dim3, args ...backend.Arg) {
	run, ok := registry[kernel]
	if !ok {
		panic(fmt.Sprintf("cpu: unknown kernel %q", kernel))
	}
	a := newArgs(kernel, kernels.Lookup("cpu", kernel), args, e.dev.threads)
	e.dev.dispatches.Add(1)
	run(a)
}

// Submit counts one command buffer; the work has already run.
func (e *encoder) Submit() error {
	e.dev.commandBuffers.Add(1)
	return nil
}

var _ backend.MatrixUnits = (*Device)(nil)

// MatrixUnits: the CPU backend runs each kernel's reference, so the prompt
// paths that need matrix units elsewhere are tested here.
func (d *Device) MatrixUnits() bool { return true }
