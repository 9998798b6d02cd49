//go:build linux

package cuda

import (
	"fmt"
	"unsafe"

	"bagel/backend"
)

var _ backend.AsyncReader = (*Device)(nil)

// Reads that wait only for the work before them (backend.AsyncReader): a
// copy into page-locked host memory queued on the stream (a copy into
// ordinary memory would make the host wait for it), then an event; Wait
// synchronizes on the event alone, so the decode step launched after the
// read keeps the GPU busy while the host takes the token. The slots are a
// ring of backend.AsyncReadSlots, made at the first read.
type readSlot struct {
	host  unsafe.Pointer // backend.AsyncReadMax bytes, page-locked
	event uintptr
}

type asyncReads struct {
	slots  []readSlot
	next   int
	broken error // a failed setup: every later ReadAsync returns it
}

// pendingRead is one queued copy.
type pendingRead struct {
	d    *Device
	slot readSlot
	n    int
}

// ReadAsync queues a copy of n bytes of b at off behind the launches so far.
func (d *Device) ReadAsync(b backend.Buffer, off, n int) (backend.PendingRead, error) {
	if n < 0 || n > backend.AsyncReadMax {
		return nil, fmt.Errorf("cuda: read of %d bytes: at most %d at a time", n, backend.AsyncReadMax)
	}
	buf, err := d.deviceBytes(b, off, n)
	if err != nil {
		return nil, fmt.Errorf("cuda: read: %w", err)
	}
	if err := d.flushRecorded(); err != nil {
		return nil, err
	}
	slot, err := d.readSlot()
	if err != nil {
		return nil, err
	}
	if n > 0 {
		if err := d.drv.check(d.drv.cuMemcpyDtoHAsync(slot.host, buf.ptr+uint64(off), uint64(n), d.stream), "cuMemcpyDtoHAsync", ""); err != nil {
			return nil, err
		}
	}
	if err := d.drv.check(d.drv.cuEventRecord(slot.event, d.stream), "cuEventRecord", ""); err != nil {
		return nil, err
	}
	return &pendingRead{d: d, slot: slot, n: n}, nil
}

// readSlot is the next slot of the ring, made on first use.
func (d *Device) readSlot() (readSlot, error) {
	r := &d.reads
	if r.broken != nil {
		return readSlot{}, r.broken
	}
	if r.slots == nil {
		for range backend.AsyncReadSlots {
			var s readSlot
			if err := d.drv.check(d.drv.cuMemAllocHost(&s.host, backend.AsyncReadMax), "cuMemAllocHost", ""); err != nil {
				r.broken = err
				return readSlot{}, err
			}
			// Flags 2: CU_EVENT_DISABLE_TIMING, the cheaper event.
			if err := d.drv.check(d.drv.cuEventCreate(&s.event, 2), "cuEventCreate", ""); err != nil {
				d.drv.cuMemFreeHost(s.host)
				r.broken = err
				return readSlot{}, err
			}
			r.slots = append(r.slots, s)
		}
	}
	s := r.slots[r.next]
	r.next = (r.next + 1) % len(r.slots)
	return s, nil
}

// Wait synchronizes on the read's event and copies the bytes out. A kernel
// fault before the read reports here. The GPU time of the work completed
// so far is added up (work launched after the read may still be running).
func (p *pendingRead) Wait() ([]byte, error) {
	d := p.d
	d.counters.HostSyncs++
	if err := d.drv.check(d.drv.cuEventSynchronize(p.slot.event), "cuEventSynchronize", ""); err != nil {
		return nil, err
	}
	d.readTiming()
	out := make([]byte, p.n)
	copy(out, unsafe.Slice((*byte)(p.slot.host), p.n))
	return out, nil
}

// releaseReads frees the slots (the device is closing, its stream idle).
func (d *Device) releaseReads() {
	for _, s := range d.reads.slots {
		d.drv.cuEventDestroy(s.event)
		d.drv.cuMemFreeHost(s.host)
	}
	d.reads = asyncReads{broken: fmt.Errorf("cuda: device closed")}
}
