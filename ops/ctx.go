package ops

import (
	"fmt"
	"sync/atomic"

	"bagel/backend"
	"bagel/kernels"
)

// Ctx records operations for one unit of work on a device.
type Ctx struct {
	Dev backend.Device
	Enc backend.Encoder
	// Scratch hands out temporary tensors for the current forward pass.
	Scratch *Arena
	// Plan is the kernel plan of the model this context runs (plan.go), set
	// before the model loads.
	Plan Plan
	// argStore holds the argument list of the dispatch being built: a
	// decode step makes hundreds of dispatches of up to 31 arguments, and
	// building each list afresh was most of the host's time per dispatch
	// (allocations and their collection).
	argStore []backend.Arg
}

// NewCtx starts recording on dev with a fresh encoder.
func NewCtx(dev backend.Device, scratch *Arena) *Ctx {
	return &Ctx{Dev: dev, Enc: dev.Encoder(), Scratch: scratch, argStore: make([]backend.Arg, 0, 48)}
}

// args starts a dispatch's argument list with first, in the context's
// store: append the rest and pass it to dispatch before building another.
func (c *Ctx) args(first ...backend.Arg) []backend.Arg {
	return append(c.argStore[:0], first...)
}

// dispatch records kernel name with args, geometry from package kernels. It
// copies args into the context's store (where an args list already is), so
// that a list written out at the call does not escape to the heap; encoders
// do not keep the list past Dispatch (backend.Encoder).
func (c *Ctx) dispatch(name string, args ...backend.Arg) {
	c.argStore = append(c.argStore[:0], args...)
	grid, group := kernels.Launch(name, c.argStore)
	c.Enc.Dispatch(name, grid, group, c.argStore...)
}

// Arena hands out scratch tensors from pooled device buffers. Buffers handed out
// since the last Reset stay reserved; Reset returns them all (call it only after
// the work that used them has completed: after a Read of its result).
//
// The k-th request after a Reset gets the k-th buffer of the pool, grown when
// the request is larger. A forward pass asks for the same tensors in the same
// order whatever its token count, so slot k serves the same tensor in every
// step: once the largest step has run (a full prefill chunk) the pool is laid
// out for good. Shorter prompts and decode steps reuse it, a long chat adds
// nothing turn after turn, and a decode step gets the same addresses every
// token (a CUDA graph replays it unchanged).
//
// A slot that grows keeps its old buffer until the next Reset: the work
// recorded before the Get may still use it, and on a GPU freeing it would
// wait for that work (CUDA's Free flushes the recorded launches and
// cuMemFree synchronizes), stalling the host in the middle of the first
// long prompt once for every slot it grows.
type Arena struct {
	dev     backend.Device
	slots   []backend.Buffer
	retired []backend.Buffer // outgrown this step, freed at Reset
	next    int              // the slot of the next Get
	allocs  int              // buffers allocated, ever
	held    atomic.Int64     // bytes of the buffers held (Held), read from any goroutine
}

// NewArena makes an empty arena on dev.
func NewArena(dev backend.Device) *Arena {
	return &Arena{dev: dev}
}

// Get returns a tensor of dtype and shape whose contents are unspecified.
func (a *Arena) Get(dtype backend.DType, shape ...int) Tensor {
	t := Tensor{DType: dtype, Shape: append([]int(nil), shape...)}
	n := max(t.Bytes(), 4)
	k := a.next
	a.next++
	if k == len(a.slots) {
		a.slots = append(a.slots, nil)
	}
	if b := a.slots[k]; b == nil || b.Len() < n {
		if b != nil {
			a.retired = append(a.retired, b)
		}
		b, err := a.dev.Alloc(sizeClass(n))
		if err != nil {
			panic(fmt.Sprintf("ops: scratch allocation of %d bytes: %v", n, err))
		}
		a.allocs++
		a.held.Add(int64(b.Len()))
		a.slots[k] = b
	}
	t.Buf = a.slots[k]
	return t
}

// sizeClass rounds an allocation up a little (to 256 bytes at least, above 64
// KiB to an eighth of the power of two below), so that a slot grown by a
// slightly longer prompt is not grown again by the next one.
func sizeClass(n int) int {
	c := 256
	for c < n {
		c *= 2
	}
	if c <= 64<<10 {
		return c
	}
	step := c / 16 // c/2 is the octave's start; eight steps of c/16 span it
	return (n + step - 1) / step * step
}

// Reset makes every buffer handed out available again and frees the
// outgrown ones.
func (a *Arena) Reset() {
	a.next = 0
	for _, b := range a.retired {
		a.held.Add(-int64(b.Len()))
		a.dev.Free(b)
	}
	a.retired = a.retired[:0]
}

// Mark is the arena's place: a later Rewind to it hands the slots after it
// out again.
func (a *Arena) Mark() int { return a.next }

// Rewind hands the slots from mark on out again: the tensors taken since
// Mark are dead. A forward rewinds before each layer, so every layer takes
// the slots of the one before it (a layer's tensors are read only by its own
// kernels, which run before the next layer's in stream order; a kernel writes
// only after it waited for the ones before it, GRID_WAIT): the scratch is one
// layer's, not forty (35B-A3B shapes, a 2048-token prompt chunk: 0.42 GB
// against 8.86 GB, engine's BenchmarkScratchOfAModel). A request after a Rewind
// that is larger than its slot grows the slot as in any step.
func (a *Arena) Rewind(mark int) {
	if mark < 0 || mark > a.next {
		panic(fmt.Sprintf("ops: arena rewound to %d, %d slots taken", mark, a.next))
	}
	a.next = mark
}

// Allocations is how many buffers the arena has allocated, ever, and the bytes
// it holds now.
func (a *Arena) Allocations() (buffers int, bytes int64) {
	for _, b := range a.slots {
		bytes += int64(b.Len())
	}
	return a.allocs, bytes
}

// Held is the bytes of device memory the arena holds now (its slots and the
// outgrown buffers not yet freed); unlike Allocations it may be read from any
// goroutine.
func (a *Arena) Held() int64 { return a.held.Load() }

// Release frees every pooled buffer.
func (a *Arena) Release() {
	a.Reset()
	for _, b := range a.slots {
		a.held.Add(-int64(b.Len()))
		a.dev.Free(b)
	}
	a.slots = nil
}
