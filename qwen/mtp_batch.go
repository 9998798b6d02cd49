package qwen

import (
	"fmt"
	"slices"

	"bagel/ops"
)

// MTPDraftBatch is MTPDraft for the sequences of a batch at once: lasts[b]
// is the token after caches[b]'s last position, and each link of the chain
// runs the head once for every sequence still drafting (a row each, each
// over its own head cache: the head's weights read once for all of them),
// pick choosing every row's guess from the logits f32 [R, vocab] together
// (one read where a sequence alone took one). Each sequence drafts up to k
// guesses, fewer where its cache's capacity ends; every cache must be
// MTPReady.
func (m *Model) MTPDraftBatch(c *ops.Ctx, caches []*Cache, lasts []int32, k int, pick func(logits ops.Tensor) ([]int32, error)) ([][]int32, error) {
	if len(lasts) != len(caches) {
		return nil, fmt.Errorf("MTP draft: %d tokens for %d sequences", len(lasts), len(caches))
	}
	for b, cache := range caches {
		if !m.MTPReady(cache) {
			return nil, fmt.Errorf("MTP draft: sequence %d's head is not in step", b)
		}
	}
	s, hid := c.Scratch, m.Cfg.HiddenSize
	drafts := make([][]int32, len(caches))
	ids := append([]int32(nil), lasts...)
	live := make([]int, len(caches)) // the sequences drafting, in row order
	for b := range live {
		live[b] = b
	}
	var prev ops.Tensor // the last link's output rows, live's order before it shrank
	var prevLive []int
	for i := 0; i < k; i++ {
		next := live[:0:0]
		for _, b := range live {
			if caches[b].Offset+i+1 < caches[b].Capacity && ids[b] >= 0 && int(ids[b]) < m.Cfg.VocabSize {
				next = append(next, b)
			}
		}
		if len(next) == 0 {
			break
		}
		s.Scope("mtp.draft") // the last link's tensors are dead: its guesses were picked
		rowIDs, hidden := s.Get("mtp.ids", ops.I32, len(next)), s.Get("mtp.batch_hidden", ops.BF16, len(next), hid)
		seqs := make([]seq, len(next))
		want := make([]int32, len(next))
		for r, b := range next {
			// The hidden state each continues from: its cache's after its
			// last position, then its last link's output row (copied
			// before the link below overwrites it, in stream order).
			from := caches[b].mtpHidden
			if i > 0 {
				j := slices.Index(prevLive, b)
				from = prev.Rows(j, j+1)
			}
			ops.Copy(c, from, hidden.Rows(r, r+1))
			seqs[r], want[r] = seq{st: &caches[b].mtp, pos0: caches[b].Offset - 1 + i, rows: 1}, ids[b]
		}
		if err := ops.WriteInt32(c, rowIDs, want); err != nil {
			return nil, err
		}
		pooled, err := m.headStep(c, cachesAt(caches, next), seqs)
		if err != nil {
			return nil, err
		}
		out := m.mtpForwardSeqs(c, seqs, pooled, hidden, rowIDs)
		logits := s.Get("mtp.logits", ops.F32, len(next), m.Cfg.VocabSize)
		ops.LinearStep(c, out, m.lmHead, logits)
		picks, err := pick(logits)
		if err != nil {
			return nil, err
		}
		if len(picks) != len(next) {
			return nil, fmt.Errorf("MTP draft: %d picks for %d rows", len(picks), len(next))
		}
		for r, b := range next {
			drafts[b] = append(drafts[b], picks[r])
			ids[b] = picks[r]
		}
		prev, prevLive, live = out, next, next
	}
	return drafts, nil
}

// keepMTP keeps the MTP heads of a batched step's caches in step with
// their rows (counts[b] rows of caches[b], one after the other in ids i32
// [R] and final bf16 [R, hidden]), as a plain forward's mtpUpdate does
// while MTPOn: the head's layer once over every sequence's rows
// (mtpForwardSeqs), a row pairing the sequence's hidden state before it
// with its token; then each cache keeps its last row, and a verify's rows
// for RewindMTP. A cache whose head cannot be kept (MTPOn off, an image's
// rotary shift) falls out of step.
func (m *Model) keepMTP(c *ops.Ctx, caches []*Cache, counts []int, ids, final ops.Tensor) {
	if m.mtp == nil {
		return
	}
	s := c.Scratch
	mark := s.Scope("mtp.batch")
	defer s.Rewind(mark)
	var kept, starts []int
	n, row := 0, 0
	for b, k := range caches {
		switch {
		case !m.MTPOn || k.mtp.keys.Buf == nil || k.ropeShift != 0 || m.treeOf(b) != nil: // a tree's rows are no sequence
			k.mtpStale = true
		case k.Offset == 0: // a sequence's first token: no row before it to pair
			m.mtpUpdate(c, k, ids.Rows(row, row+counts[b]), final.Rows(row, row+counts[b]), 0, counts[b])
		default:
			kept, starts = append(kept, b), append(starts, row)
			n += counts[b]
		}
		row += counts[b]
	}
	if len(kept) == 0 {
		return
	}
	hidden, rowIDs := s.Get("mtp.batch_rows", ops.BF16, n, m.Cfg.HiddenSize), s.Get("mtp.batch_ids", ops.I32, n)
	seqs := make([]seq, len(kept))
	at := 0
	for j, b := range kept {
		k, t, r0 := caches[b], counts[b], starts[j]
		ops.Copy(c, k.mtpHidden, hidden.Rows(at, at+1))
		if t > 1 {
			ops.Copy(c, final.Rows(r0, r0+t-1), hidden.Rows(at+1, at+t))
		}
		ops.Copy(c, ids.Rows(r0, r0+t), rowIDs.Rows(at, at+t))
		seqs[j] = seq{st: &k.mtp, pos0: k.Offset - 1, rows: t}
		at += t
	}
	pooled, err := m.headStep(c, cachesAt(caches, kept), seqs)
	if err != nil { // a sequence of more rows than a batched step takes: a launch each
		pooled = nil
	}
	m.mtpForwardSeqs(c, seqs, pooled, hidden, rowIDs)
	for j, b := range kept {
		k, t, r0 := caches[b], counts[b], starts[j]
		ops.Copy(c, final.Rows(r0+t-1, r0+t), k.mtpHidden)
		if t <= mtpRows {
			ops.Copy(c, final.Rows(r0, r0+t), k.mtpKept.Rows(0, t))
		}
	}
}

// headStep is the tables of a head forward over seqs, the head caches of
// caches one each, where the caches share a pool and are several: the
// head's attention then runs in one launch of the batch kernels for all of
// them, as a batched step's layers do. nil otherwise. The rows sit at each
// seq's pos0, rotated there (keepMTP leaves a shifted cache's head out of
// step, so MTPDraftBatch never sees one).
func (m *Model) headStep(c *ops.Ctx, caches []*Cache, seqs []seq) (*poolStep, error) {
	p := poolOf(caches)
	if p == nil || len(caches) < 2 || p.mtpKV[0].Buf == nil {
		return nil, nil
	}
	pos, counts := make([]int, len(seqs)), make([]int, len(seqs))
	for b, sq := range seqs {
		pos[b], counts[b] = sq.pos0, sq.rows
	}
	st, err := p.step(c, "mtp", caches, pos, make([]int, len(seqs)), counts, p.mtpBytes)
	if err != nil {
		return nil, err
	}
	st.base = &p.caches[0].mtp
	return st, nil
}

// cachesAt is caches[b] for each b of idx, in idx's order.
func cachesAt(caches []*Cache, idx []int) []*Cache {
	out := make([]*Cache, len(idx))
	for i, b := range idx {
		out[i] = caches[b]
	}
	return out
}
