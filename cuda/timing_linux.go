//go:build linux

package cuda

import (
	"time"

	"bagel/backend"
)

var _ backend.GPUTimer = (*Device)(nil)

// Device time, measured with a pair of CUDA events around each submitted unit
// of work (an encoder's launches, or its graph launch). The pairs are read at
// the next host sync, when they have completed; the sum says how much of a
// decode step the GPU was busy, against the wall time the host saw.
type gpuTiming struct {
	pending [][2]uintptr // recorded start/end pairs not yet read
	free    []uintptr    // events to reuse
	total   time.Duration
	broken  bool // an event call failed: timing is off, work is not affected
}

// TotalGPUTime is the device time of every unit of work read so far.
func (d *Device) TotalGPUTime() time.Duration { return d.timing.total }

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
// it and queues the pair.
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

func (d *Device) markEnd(start uintptr) {
	if start == 0 || d.timing.broken {
		return
	}
	end, ok := d.event()
	if !ok || d.drv.cuEventRecord(end, d.stream) != 0 {
		d.timing.broken = true
		return
	}
	d.timing.pending = append(d.timing.pending, [2]uintptr{start, end})
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
		r := d.drv.cuEventElapsedTime(&ms, p[0], p[1])
		if r == cudaErrorNotReady {
			break
		}
		if r == 0 {
			t.total += time.Duration(float64(ms) * float64(time.Millisecond))
		}
		t.free = append(t.free, p[0], p[1])
		done++
	}
	t.pending = append(t.pending[:0], t.pending[done:]...)
}

// releaseTiming destroys the events (the device is closing).
func (d *Device) releaseTiming() {
	for _, p := range d.timing.pending {
		d.drv.cuEventDestroy(p[0])
		d.drv.cuEventDestroy(p[1])
	}
	for _, ev := range d.timing.free {
		d.drv.cuEventDestroy(ev)
	}
	d.timing = gpuTiming{broken: true}
}
