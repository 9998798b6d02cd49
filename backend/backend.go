// Package backend is the small seam between the model and the hardware: a Device
// that owns memory and an Encoder that records kernel dispatches by name.
//
// Three implementations exist (cpu/, cuda/, metal/). The model and ops never see
// which one runs; they name a kernel ("rms_norm_bf16"), give a grid and its
// arguments, and the backend runs the kernel of that name. The CPU backend runs a Go
// function with the same name and argument order, which makes it the oracle every
// GPU kernel is tested against (kernels/README.md lists every kernel and its arguments).
package backend

import "fmt"

// DType is the element type of a buffer region.
type DType uint8

const (
	F32 DType = iota
	BF16
	F16
	U32 // packed quantized codes
	I32 // token ids, expert ids
)

// Size is the byte width of one element.
func (d DType) Size() int {
	switch d {
	case BF16, F16:
		return 2
	default:
		return 4
	}
}

func (d DType) String() string {
	switch d {
	case F32:
		return "f32"
	case BF16:
		return "bf16"
	case F16:
		return "f16"
	case U32:
		return "u32"
	case I32:
		return "i32"
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Dim3 is a launch size: the grid in threadgroups (blocks) and the threadgroup
// size in threads. The CPU backend ignores both; GPU backends launch with them.
type Dim3 struct{ X, Y, Z int }

// Buffer is device memory. Its contents are reached only through the Device.
type Buffer interface {
	// Len is the size in bytes.
	Len() int
}

// ArgKind tells which field of an Arg is set.
type ArgKind uint8

const (
	ArgBuffer ArgKind = iota
	ArgInt
	ArgFloat
)

// Arg is one kernel argument: a buffer at a byte offset, or a 32-bit scalar
// (Metal setBytes, CUDA by value). Buffers and scalars are numbered in the order given.
type Arg struct {
	Kind ArgKind
	Buf  Buffer
	Off  int // bytes
	Int  int32
	F32  float32
}

// Buf is a buffer argument starting off bytes into b.
func Buf(b Buffer, off int) Arg { return Arg{Kind: ArgBuffer, Buf: b, Off: off} }

// Int is a scalar int32 argument.
func Int(v int) Arg { return Arg{Kind: ArgInt, Int: int32(v)} }

// Float is a scalar float32 argument.
func Float(v float32) Arg { return Arg{Kind: ArgFloat, F32: v} }

// Counters are what a backend counted since it was created; bench and the stats
// divide their differences by the tokens processed.
type Counters struct {
	Dispatches     int64 // kernels launched
	CommandBuffers int64 // Metal command buffers / CUDA encoder submits / CPU submits
	GraphLaunches  int64 // CUDA graph launches (each replaces one submit's kernel launches)
	// GraphNodeUpdates counts the kernel nodes of replayed graphs whose
	// arguments changed since their last launch (one driver call each).
	GraphNodeUpdates int64
	HostSyncs        int64 // waits of the host for the device (reads back included)
}

// Device owns memory and runs kernels. All calls happen on one goroutine (the
// engine's device goroutine, locked to its OS thread for CUDA and Metal).
type Device interface {
	// Name is a short description shown in stats ("cpu (2 threads)", "NVIDIA H200").
	Name() string
	// Alloc returns a zero-filled buffer of n bytes, starting at least
	// 16-byte aligned on a GPU (CUDA: 256; Metal: a page), so that a kernel
	// may move it in 16-byte pieces (ops.CopyAligned; the CPU's kernels take
	// any alignment). Wrapped host memory (WrapHost, AlignedWrapper) need not
	// be.
	Alloc(n int) (Buffer, error)
	// WrapHost makes a buffer over host memory that outlives it (an mmap'd
	// safetensors file). Backends that can, do not copy (CPU, Metal); CUDA uploads.
	WrapHost(data []byte) (Buffer, error)
	// Write copies src into b at byte offset off.
	Write(b Buffer, off int, src []byte) error
	// Read waits for submitted work and copies from b at off into dst. It counts as a host sync.
	Read(b Buffer, off int, dst []byte) error
	// Encoder starts recording a unit of work (one command buffer / graph).
	Encoder() Encoder
	// Counters returns the running totals.
	Counters() Counters
	// Free releases a buffer made by Alloc or WrapHost.
	Free(b Buffer)
	Close() error
}

// Preparer is implemented by a Device that readies its kernels on first use
// (CUDA: an NVRTC compile of every kernel, seconds, cached on disk after the
// first run): Prepare does it now, so that a model's load, not its first
// reply, waits for it, and a failure (no NVRTC and a stale embedded PTX)
// surfaces while loading. Later calls return at once with the same result.
type Preparer interface {
	Prepare() error
}

// AlignedWrapper is implemented by a Device whose WrapHost copies (CUDA): it
// places the copy so that byte anchor of data starts a 16-byte boundary, so
// that kernels may read the tensors aligned like the anchor in 16-byte pieces.
// A no-copy wrap (CPU, Metal) keeps the file's own alignment.
type AlignedWrapper interface {
	WrapHostAligned(data []byte, anchor int) (Buffer, error)
}

// Encoder records dispatches in order. Dispatches are executed in order; a
// dispatch sees the writes of every dispatch recorded before it.
type Encoder interface {
	// Dispatch records kernel name over grid threadgroups of group threads.
	// It does not keep args after it returns (ops reuses the list's store).
	// A kernel that does not exist or arguments that do not fit panic: they are
	// programmer errors, recovered and reported by the engine.
	Dispatch(kernel string, grid, group Dim3, args ...Arg)
	// Submit sends the recorded work to the device and returns without waiting.
	Submit() error
}
