package qwen

import (
	"fmt"
	"slices"

	"bagel/ops"
)

// Snapshot is a cache's state after Offset tokens, kept on the host: the GDN
// layers' conv windows and recurrent states, which cannot be rewound (a
// recurrence forgets), the attention layers' keys and values of those Offset
// tokens, and the length. It is self-contained: it can be restored whatever
// the cache held in between (another conversation), which is what lets the
// engine keep several conversations.
type Snapshot struct {
	Offset int
	gdn    [][]byte // per GDN layer: conv window bytes, then state bytes
	kv     [][]byte // per attention layer and kv head: keys then values of Offset tokens
	// stateOnly marks a SnapshotState: its keys and values were left in place.
	stateOnly bool
}

// Bytes is the host memory the snapshot holds.
func (s *Snapshot) Bytes() int64 {
	var n int64
	for _, b := range append(slices.Clone(s.gdn), s.kv...) {
		n += int64(len(b))
	}
	return n
}

// headRows is the view of kv head h's first n positions of a cache tensor
// [Hkv, Capacity, D].
func headRows(t ops.Tensor, h, n int) ops.Tensor {
	capacity, d := t.Shape[1], t.Shape[2]
	row := d * t.DType.Size()
	return ops.View(t, (h*capacity)*row, t.DType, []int{n, d})
}

// Snapshot copies the cache's state to the host: one read per GDN tensor (at
// Qwen3.5-35B-A3B's shapes 30 layers of 2 MB) and per attention head (the
// keys and values of Offset tokens). Call it between forwards.
func (k *Cache) Snapshot(c *ops.Ctx) (*Snapshot, error) {
	s, err := k.SnapshotState(c)
	if err != nil || k.Offset == 0 {
		return s, err
	}
	s.stateOnly = false
	for _, l := range k.layers {
		if l.keys.Buf == nil {
			continue
		}
		for h := range l.keys.Shape[0] {
			keys, err := ops.ReadBytes(c, headRows(l.keys, h, k.Offset))
			if err != nil {
				return nil, err
			}
			values, err := ops.ReadBytes(c, headRows(l.values, h, k.Offset))
			if err != nil {
				return nil, err
			}
			s.kv = append(s.kv, append(keys, values...))
		}
	}
	return s, nil
}

// Restore puts the cache back to the state s was taken in. The snapshot must
// come from this cache (the same model and capacity).
func (k *Cache) Restore(c *ops.Ctx, s *Snapshot) error {
	if s.Offset > k.Capacity {
		return fmt.Errorf("snapshot after %d tokens does not fit a cache of %d", s.Offset, k.Capacity)
	}
	i, j := 0, 0
	for _, l := range k.layers {
		if l.keys.Buf != nil && s.Offset > 0 && !s.stateOnly {
			for h := range l.keys.Shape[0] {
				keys, values := headRows(l.keys, h, s.Offset), headRows(l.values, h, s.Offset)
				if j >= len(s.kv) || len(s.kv[j]) != keys.Bytes()+values.Bytes() {
					return fmt.Errorf("snapshot does not match this cache's layout")
				}
				if err := ops.WriteBytes(c, keys, s.kv[j][:keys.Bytes()]); err != nil {
					return err
				}
				if err := ops.WriteBytes(c, values, s.kv[j][keys.Bytes():]); err != nil {
					return err
				}
				j++
			}
		}
		if l.conv.Buf == nil {
			continue
		}
		if i >= len(s.gdn) || len(s.gdn[i]) != l.conv.Bytes()+l.state.Bytes() {
			return fmt.Errorf("snapshot does not match this cache's layout")
		}
		if err := ops.WriteBytes(c, l.conv, s.gdn[i][:l.conv.Bytes()]); err != nil {
			return err
		}
		if err := ops.WriteBytes(c, l.state, s.gdn[i][l.conv.Bytes():]); err != nil {
			return err
		}
		i++
	}
	if i != len(s.gdn) || j != len(s.kv) {
		return fmt.Errorf("snapshot does not match this cache's layout")
	}
	k.Offset = s.Offset
	return nil
}

// SnapshotState is Snapshot without the keys and values: enough to roll the
// cache back to Offset while the keys below Offset stay as they are (a
// speculative verify that wrote past it).
func (k *Cache) SnapshotState(c *ops.Ctx) (*Snapshot, error) {
	s := &Snapshot{Offset: k.Offset}
	for _, l := range k.layers {
		if l.conv.Buf == nil {
			continue
		}
		conv, err := ops.ReadBytes(c, l.conv)
		if err != nil {
			return nil, err
		}
		state, err := ops.ReadBytes(c, l.state)
		if err != nil {
			return nil, err
		}
		s.gdn = append(s.gdn, append(conv, state...))
	}
	s.stateOnly = true
	return s, nil
}
