package qwen

import (
	"fmt"
	"slices"

	"bagel/ops"
)

// MaxBatch is the most sequences one batched decode step runs: the step
// path's matrix-unit launches serve up to 16 rows (ops.MoEDownTiledTokens,
// the split-KV partials' queries), and a batch stays on them.
const MaxBatch = 16

// ForwardBatch is one decode step of several sequences: tokens[b] runs at
// caches[b]'s position and enters that cache. It returns logits f32 [B,
// vocab], row b sequence b's, in scratch (read them before the next forward).
// The projections, the experts and the head read each weight once for every
// row; each sequence's attention and GDN rule run on its own state (one
// launch for all of them where their caches share a pool). A row
// takes the kernels a plain step of its sequence takes, so it gets that
// step's bits (the engine's tests hold it to Forward token for token).
func (m *Model) ForwardBatch(c *ops.Ctx, caches []*Cache, tokens []int32) (ops.Tensor, error) {
	if len(tokens) != len(caches) {
		return ops.Tensor{}, fmt.Errorf("batched step: %d tokens for %d sequences", len(tokens), len(caches))
	}
	if err := m.checkIDs(tokens); err != nil {
		return ops.Tensor{}, err
	}
	return m.forwardBatch(c, caches, ones(len(caches)), tokens, ops.Tensor{}, true)
}

// ForwardBatchIDs is ForwardBatch on tokens already on the device, ids i32
// [B] (the last step's picks, where the decode pipeline leaves them).
func (m *Model) ForwardBatchIDs(c *ops.Ctx, caches []*Cache, ids ops.Tensor) (ops.Tensor, error) {
	if ids.DType != ops.I32 || ids.Elements() != len(caches) {
		return ops.Tensor{}, fmt.Errorf("batched step: ids %v for %d sequences", ids, len(caches))
	}
	return m.forwardBatch(c, caches, ones(len(caches)), nil, ids, true)
}

// ones is n counts of one row.
func ones(n int) []int {
	counts := make([]int, n)
	for i := range counts {
		counts[i] = 1
	}
	return counts
}

// forwardBatch runs counts[b] rows of caches[b]'s sequence, the sequences'
// rows one after the other (tokens from the host, or devIDs on the device),
// and returns the logits of every row (with logits false, the final hidden
// rows under the final norm, bf16 [R, hidden]: a prompt's rows need no
// logits, and on the plain GEMVs each row's would read the head again).
// Where the caches share a pool, each layer's conv, GDN rule, attention
// preamble and attention take one launch each for all rows (a verify's rows
// too: its tokens one after the other through its slot's state) but a draft
// tree's, which come last and take the tree's launches; otherwise each
// sequence takes its own. A sequence of more rows (a verify) has its GDN
// inputs recorded in the model's batch record for ReplayGDN.
func (m *Model) forwardBatch(c *ops.Ctx, caches []*Cache, counts []int, tokens []int32, devIDs ops.Tensor, logits bool) (ops.Tensor, error) {
	if err := checkBatch(caches, counts); err != nil {
		return ops.Tensor{}, err
	}
	ids, err := m.takeIDs(c, tokens, devIDs)
	if err != nil {
		return ops.Tensor{}, err
	}
	n := 0 // the leading sequences without a draft tree (ForwardTrees puts trees last)
	for n < len(caches) && m.treeOf(n) == nil {
		n++
	}
	if p := poolOf(caches[:n]); p != nil && n > 1 {
		if m.pooled, err = newPoolStep(c, p, caches[:n], counts[:n]); err != nil {
			return ops.Tensor{}, err
		}
		defer func() { m.pooled = nil }()
	}
	if slices.ContainsFunc(counts, func(n int) bool { return n > 1 }) {
		if err := m.armBatchRecord(c); err != nil {
			return ops.Tensor{}, err
		}
		defer func() { m.recording = false }()
	}
	normed, err := m.run(c, ids, caches, counts, nil)
	if err != nil {
		return ops.Tensor{}, err
	}
	out := normed
	if logits {
		out = m.logits(c, normed)
	}
	m.keepMTP(c, caches, counts, ids, normed)
	row := 0
	for i, k := range caches {
		k.Offset += counts[i]
		k.Disarm()
		k.replay = nil
		if counts[i] > 1 {
			k.replayRows(m, row, counts[i])
		}
		row += counts[i]
	}
	return out, nil
}

// checkBatch refuses a batched step the step kernels do not serve: no
// sequences, more than MaxBatch rows, a sequence of more rows than a record
// holds, a cache that cannot take its rows or that two sequences share.
func checkBatch(caches []*Cache, counts []int) error {
	if len(caches) == 0 {
		return fmt.Errorf("batched step: no sequences")
	}
	rows := 0
	for i, k := range caches {
		if counts[i] < 1 || counts[i] > RecordRows {
			return fmt.Errorf("batched step: sequence %d has %d tokens, want 1 to %d", i, counts[i], RecordRows)
		}
		rows += counts[i]
		if k.Offset+counts[i] > k.Capacity {
			return fmt.Errorf("context full: sequence %d is at %d of its %d tokens", i, k.Offset, k.Capacity)
		}
		for _, other := range caches[:i] {
			if other == k {
				return fmt.Errorf("batched step: sequence %d shares its cache with another", i)
			}
		}
	}
	if rows > MaxBatch {
		return fmt.Errorf("batched step: %d tokens of %d sequences, at most %d", rows, len(caches), MaxBatch)
	}
	return nil
}

// poolStep is a batched step's sequences in one pool: the tables the *_batch
// kernels read, and the layer's slot-0 views they start from.
type poolStep struct {
	pool    *CachePool
	runs    ops.Tensor  // i32 [B, 3]: sequence b's slot, first row and rows (the conv's and GDN rule's)
	seqs    ops.Tensor  // i32 [R, 3]: row r's slot, cache row and rotary position (the attention's)
	base    *layerCache // slot 0's, for the layer under way (run sets it)
	kvBytes int         // between two slots' keys: the layers' (pool.kvBytes) or the MTP head's
}

// newPoolStep writes the step's tables (scratch of the forward) for caches,
// counts[b] rows of caches[b].
func newPoolStep(c *ops.Ctx, p *CachePool, caches []*Cache, counts []int) (*poolStep, error) {
	pos, shifts := make([]int, len(caches)), make([]int, len(caches))
	for b, k := range caches {
		pos[b], shifts[b] = k.Offset, k.ropeShift
	}
	return p.step(c, "forward", caches, pos, shifts, counts, p.kvBytes)
}

// step writes the tables of rows of caches in p (scratch named name.runs
// and name.seqs): counts[b] rows of caches[b] at cache rows pos[b].., rotated
// at pos[b] + shifts[b]...
func (p *CachePool) step(c *ops.Ctx, name string, caches []*Cache, pos, shifts, counts []int, kvBytes int) (*poolStep, error) {
	var runs, seqs []int32
	row := 0
	for b, k := range caches {
		if counts[b] > ops.RunMaxRows {
			return nil, fmt.Errorf("batched step: sequence %d has %d tokens, at most %d", b, counts[b], ops.RunMaxRows)
		}
		runs = append(runs, int32(k.slot), int32(row), int32(counts[b]))
		for j := range counts[b] {
			seqs = append(seqs, int32(k.slot), int32(pos[b]+j), int32(pos[b]+shifts[b]+j))
		}
		row += counts[b]
	}
	st := &poolStep{pool: p, runs: c.Scratch.Get(name+".runs", ops.I32, len(caches), 3), seqs: c.Scratch.Get(name+".seqs", ops.I32, row, 3),
		kvBytes: kvBytes}
	if err := ops.WriteInt32(c, st.runs, runs); err != nil {
		return nil, err
	}
	return st, ops.WriteInt32(c, st.seqs, seqs)
}

// convStride and stateStride are the elements between two slots' GDN conv
// windows (bf16) and states (f32); kvStride between their keys (bf16).
// sequences and rows are how many of the step's sequences, and of its
// rows, the pool's launches take: the first.
func (p *poolStep) sequences() int { return p.runs.Shape[0] }
func (p *poolStep) rows() int      { return p.seqs.Shape[0] }

func (p *poolStep) convStride() int  { return 2 * p.pool.slotWords }
func (p *poolStep) stateStride() int { return p.pool.slotWords }
func (p *poolStep) kvStride() int    { return p.kvBytes / p.base.keys.DType.Size() }
