//go:build linux

package cuda

import (
	"time"

	"bagel/backend"
)

var _ backend.GPUTimer = (*Device)(nil)

// Device time, measured with a pair of CUDA events around each submitted unit
// of work (an encoder's launches, or one graph segment's launch). The pairs
// are read at the next host sync, when they have completed; the sum says how
// much of a decode step the GPU was busy, against the wall time the host saw.
// The time from one unit's end event to the next unit's start event is the
// queue standing empty: a start event recorded on an idle stream completes
// as the host enqueues it, just before its unit's launch.
type gpuTiming struct {
	pending []timedUnit // recorded units not yet read
	free    []uintptr   // events to reuse
	total   time.Duration
	// lastEnd is the end event of the last unit read, kept out of free to
	// time the gap before the next; idleBefore and idleInside sum the gaps
	// before a submit's first unit and before its later units.
	lastEnd                uintptr
	idleBefore, idleInside time.Duration
	broken                 bool // an event call failed: timing is off, work is not affected
}

// timedUnit is one measured unit of work: its start and end events, and
// whether it is its submit's first.
type timedUnit struct {
	start, end uintptr
	first      bool
}

// TotalGPUTime is the device time of every unit of work read so far.
func (d *Device) TotalGPUTime() time.Duration { return d.timing.total }

var _ backend.GPUIdleTimer = (*Device)(nil)

// GPUIdle is the time the stream stood empty between the units read so far.
func (d *Device) GPUIdle() (before, inside time.Duration) {
	return d.timing.idleBefore, d.timing.idleInside
}

// event returns a reusable event, creating one when the pool is empty.
func (d *Device) event() (uintptr, bool) {
	t := &d.timing
	if n := len(t.free); n > 0 {
		ev := t.free[n-1]
		t.free = t.free[:n-1]
		return ev, true
	}
	var ev uintptr
	if d.drv.cuEventCreate(&ev, 0) != 0 {
		t.broken = true
		return 0, false
	}
	return ev, true
}

// markStart records an event before a unit of work; markEnd records one after
// it and queues the pair, first telling whether the unit is its submit's
// first.
func (d *Device) markStart() uintptr {
	if d.timing.broken {
		return 0
	}
	ev, ok := d.event()
	if !ok || d.drv.cuEventRecord(ev, d.stream) != 0 {
		d.timing.broken = true
		return 0
	}
	return ev
}

func (d *Device) markEnd(start uintptr, first bool) {
	if start == 0 || d.timing.broken {
		return
	}
	end, ok := d.event()
	if !ok || d.drv.cuEventRecord(end, d.stream) != 0 {
		d.timing.broken = true
		return
	}
	d.timing.pending = append(d.timing.pending, timedUnit{start, end, first})
}

// cudaErrorNotReady is CUDA_ERROR_NOT_READY: an event not reached yet.
const cudaErrorNotReady = 600

// readTiming adds the elapsed time of the completed pairs, in order, up to the
// first that has not completed (after a stream sync, all of them; after an
// asynchronous read's wait, the work launched after it may still run).
func (d *Device) readTiming() {
	t := &d.timing
	done := 0
	for _, p := range t.pending {
		var ms float32
		r := d.drv.cuEventElapsedTime(&ms, p.start, p.end)
		if r == cudaErrorNotReady {
			break
		}
		if r == 0 {
			t.total += time.Duration(float64(ms) * float64(time.Millisecond))
		}
		if t.lastEnd != 0 {
			var gap float32
			if d.drv.cuEventElapsedTime(&gap, t.lastEnd, p.start) == 0 && gap > 0 {
				idle := time.Duration(float64(gap) * float64(time.Millisecond))
				if p.first {
					t.idleBefore += idle
				} else {
					t.idleInside += idle
				}
			}
			t.free = append(t.free, t.lastEnd)
		}
		t.free = append(t.free, p.start)
		t.lastEnd = p.end
		done++
	}
	t.pending = append(t.pending[:0], t.pending[done:]...)
}

// releaseTiming destroys the events (the device is closing).
func (d *Device) releaseTiming() {
	for _, p := range d.timing.pending {
		d.drv.cuEventDestroy(p.start)
		d.drv.cuEventDestroy(p.end)
	}
	for _, ev := range d.timing.free {
		d.drv.cuEventDestroy(ev)
	}
	if d.timing.lastEnd != 0 {
		d.drv.cuEventDestroy(d.timing.lastEnd)
	}
	d.timing = gpuTiming{broken: true}
}
