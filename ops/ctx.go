package ops

import (
	"fmt"
	"slices"
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

// Arena hands out scratch tensors from pooled device buffers, each by its
// name: every Get of a name gets that name's buffer, grown when the request
// is larger. A forward asks for its tensors by name whatever its path and
// token count, so a name serves the same tensor in every step; once the
// largest step has run (a full prefill chunk) the pool is laid out for good.
// Shorter prompts and decode steps reuse it, a long chat adds nothing turn
// after turn, and a decode step gets the same addresses every token (a CUDA
// graph replays it unchanged). A path that takes fewer tensors leaves the
// others' buffers as they are: no name depends on what was taken before it.
//
// A name is live from its Get until a Rewind past it or Reset: a Get of a
// live name panics, since both would share one buffer. Buffers handed out
// since the last Reset stay reserved; call Reset only after the work that
// used them has completed (after a Read of its result).
//
// A slot that grows keeps its old buffer until the next Reset: the work
// recorded before the Get may still use it, and on a GPU freeing it would
// wait for that work (CUDA's Free flushes the recorded launches and
// cuMemFree synchronizes), stalling the host in the middle of the first
// long prompt once for every slot it grows.
type Arena struct {
	dev     backend.Device
	slots   map[string]backend.Buffer
	retired []backend.Buffer // outgrown this step, freed at Reset
	live    []string         // the names taken and not rewound, in order
	isLive  map[string]bool
	since   []string     // every name taken since Reset (Taken)
	allocs  int          // buffers allocated, ever
	held    atomic.Int64 // bytes of the buffers held (Held), read from any goroutine
}

// NewArena makes an empty arena on dev.
func NewArena(dev backend.Device) *Arena {
	return &Arena{dev: dev, slots: map[string]backend.Buffer{}, isLive: map[string]bool{}}
}

// Get returns the tensor named name, of dtype and shape, whose contents are
// unspecified. It panics when name is live (taken and not rewound).
func (a *Arena) Get(name string, dtype backend.DType, shape ...int) Tensor {
	if a.isLive[name] {
		panic(fmt.Sprintf("ops: scratch %q taken twice while in use", name))
	}
	t := Tensor{DType: dtype, Shape: append([]int(nil), shape...)}
	n := max(t.Bytes(), 4)
	if b := a.slots[name]; b == nil || b.Len() < n {
		if b != nil {
			a.retired = append(a.retired, b)
		}
		b, err := a.dev.Alloc(sizeClass(n))
		if err != nil {
			panic(fmt.Sprintf("ops: scratch allocation of %d bytes for %q: %v", n, name, err))
		}
		a.allocs++
		a.held.Add(int64(b.Len()))
		a.slots[name] = b
	}
	a.isLive[name] = true
	a.live = append(a.live, name)
	a.since = append(a.since, name)
	t.Buf = a.slots[name]
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

// Reset makes every name available again and frees the outgrown buffers.
func (a *Arena) Reset() {
	a.Rewind(0)
	a.since = a.since[:0]
	for _, b := range a.retired {
		a.held.Add(-int64(b.Len()))
		a.dev.Free(b)
	}
	a.retired = a.retired[:0]
}

// Mark is the arena's place: a later Rewind to it makes the names taken after
// it available again.
func (a *Arena) Mark() int { return len(a.live) }

// Scope opens a scope named name and returns its mark: when name's scope is
// already open (a forward after a forward, a layer after a layer), its
// tensors and those taken after it are dead first (Rewind to it). A forward
// opens one per layer, so every layer takes the buffers of the one before it
// (a layer's tensors are read only by its own kernels, which run before the
// next layer's in stream order; a kernel writes only after it waited for the
// ones before it, GRID_WAIT): the scratch is one layer's, not forty (35B-A3B
// shapes, a 2048-token prompt chunk: 0.42 GB against 8.86 GB).
// Scope names share the tensors' namespace.
func (a *Arena) Scope(name string) int {
	if a.isLive[name] {
		a.Rewind(slices.Index(a.live, name))
	}
	mark := a.Mark()
	a.isLive[name] = true
	a.live = append(a.live, name)
	return mark
}

// Rewind makes the names taken from mark on available again: their tensors
// are dead. Their buffers stay, for the next Get of each name.
func (a *Arena) Rewind(mark int) {
	if mark < 0 || mark > len(a.live) {
		panic(fmt.Sprintf("ops: arena rewound to %d, %d names live", mark, len(a.live)))
	}
	for _, name := range a.live[mark:] {
		delete(a.isLive, name)
	}
	a.live = a.live[:mark]
}

// Taken is the names taken since the last Reset, in order (a name rewound
// and taken again appears again): what a step used.
func (a *Arena) Taken() []string { return slices.Clone(a.since) }

// Buffer is name's buffer, nil when it was never taken.
func (a *Arena) Buffer(name string) backend.Buffer { return a.slots[name] }

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
	clear(a.slots)
}
