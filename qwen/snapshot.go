package qwen

import (
	"fmt"

	"bagel/ops"
)

// Snapshot is a cache's state after Offset tokens, kept in device memory: the
// GDN layers' conv windows and recurrent states, which cannot be rewound (a
// recurrence forgets), the attention layers' keys and values of those Offset
// tokens, and the length. It is self-contained: it can be restored whatever
// the cache held in between (another conversation), which is what lets the
// engine keep several conversations.
//
// Taking and restoring are copy kernels recorded in stream order (ops.CopyAligned):
// no host copy and no wait, so a snapshot costs a few tens of microseconds of
// device bandwidth where a host copy of the 35B-A3B's 63 MB of GDN states took
// about 200 ms through pageable memory.
type Snapshot struct {
	Offset int
	mem    ops.Tensor   // u32, every piece back to back
	gdn    []ops.Tensor // the cache's GDN memory (every layer's conv window and state; a view of mem)
	kv     []ops.Tensor // per attention layer and kv head: keys, then values of Offset tokens
	// stateOnly marks a SnapshotState: its keys and values were left in place.
	stateOnly bool
	// mtpStale is the cache's: whether the MTP head's state is out of step.
	mtpStale bool
	// ropeShift is the cache's multimodal RoPE offset (cache.go).
	ropeShift int
}

// Bytes is the device memory the snapshot holds.
func (s *Snapshot) Bytes() int64 {
	if s.mem.Buf == nil {
		return 0
	}
	return int64(s.mem.Buf.Len())
}

// MTPStale reports whether the MTP head's state in the snapshot is out of
// step with the rest (taken while the head was not kept, qwen/mtp.go).
func (s *Snapshot) MTPStale() bool { return s.mtpStale }

// Release frees the snapshot's device memory; it cannot be restored after.
func (s *Snapshot) Release(c *ops.Ctx) {
	ops.Free(c, s.mem)
	s.mem = ops.Tensor{}
	s.gdn, s.kv = nil, nil
}

// headRows is the view of kv head h's first n positions of a cache tensor
// [Hkv, Capacity, D].
func headRows(t ops.Tensor, h, n int) ops.Tensor {
	capacity, d := t.Shape[1], t.Shape[2]
	row := d * t.DType.Size()
	return ops.View(t, (h*capacity)*row, t.DType, []int{n, d})
}

// pieces lists the cache tensors a snapshot holds, in its order: per
// attention layer, the kv heads' keys and values of the first Offset
// positions (unless stateOnly); then the GDN layers' conv windows and states,
// one piece (the cache's gdn memory).
func (k *Cache) pieces(offset int, stateOnly bool) (kv, gdn []ops.Tensor) {
	for _, l := range k.layers {
		if l.keys.Buf != nil && offset > 0 && !stateOnly {
			for h := range l.keys.Shape[0] {
				kv = append(kv, headRows(l.keys, h, offset), headRows(l.values, h, offset))
			}
		}
	}
	// The MTP head's keys of positions 0..offset−2 and its pending hidden
	// state (mtp.go).
	if l := k.mtp; l.keys.Buf != nil && offset > 1 && !stateOnly {
		for h := range l.keys.Shape[0] {
			kv = append(kv, headRows(l.keys, h, offset-1), headRows(l.values, h, offset-1))
		}
	}
	if k.gdn.Buf != nil {
		gdn = append(gdn, k.gdn)
	}
	if k.mtpHidden.Buf != nil {
		gdn = append(gdn, k.mtpHidden)
	}
	return kv, gdn
}

// Snapshot copies the cache's state into new device memory. Call it between
// forwards; Release the snapshot when it is no longer wanted.
func (k *Cache) Snapshot(c *ops.Ctx) (*Snapshot, error) {
	s := &Snapshot{}
	if err := k.take(c, s, false); err != nil {
		return nil, err
	}
	return s, nil
}

// SnapshotState is Snapshot without the keys and values: enough to roll the
// cache back to Offset while the keys below Offset stay as they are (a
// speculative verify that wrote past it). It reuses one snapshot of the cache:
// each call overwrites what the last one returned.
func (k *Cache) SnapshotState(c *ops.Ctx) (*Snapshot, error) {
	if k.rollback == nil {
		k.rollback = &Snapshot{}
	}
	return k.rollback, k.take(c, k.rollback, true)
}

// take copies the pieces into s, growing its memory when they do not fit.
func (k *Cache) take(c *ops.Ctx, s *Snapshot, stateOnly bool) error {
	kv, gdn := k.pieces(k.Offset, stateOnly)
	total := 0
	for _, t := range append(append([]ops.Tensor(nil), kv...), gdn...) {
		total += align16(t.Bytes())
	}
	if s.mem.Buf == nil || s.mem.Buf.Len() < total {
		s.Release(c)
		mem, err := ops.Alloc(c, ops.U32, max(total/4, 1))
		if err != nil {
			return fmt.Errorf("snapshot of %d bytes: %w", total, err)
		}
		s.mem = mem
	}
	s.Offset, s.stateOnly, s.mtpStale, s.ropeShift = k.Offset, stateOnly, k.mtpStale, k.ropeShift
	s.kv, s.gdn = s.kv[:0], s.gdn[:0]
	at := 0
	for i, t := range append(append([]ops.Tensor(nil), kv...), gdn...) {
		piece := ops.View(s.mem, at, t.DType, t.Shape)
		ops.CopyAligned(c, t, piece)
		at += align16(t.Bytes())
		if i < len(kv) {
			s.kv = append(s.kv, piece)
		} else {
			s.gdn = append(s.gdn, piece)
		}
	}
	return nil
}

// Restore puts the cache back to the state s was taken in. The snapshot must
// come from this cache (the same model and capacity).
func (k *Cache) Restore(c *ops.Ctx, s *Snapshot) error {
	if s.Offset > k.Capacity {
		return fmt.Errorf("snapshot after %d tokens does not fit a cache of %d", s.Offset, k.Capacity)
	}
	kv, gdn := k.pieces(s.Offset, s.stateOnly)
	if len(kv) != len(s.kv) || len(gdn) != len(s.gdn) {
		return fmt.Errorf("snapshot does not match this cache's layout")
	}
	for i := range kv {
		if kv[i].Bytes() != s.kv[i].Bytes() {
			return fmt.Errorf("snapshot does not match this cache's layout")
		}
	}
	for i := range gdn {
		if gdn[i].Bytes() != s.gdn[i].Bytes() {
			return fmt.Errorf("snapshot does not match this cache's layout")
		}
	}
	for i := range kv {
		ops.CopyAligned(c, s.kv[i], kv[i])
	}
	for i := range gdn {
		ops.CopyAligned(c, s.gdn[i], gdn[i])
	}
	k.Offset, k.mtpStale, k.ropeShift = s.Offset, s.mtpStale, s.ropeShift
	return nil
}

// align16 rounds n up to a multiple of 16 bytes, so that every piece of a
// snapshot starts aligned.
func align16(n int) int { return (n + 15) &^ 15 }
