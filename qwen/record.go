package qwen

import (
	"fmt"

	"bagel/ops"
)

// A speculative verify runs the newest token and the drafter's guesses in one
// forward; when only the first n of its T tokens are kept, the cache must be
// brought back to n tokens. Attention layers go back by length (the keys and
// values of the kept tokens are already in place). The GDN layers cannot: the
// engine restores their states from a snapshot taken before the verify and
// replays the rule over the n kept tokens. The rule's inputs are what the
// layer's input projections produced during the verify, which an armed record
// keeps, so the replay runs the conv and the rule alone (three or four small
// launches per GDN layer) instead of a forward of the whole model.

// RecordRows is the most tokens a verify record holds: a verify of the newest
// token and up to 15 guesses.
const RecordRows = 16

// gdnRecord is one GDN layer's in_proj outputs of the last recorded forward.
type gdnRecord struct {
	qkv    ops.Tensor // bf16 [RecordRows, ConvDim]
	z      ops.Tensor // bf16 [RecordRows, Hv, Dv]
	a, b   ops.Tensor // bf16 [RecordRows, Hv]
	tokens int        // rows the last forward wrote
}

// ArmRecord makes the next Forward (of at most RecordRows tokens, on the GEMV
// path) keep every GDN layer's in_proj outputs for ReplayGDN; the record's
// buffers are allocated on first use. Disarm stops recording.
func (k *Cache) ArmRecord(c *ops.Ctx, m *Model) error {
	if k.records == nil {
		records, err := m.newRecords(c)
		if err != nil {
			return err
		}
		k.records = records
	}
	for i, r := range k.records {
		if r != nil {
			r.tokens = 0
			k.layers[i].record = r
		}
	}
	k.replay = k.records
	return nil
}

// newRecords allocates a record of RecordRows rows for every GDN layer (nil
// for the attention layers).
func (m *Model) newRecords(c *ops.Ctx) ([]*gdnRecord, error) {
	shape := (&gatedDeltaNet{}).shape(m.Cfg)
	records := make([]*gdnRecord, m.Cfg.NumLayers)
	for i := range records {
		if m.Cfg.IsAttention(i) {
			continue
		}
		r := &gdnRecord{}
		records[i] = r
		for _, b := range []struct {
			t     *ops.Tensor
			shape []int
		}{
			{&r.qkv, []int{RecordRows, shape.ConvDim()}}, {&r.z, []int{RecordRows, shape.Hv, shape.Dv}},
			{&r.a, []int{RecordRows, shape.Hv}}, {&r.b, []int{RecordRows, shape.Hv}},
		} {
			t, err := ops.Alloc(c, ops.BF16, b.shape...)
			if err != nil {
				freeRecords(c, records)
				return nil, fmt.Errorf("verify record: %w", err)
			}
			*b.t = t
		}
	}
	return records, nil
}

// Disarm stops recording; the last record stays for ReplayGDN.
func (k *Cache) Disarm() {
	for i := range k.layers {
		k.layers[i].record = nil
	}
}

// ReplayGDN advances every GDN layer's conv window and state by the first n
// tokens of the last recorded forward and the cache's length by n: after a
// Restore of the snapshot taken before that forward, the cache is then
// exactly as a forward of those n tokens would have left it (the same kernels
// on the same inputs), the attention layers' keys and values being those the
// recorded forward wrote.
func (k *Cache) ReplayGDN(c *ops.Ctx, m *Model, n int) error {
	if n <= 0 || k.Offset+n > k.Capacity {
		return fmt.Errorf("replay of %d tokens at position %d in a cache of %d", n, k.Offset, k.Capacity)
	}
	if k.replay == nil {
		return fmt.Errorf("replay of %d tokens: the last forward recorded nothing", n)
	}
	for i, r := range k.replay {
		if r == nil {
			continue
		}
		if r.tokens < n {
			return fmt.Errorf("replay of %d tokens: layer %d recorded %d", n, i, r.tokens)
		}
		g, ok := m.layers[i].mixer.(*gatedDeltaNet)
		if !ok {
			return fmt.Errorf("replay: layer %d is not a GDN layer", i)
		}
		layer := c.Scratch.Scope("layer") // as a forward's layers take turns
		g.rule(c, m.Cfg, &k.layers[i], r.qkv.Rows(0, n), r.z.Rows(0, n), r.a.Rows(0, n), r.b.Rows(0, n))
		c.Scratch.Rewind(layer)
	}
	k.Offset += n
	return nil
}

// Replayable reports whether the last recorded forward can be replayed over n
// tokens (it recorded at least n in every GDN layer).
func (k *Cache) Replayable(n int) bool {
	if k.replay == nil {
		return false
	}
	for _, r := range k.replay {
		if r != nil && r.tokens < n {
			return false
		}
	}
	return true
}

func (k *Cache) freeRecords(c *ops.Ctx) {
	freeRecords(c, k.records)
	k.records, k.replay = nil, nil
}

// freeRecords releases records' buffers.
func freeRecords(c *ops.Ctx, records []*gdnRecord) {
	for _, r := range records {
		if r == nil {
			continue
		}
		for _, t := range []ops.Tensor{r.qkv, r.z, r.a, r.b} {
			if t.Buf != nil {
				ops.Free(c, t)
			}
		}
	}
}

// recordBytes is the device memory of records.
func recordBytes(records []*gdnRecord) int64 {
	var n int64
	for _, r := range records {
		if r != nil {
			n += int64(r.qkv.Bytes() + r.z.Bytes() + r.a.Bytes() + r.b.Bytes())
		}
	}
	return n
}
