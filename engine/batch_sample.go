package engine

import (
	"fmt"
	"math"
	"slices"

	"bagel/ops"
)

// A batch's picks: each reply's sampler on its row (its rows, for a
// verify) of a step's logits, the device's top k of every row read in one
// read.

// drawsNow says whether s's pick this step is drawn on the device: a reply
// drawn there (drawsOnDevice), unless it drafts: a lone reply's speculative
// steps draw on the host (stepSampled), all but its first token and the
// token at its context's end (Generate's advance), and a batched one draws
// as it does.
func (s *batchSeq) drawsNow() bool {
	if !s.draw {
		return false
	}
	return s.spec == nil || s.st.GeneratedTokens == 0 || s.cache.Offset+2 > s.cache.Capacity
}

// drawRows draws the token of each sequence of step that draws on the
// device, from its row of logits (starts[i]) with its generator's next
// uniform, as it would alone (drawRow), over its row's first candidate in
// back (the step's top k, k a row): the host reads every row's pick in one
// read.
func (e *Engine) drawRows(step []*batchSeq, logits ops.Tensor, starts []int, back ops.Tensor, k int) {
	for i, s := range step {
		if s.drawing {
			r := starts[i]
			e.drawRow(logits.Rows(r, r+1), s.smp.s, s.smp.uniform(), ops.View(back, 4*r*k, ops.I32, []int{1}))
		}
	}
}

// readsLogits says whether s's picks read its row's logits to the host,
// as a lone reply's hostPicker does: for the presence and frequency
// penalties, or for the log-probabilities the request asks for.
func (s *batchSeq) readsLogits() bool { return s.req.Logprobs || s.smp.s.additive() }

// candidates is how many best logits s's sampler needs from the device.
func (s *batchSeq) candidates() int {
	sm := s.smp.s
	switch {
	case sm.Temperature == 0 || s.readsLogits() || s.drawing:
		return 1
	case sm.TopK > 0 && sm.TopK <= ops.TopKMax:
		return sm.TopK
	}
	return ops.TopKMax
}

// penaltyNames are the scratch names of a step's rows' penalized ids.
var penaltyNames = func() (names [MaxBatch]string) {
	for i := range names {
		names[i] = fmt.Sprintf("batch.penalized.%d", i)
	}
	return names
}()

// penalizeRows applies each sequence's repetition penalty to its rows of
// logits on the device: a verify's row j with the window its guesses
// before j extend (as a lone reply's sampled verify, stepSampled).
func penalizeRows(step []*batchSeq, logits ops.Tensor, starts []int, drafts [][]int32) error {
	for i, s := range step {
		for j := range 1 + len(drafts[i]) {
			r := starts[i] + j
			if err := s.penalize(logits.Rows(r, r+1), r, drafts[i][:j]); err != nil {
				return err
			}
		}
	}
	return nil
}

// penalize applies s's repetition penalty to row r of logits on the device,
// its window the history and then guesses.
func (s *batchSeq) penalize(row ops.Tensor, r int, guesses []int32) error {
	p := s.smp.s.RepetitionPenalty
	if p == 0 || p == 1 || s.readsLogits() { // the host's sampler applies it (pick)
		return nil
	}
	e := s.g.e
	ids := s.smp.penalizedIDs(append(slices.Clone(s.history), guesses...))
	pen := e.scratch.Get(penaltyNames[r], ops.I32, len(ids))
	if err := ops.WriteInt32(e.ctx, pen, ids); err != nil {
		return err
	}
	ops.RepetitionPenalty(e.ctx, row, pen, float32(p))
	return nil
}

// pick chooses s's next token from c, its row's best logits (penalized), or
// from row itself where its sampler needs them all.
func (s *batchSeq) pick(row ops.Tensor, c candidates) (int32, error) {
	e, sm := s.g.e, s.smp.s
	if math.IsNaN(c.lse) || math.IsInf(c.lse, 0) {
		return 0, errNonFinite
	}
	switch {
	case s.readsLogits():
		return s.pickOnHost(row)
	case sm.Temperature == 0 || s.drawing: // the device's pick, or its draw (drawRows)
		return c.greedy()
	case !(sm.TopK > 0 && sm.TopK <= ops.TopKMax) && !c.coversFilters(sm, e.Config.VocabSize):
		logits, err := s.readRow(row)
		if err != nil {
			return 0, err
		}
		return int32(s.smp.draw(logits)), nil // penalized on the device already
	}
	if sm.TopK > 0 && len(c.ids) > sm.TopK {
		c = c.first(sm.TopK)
	}
	return s.smp.sampleTop(c), nil
}

// pickOnHost picks s's token from its row's raw logits as a lone reply's
// hostPicker does: the sampler's penalties applied on the host, and where
// the request asks for them the log-probabilities of the raw logits (kept
// for the token's event).
func (s *batchSeq) pickOnHost(row ops.Tensor) (int32, error) {
	logits, err := s.readRow(row)
	if err != nil {
		return 0, err
	}
	if !s.req.Logprobs {
		return s.smp.sample(logits, s.history), nil
	}
	e := s.g.e
	lse, top := e.logprobsOf(logits, s.req.TopLogprobs)
	raw := slices.Clone(logits) // the sampler's penalties change logits
	id := s.smp.sample(logits, s.history)
	s.logprobs = &TokenLogprobs{TokenLogprob: e.tokenLogprob(id, float64(raw[id])-lse), Top: top}
	return id, nil
}

// readRow reads a row of logits to the host, refused where one is not finite.
func (s *batchSeq) readRow(row ops.Tensor) ([]float32, error) {
	logits, err := ops.ReadF32(s.g.e.ctx, row)
	if err != nil {
		return nil, err
	}
	if !finiteLogits(logits) {
		return nil, errNonFinite
	}
	return logits, nil
}

// first is c cut to its k best.
func (c candidates) first(k int) candidates {
	return candidates{ids: c.ids[:k], logits: c.logits[:k], lse: c.lse}
}
