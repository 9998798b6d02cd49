//go:build linux

package cuda

import (
	"fmt"
	"unsafe"

	"bagel/backend"
	"bagel/kernels"
)

// launch is one kernel launch: the function, its geometry and its argument slots.
type launch struct {
	kernel      string
	fn          uintptr
	grid, group backend.Dim3
	params      []uint64
}

// encoder launches at Dispatch, or, with graphs on, records the launches and
// hands them to the graph cache at Submit (graph.go), which replays a sequence
// it has seen before as one graph launch.
type encoder struct {
	dev      *Device
	err      error // the first launch error
	recorded []launch
	// slab holds the recorded launches' argument slots, reused once they are
	// flushed (the graph cache keeps copies of what it keeps): no allocation
	// a launch (BenchmarkEncoderHost).
	slab     []uint64
	segments int     // segments flushed so far (they grow: segmentLimit)
	start    uintptr // the timing event before this encoder's first direct launch
}

// Encoder returns an encoder on the device's stream.
func (d *Device) Encoder() backend.Encoder { return &encoder{dev: d} }

// Dispatch launches or records kernel. An unknown kernel, arguments that do not
// match its signature or a threadgroup over 1024 threads panic (programmer
// errors); compile, load and launch errors are returned by Submit. A dispatch
// with an empty grid launches nothing.
func (e *encoder) Dispatch(kernel string, grid, group backend.Dim3, args ...backend.Arg) {
	d := e.dev
	c := kernels.Preflight("cuda", kernel, grid, group, args)
	params := e.slots(len(args))
	d.marshal(kernel, c, args, params)
	if c.Empty() || e.err != nil {
		e.slab = e.slab[:len(e.slab)-len(params)]
		return
	}
	fn, err := d.function(kernel)
	if err != nil {
		e.err = err
		return
	}
	l := launch{kernel: kernel, fn: fn, grid: c.Grid, group: c.Group, params: params}
	d.counters.Dispatches++
	if !d.useGraphs {
		if e.start == 0 {
			e.start = d.markStart()
		}
		e.err = d.launchNow(l)
		e.slab = e.slab[:0] // the driver has copied the arguments
		return
	}
	if d.open != nil && d.open != e {
		// Another encoder's recorded work comes first in stream order.
		if err := d.flushRecorded(); err != nil {
			e.err = err
			return
		}
	}
	e.recorded = append(e.recorded, l)
	d.open = e
	if len(e.recorded) == segmentLimit(e.segments) {
		e.flush() // the GPU starts on this segment while the host records the next
		e.segments++
	}
}

// Submit launches what was recorded (as a graph where the cache has one) and
// returns the first error of this encoder's launches (or of the module load).
// It counts one command buffer and does not wait.
func (e *encoder) Submit() error {
	e.dev.counters.CommandBuffers++
	e.flush()
	e.segments = 0
	if e.start != 0 {
		e.dev.markEnd(e.start, true)
		e.start = 0
	}
	err := e.err
	e.err = nil
	return err
}

// slots returns n argument slots from the slab. A slab that is full is
// replaced, not grown: the launches recorded so far keep their slots.
func (e *encoder) slots(n int) []uint64 {
	at := len(e.slab)
	if at+n > cap(e.slab) {
		e.slab, at = make([]uint64, 0, max(2*cap(e.slab), 64*n, 1024)), 0
	}
	e.slab = e.slab[:at+n]
	return e.slab[at : at+n : at+n]
}

// flush hands the recorded launches to the graph cache, which keeps none of
// them (it copies a sequence into the graph it builds or updates), so their
// slice and slots are reused.
func (e *encoder) flush() {
	d := e.dev
	if d.open == e {
		d.open = nil
	}
	recorded := e.recorded
	e.recorded, e.slab = recorded[:0], e.slab[:0]
	if len(recorded) == 0 || e.err != nil {
		return
	}
	start := d.markStart()
	e.err = d.graphs.run(d, recorded)
	d.markEnd(start, e.segments == 0)
}

// flushRecorded launches the open encoder's recorded work before a host-side
// operation (a copy, a wait, a free) that must come after it in stream order.
func (d *Device) flushRecorded() error {
	e := d.open
	if e == nil {
		return nil
	}
	e.flush()
	return e.err
}

// launchNow launches l on the stream.
func (d *Device) launchNow(l launch) error {
	ptrs := make([]unsafe.Pointer, len(l.params))
	for i := range l.params {
		ptrs[i] = unsafe.Pointer(&l.params[i])
	}
	r := d.drv.cuLaunchKernel(l.fn, uint32(l.grid.X), uint32(l.grid.Y), uint32(l.grid.Z),
		uint32(l.group.X), uint32(l.group.Y), uint32(l.group.Z), 0, d.stream, unsafe.Pointer(&ptrs[0]), nil)
	if err := d.drv.check(r, "cuLaunchKernel", l.kernel); err != nil {
		return fmt.Errorf("%w (grid %v, group %v)", err, l.grid, l.group)
	}
	return nil
}
