package qwen

import (
	"fmt"

	"bagel/ops"
)

// Snapshot is a cache's state after Offset tokens, kept on the host: the GDN
// layers' conv windows and recurrent states, which cannot be rewound (a
// recurrence forgets), and the length. The attention layers' keys and values
// need no copy: those of the first Offset tokens are not overwritten by what
// follows, so restoring the length rewinds them.
type Snapshot struct {
	Offset int
	gdn    [][]byte // per GDN layer: conv window bytes, then state bytes
}

// Bytes is the host memory the snapshot holds.
func (s *Snapshot) Bytes() int64 {
	var n int64
	for _, b := range s.gdn {
		n += int64(len(b))
	}
	return n
}

// Snapshot copies the cache's state to the host (one read per GDN tensor: at
// Qwen3.5-35B-A3B's shapes 30 layers of 2 MB). Call it between forwards.
func (k *Cache) Snapshot(c *ops.Ctx) (*Snapshot, error) {
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
	return s, nil
}

// Restore puts the cache back to the state s was taken in. The snapshot must
// come from this cache (the same model and capacity).
func (k *Cache) Restore(c *ops.Ctx, s *Snapshot) error {
	if s.Offset > k.Capacity {
		return fmt.Errorf("snapshot after %d tokens does not fit a cache of %d", s.Offset, k.Capacity)
	}
	i := 0
	for _, l := range k.layers {
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
	if i != len(s.gdn) {
		return fmt.Errorf("snapshot does not match this cache's layout")
	}
	k.Offset = s.Offset
	return nil
}
