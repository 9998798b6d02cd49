package metal

import (
	"bagel/backend"
	"bagel/kernels"
	"bagel/metal/mtl"
)

// Writes behind recorded work. Shared memory lets Write copy at once, but a
// dispatch recorded before the Write and not yet committed runs after that
// copy. After a partial accept a speculative rollback records its replay of
// the kept tokens, whose conv output takes the scratch slot that the next
// forward's token ids take; the next verify wrote its ids at once, and the
// replay's conv then overwrote them (on the simulator embed_dequant_bf16 read
// bf16 values as token ids: TestGPUSpeculativeGreedyEqualsPlain). CUDA's Write
// is a copy on its stream behind the recorded launches; here a small write
// goes to a staging slot of its own and a copy_u32 recorded behind those
// dispatches moves it, so the order is the program's and nothing waits.

// stagedWriteSlots and stagedWriteMax size the ring: a verify's token ids, a
// draft tree's mask or a penalty's ids, a few writes a step.
const (
	stagedWriteSlots = 8
	stagedWriteMax   = 64 << 10
)

// stagedWrites is Write's ring of staging buffers, made at the first staged
// write. readBy[i] is the committed count after the command buffer that
// copies out of slot i (d.committed + 1 when it was staged: the open encoder
// commits next), so a slot is reused only once that copy has run.
type stagedWrites struct {
	slots  []backend.Buffer
	readBy []int64
	next   int
}

// stageWrite records src's copy into b at off through the next staging
// slot, behind the open encoder's dispatches, or, with none open, in a new
// encoder (committed before the next dispatch of another, a read or a wait:
// after the command buffers in flight). It stages nothing (false) for a write
// too large for a slot or not in whole, aligned words; the caller then
// commits and waits.
func (d *Device) stageWrite(b backend.Buffer, off int, src []byte) (bool, error) {
	if len(src) > stagedWriteMax || len(src)%4 != 0 || off%4 != 0 {
		return false, nil
	}
	w := &d.writes
	if w.slots == nil {
		for range stagedWriteSlots {
			s, err := d.Alloc(stagedWriteMax)
			if err != nil {
				return false, err
			}
			w.slots = append(w.slots, s)
			w.readBy = append(w.readBy, 0)
		}
	}
	i := w.next
	w.next = (w.next + 1) % len(w.slots)
	if w.readBy[i] > d.committed {
		// The slot's last copy is still recorded in the open encoder.
		if err := d.submitOpen(); err != nil {
			return false, err
		}
	}
	if d.completed < w.readBy[i] && len(d.inFlight) > 0 {
		// The ring came round to a copy the GPU has not run yet: wait for it.
		d.counters.HostSyncs++
		mtl.WithPool(func() {
			for d.completed < w.readBy[i] && len(d.inFlight) > 0 {
				d.completeOldest()
			}
		})
	}
	e := d.open
	if e == nil {
		e = d.Encoder().(*encoder)
	}
	slot := w.slots[i]
	copy(slot.(*buffer).host, src)
	args := []backend.Arg{backend.Buf(slot, 0), backend.Buf(b, off), backend.Int(len(src) / 4)}
	grid, group := kernels.Launch("copy_u32", args)
	e.Dispatch("copy_u32", grid, group, args...)
	if e.err != nil { // the copy was not recorded (a pipeline failure, or one before it)
		return false, e.err
	}
	w.readBy[i] = d.committed + 1
	return true, nil
}
