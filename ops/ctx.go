package ops

import (
	"fmt"

	"bagel/backend"
	"bagel/kernels"
)

// Ctx records operations for one unit of work on a device.
type Ctx struct {
	Dev backend.Device
	Enc backend.Encoder
	// Scratch hands out temporary tensors for the current forward pass.
	Scratch *Arena
}

// NewCtx starts recording on dev with a fresh encoder.
func NewCtx(dev backend.Device, scratch *Arena) *Ctx {
	return &Ctx{Dev: dev, Enc: dev.Encoder(), Scratch: scratch}
}

// dispatch records kernel name with args, geometry from package kernels.
func (c *Ctx) dispatch(name string, args ...backend.Arg) {
	grid, group := kernels.Launch(name, args)
	c.Enc.Dispatch(name, grid, group, args...)
}

// Arena hands out scratch tensors from pooled device buffers. Buffers handed out
// since the last Reset stay reserved; Reset returns them all (call it only after
// the work that used them has completed: after a Read of its result).
type Arena struct {
	dev  backend.Device
	free map[int][]backend.Buffer // by byte size
	used []backend.Buffer
}

// NewArena makes an empty arena on dev.
func NewArena(dev backend.Device) *Arena {
	return &Arena{dev: dev, free: map[int][]backend.Buffer{}}
}

// Get returns a tensor of dtype and shape whose contents are unspecified.
func (a *Arena) Get(dtype backend.DType, shape ...int) Tensor {
	t := Tensor{DType: dtype, Shape: append([]int(nil), shape...)}
	n := t.Bytes()
	if n == 0 {
		n = 4
	}
	if l := a.free[n]; len(l) > 0 {
		t.Buf = l[len(l)-1]
		a.free[n] = l[:len(l)-1]
	} else {
		b, err := a.dev.Alloc(n)
		if err != nil {
			panic(fmt.Sprintf("ops: scratch allocation of %d bytes: %v", n, err))
		}
		t.Buf = b
	}
	a.used = append(a.used, t.Buf)
	return t
}

// Reset makes every buffer handed out available again. They go back in
// reverse, so the same sequence of Gets after it gets the same buffers: a
// decode step then dispatches with the same addresses every token, which lets
// a CUDA graph replay it without updating them.
func (a *Arena) Reset() {
	for i := len(a.used) - 1; i >= 0; i-- {
		b := a.used[i]
		a.free[b.Len()] = append(a.free[b.Len()], b)
	}
	a.used = a.used[:0]
}

// Release frees every pooled buffer.
func (a *Arena) Release() {
	a.Reset()
	for _, l := range a.free {
		for _, b := range l {
			a.dev.Free(b)
		}
	}
	a.free = map[int][]backend.Buffer{}
}
