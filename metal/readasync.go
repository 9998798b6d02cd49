package metal

import (
	"fmt"

	"bagel/backend"
	"bagel/kernels"
	"bagel/metal/mtl"
)

var _ backend.AsyncReader = (*Device)(nil)

// Reads that wait only for the work before them (backend.AsyncReader). The
// bytes are copied on the GPU into a slot buffer of their own (copy_u32, in a
// command buffer committed after the work), since the buffer they are read
// from may be written again by the work committed after the read; Wait then
// completes the command buffers up to that copy's and reads the slot, which
// is shared memory. The slots are a ring of backend.AsyncReadSlots, made at
// the first read. Never run on a Mac: the simulator runs this code in tests.
type asyncReads struct {
	slots []backend.Buffer
	next  int
}

type pendingRead struct {
	d      *Device
	slot   *buffer
	n      int
	target int64 // d.committed after the copy's command buffer
}

// ReadAsync copies n bytes (a multiple of 4) of b at off into the next slot
// behind the work submitted so far, and commits that copy.
func (d *Device) ReadAsync(b backend.Buffer, off, n int) (backend.PendingRead, error) {
	if n < 0 || n > backend.AsyncReadMax || n%4 != 0 || off%4 != 0 {
		return nil, fmt.Errorf("metal: asynchronous read of %d bytes at %d: whole words, at most %d bytes", n, off, backend.AsyncReadMax)
	}
	if _, err := d.own(b, off, n); err != nil {
		return nil, fmt.Errorf("metal: read: %w", err)
	}
	if d.reads.slots == nil {
		for range backend.AsyncReadSlots {
			s, err := d.Alloc(backend.AsyncReadMax)
			if err != nil {
				return nil, err
			}
			d.reads.slots = append(d.reads.slots, s)
		}
	}
	slot := d.reads.slots[d.reads.next]
	d.reads.next = (d.reads.next + 1) % len(d.reads.slots)
	if n > 0 {
		args := []backend.Arg{backend.Buf(b, off), backend.Buf(slot, 0), backend.Int(n / 4)}
		grid, group := kernels.Launch("copy_u32", args)
		e := d.Encoder()
		e.Dispatch("copy_u32", grid, group, args...)
		if err := e.Submit(); err != nil {
			return nil, err
		}
	}
	return &pendingRead{d: d, slot: slot.(*buffer), n: n, target: d.committed}, nil
}

// Wait completes the command buffers up to the copy's and returns the slot's
// bytes; a failed command buffer among them reports here.
func (p *pendingRead) Wait() ([]byte, error) {
	d := p.d
	d.counters.HostSyncs++
	mtl.WithPool(func() {
		for d.completed < p.target && len(d.inFlight) > 0 {
			d.completeOldest()
		}
	})
	if err := d.asyncErr; err != nil {
		d.asyncErr = nil
		return nil, err
	}
	out := make([]byte, p.n)
	copy(out, p.slot.host[:p.n])
	return out, nil
}
