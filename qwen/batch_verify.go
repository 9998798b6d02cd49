package qwen

import (
	"fmt"

	"bagel/ops"
)

// A speculative verify riding in a batched step: a sequence whose drafter
// guessed runs its newest token and the guesses as rows of the step, beside
// the other sequences' one token each. The projections, the experts and the
// head read each weight once for all the step's rows; where the sequences'
// caches share a pool, the verifying sequence's conv, GDN rule (its tokens
// one after the other) and attention (each row over its own keys) run in
// the same launches as the others', its rows getting the bits of its
// decode steps. Its GDN inputs go to the model's batch record, a record of
// MaxBatch rows per GDN layer that every sequence of the step writes its
// rows into, so that a rollback replays a kept prefix from there
// (Cache.ReplayGDN), as a lone verify's does from the cache's own record.

// The batch record holds every row of a step.
var _ [RecordRows - MaxBatch]struct{}

// ForwardRows is a batched step in which sequence b runs rows[b]: its next
// token, then the guesses a drafter made after it (1 to RecordRows tokens;
// MaxBatch in all). It returns the logits f32 [R, vocab] of every row (R the
// rows in all) and, for each sequence, the row its first token has; the
// rows of a sequence follow one another. Each cache grows by its rows. A
// sequence of more than one row is recorded: after Cache.Restore of a
// SnapshotState taken before the step, Cache.ReplayGDN brings it to a
// prefix of its rows, until the next batched step overwrites the record.
func (m *Model) ForwardRows(c *ops.Ctx, caches []*Cache, rows [][]int32) (ops.Tensor, []int, error) {
	return m.ForwardTrees(c, caches, rows, nil)
}

// ForwardPromptRows is ForwardRows for chunks of prompts: sequence b runs
// rows[b], its prompt's next tokens, and it returns their final hidden
// rows under the final norm, bf16 [R, hidden], without the logits; each
// row's sums are those a decode step of its token gets (the step kernels),
// so a chunk leaves its cache as its own Forward of it does on the same
// kernels.
func (m *Model) ForwardPromptRows(c *ops.Ctx, caches []*Cache, rows [][]int32) (ops.Tensor, error) {
	if len(rows) != len(caches) {
		return ops.Tensor{}, fmt.Errorf("batched step: %d token lists for %d sequences", len(rows), len(caches))
	}
	counts := make([]int, len(rows))
	var tokens []int32
	for b, r := range rows {
		if err := m.checkIDs(r); err != nil {
			return ops.Tensor{}, err
		}
		counts[b] = len(r)
		tokens = append(tokens, r...)
	}
	return m.forwardBatch(c, caches, counts, tokens, ops.Tensor{}, false)
}

// ForwardTrees is ForwardRows in which a sequence's rows may be a draft
// tree: parents[b], where set, the flattened parents of rows[b] as
// ForwardTree takes them (rows[b][0] the root, its next token). Such a
// sequence's GDN windows and states stay as they were, each node sees its
// own path, and Cache.CommitTree keeps a path of it, from its rows of the
// batch record, as after ForwardTree.
func (m *Model) ForwardTrees(c *ops.Ctx, caches []*Cache, rows [][]int32, parents [][]int) (ops.Tensor, []int, error) {
	if len(rows) != len(caches) || parents != nil && len(parents) != len(caches) {
		return ops.Tensor{}, nil, fmt.Errorf("batched step: %d token lists and %d trees for %d sequences", len(rows), len(parents), len(caches))
	}
	// Draft trees last: the pool's launches take the other sequences, rows
	// 0..n−1.
	isTree := func(b int) bool { return parents != nil && parents[b] != nil && len(rows[b]) > 1 } // (a root alone is a plain step)
	order := make([]int, 0, len(rows))
	for _, tree := range []bool{false, true} {
		for b := range rows {
			if isTree(b) == tree {
				order = append(order, b)
			}
		}
	}
	ordered, counts := make([]*Cache, len(order)), make([]int, len(order))
	starts := make([]int, len(rows))
	var tokens []int32
	var trees []*treeStep
	for i, b := range order {
		if err := m.checkIDs(rows[b]); err != nil {
			return ops.Tensor{}, nil, err
		}
		ordered[i], counts[i], starts[b] = caches[b], len(rows[b]), len(tokens)
		tokens = append(tokens, rows[b]...)
		if !isTree(b) {
			continue
		}
		if err := m.checkTreeOf(rows[b], parents[b]); err != nil {
			return ops.Tensor{}, nil, err
		}
		tr, err := writeTree(c, caches[b], parents[b], i)
		if err != nil {
			return ops.Tensor{}, nil, err
		}
		trees = append(trees, make([]*treeStep, i+1-len(trees))...)
		trees[i] = tr
	}
	m.trees = trees
	defer func() { m.trees = nil }()
	logits, err := m.forwardBatch(c, ordered, counts, tokens, ops.Tensor{}, true)
	return logits, starts, err
}

// armBatchRecord readies the batch record (allocated on first use) for the
// step under way: the GDN layers then write their inputs there.
func (m *Model) armBatchRecord(c *ops.Ctx) error {
	if m.batchRecord == nil {
		records, err := m.newRecords(c)
		if err != nil {
			return err
		}
		m.batchRecord = records
	}
	m.recording = true
	return nil
}

// BatchRecordBytes is the device memory the batch record holds (zero until
// a batched step first carried a verify).
func (m *Model) BatchRecordBytes() int64 { return recordBytes(m.batchRecord) }

// freeBatchRecord releases the batch record.
func (m *Model) freeBatchRecord(c *ops.Ctx) {
	freeRecords(c, m.batchRecord)
	m.batchRecord = nil
}

// batchInputs are the GDN in-projections' outputs of a batched step's t
// rows: the layer's rows of the batch record while the step records, else
// scratch.
func (g *gatedDeltaNet) batchInputs(c *ops.Ctx, t int, shape ops.GDNShape) (qkv, z, b, a ops.Tensor) {
	if rs := g.shared.records; rs != nil {
		r := rs[g.index]
		return r.qkv.Rows(0, t), r.z.Rows(0, t), r.b.Rows(0, t), r.a.Rows(0, t)
	}
	s := c.Scratch
	return s.Get("gdn.qkv", ops.BF16, t, shape.ConvDim()), s.Get("gdn.z", ops.BF16, t, shape.Hv, shape.Dv),
		s.Get("gdn.b", ops.BF16, t, shape.Hv), s.Get("gdn.a", ops.BF16, t, shape.Hv)
}

// replayRows points the cache's replay at rows from..from+n of the batch
// record: its rows of the step just run.
func (k *Cache) replayRows(m *Model, from, n int) {
	if len(k.batchReplay) != len(m.batchRecord) {
		k.batchReplay = make([]*gdnRecord, len(m.batchRecord))
		for i, r := range m.batchRecord {
			if r != nil {
				k.batchReplay[i] = &gdnRecord{}
			}
		}
	}
	for i, r := range m.batchRecord {
		if r == nil {
			continue
		}
		*k.batchReplay[i] = gdnRecord{qkv: r.qkv.Rows(from, from+n), z: r.z.Rows(from, from+n),
			a: r.a.Rows(from, from+n), b: r.b.Rows(from, from+n), tokens: n}
	}
	k.replay = k.batchReplay
}
