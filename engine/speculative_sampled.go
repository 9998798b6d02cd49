package engine

import (
	"math"
	"slices"
	"time"

	"bagel/ops"
	"bagel/qwen"
)

// Speculative decoding for sampled replies (temperature > 0 with a top-k, the
// candidates picked on the device; a repetition penalty is applied to each
// position's logits with the history that position has): the standard
// rejection rule with a drafter that proposes one token per position for sure.
// At a position whose sampling distribution (temperature, top-k, top-p, min-p)
// is p, a guess d is kept with probability p(d); when it is not, the token is
// drawn from p with d taken out (the residual, renormalised), and the step
// ends there; after the last kept guess a bonus token is drawn from the next
// position's p. Every token is then distributed exactly as plain sampling
// draws it: P(x) = [x = d]·p(d) + (1 − p(d))·p(x)[x ≠ d]/(1 − p(d)) = p(x).

// stepSampled is step for a sampled reply: k is the device's top-k; history
// is what the sampler's repetition penalty looks back on (last included).
func (s *speculator) stepSampled(context []int32, last int32, room int, smp *sampler, k int, history []int32) (out []int32, proposed, accepted int, err error) {
	e := s.e
	drafts := s.validDrafts(context, room)
	penalty := float32(smp.s.RepetitionPenalty)
	penalized := func(i int) []int32 { // position i's window: history and the first i guesses
		if penalty == 0 || penalty == 1 {
			return nil
		}
		return smp.penalizedIDs(append(slices.Clone(history), drafts[:i]...))
	}
	if len(drafts) == 0 {
		c, err := e.forwardTopK([]int32{last}, k, penalized(0), penalty)
		if err != nil {
			return nil, 0, 0, err
		}
		if math.IsNaN(c.lse) || math.IsInf(c.lse, 0) {
			return nil, 0, 0, errNonFinite
		}
		return []int32{smp.sampleTop(c)}, 0, 0, nil
	}
	var before *qwen.Snapshot
	var pen [][]int32
	if penalized(0) != nil {
		for i := range len(drafts) + 1 {
			pen = append(pen, penalized(i))
		}
	}
	rows, err := e.forwardTopKAll(append([]int32{last}, drafts...), k, pen, penalty, s.beforeVerify(&before))
	if err != nil {
		return nil, 0, 0, err
	}
	out, kept, err := smp.verifySampled(drafts, rows)
	if err != nil {
		return nil, 0, 0, err
	}
	if kept < len(drafts) {
		if err := s.rollback(before, last, drafts[:kept]); err != nil {
			return nil, 0, 0, err
		}
	}
	return out, len(drafts), kept, nil
}

// verifySampled applies the rejection rule to drafts, the guesses after a
// verify's first row, with rows each row's candidates (cut to the top-k):
// the tokens the step adds (the kept guesses, then a draw from the residual
// where one is not kept, or the bonus draw after the last) and how many
// guesses it kept.
func (p *sampler) verifySampled(drafts []int32, rows []candidates) ([]int32, int, error) {
	row := func(i int) (candidates, error) {
		c := rows[i]
		if math.IsNaN(c.lse) || math.IsInf(c.lse, 0) {
			return c, errNonFinite
		}
		if k := p.s.TopK; k > 0 && len(c.ids) > k {
			c = c.first(k)
		}
		return c, nil
	}
	for i, d := range drafts {
		c, err := row(i)
		if err != nil {
			return nil, 0, err
		}
		ids, probs := p.candidateDistribution(c)
		if tok, kept := p.acceptOrResample(ids, probs, d); !kept {
			return append(slices.Clone(drafts[:i]), tok), i, nil
		}
	}
	bonus, err := row(len(drafts))
	if err != nil {
		return nil, 0, err
	}
	return append(slices.Clone(drafts), p.sampleTop(bonus)), len(drafts), nil
}

// validDrafts are the drafter's guesses after context, as many as the budget
// allows (none: a plain step; a drafter that gives more is cut), none when
// one is a token the model cannot take.
func (s *speculator) validDrafts(context []int32, room int) []int32 {
	n := s.guesses(room)
	if n <= 0 {
		return nil
	}
	start := time.Now()
	var drafts []int32
	if s.mtp {
		drafts = s.mtpDrafts(context[len(context)-1], n)
	} else {
		drafts = s.drafter.Draft(context, n)
	}
	s.draftTime = time.Since(start)
	drafts = drafts[:min(len(drafts), n)]
	for _, d := range drafts {
		if d < 0 || int(d) >= s.e.Config.VocabSize {
			return nil
		}
	}
	return drafts
}

// guesses is how deep the next step may guess: draftLen, fewer while the
// budget says so, and no more than the context's room allows; it clears the
// step's draft time.
func (s *speculator) guesses(room int) int {
	n := s.draftLen
	if s.budget != nil {
		n = min(n, s.budget.length())
	}
	s.draftTime = 0
	return min(n, room-1)
}

// candidateDistribution is the distribution sampleTop draws from: the kept
// candidates' ids and their probabilities.
func (p *sampler) candidateDistribution(c candidates) ([]int32, []float64) {
	order := make([]int, len(c.ids))
	for i := range order {
		order[i] = i
	}
	kept, probs := p.distribution(order, func(i int) float64 { return float64(c.logits[i]) - c.lse })
	ids := make([]int32, len(kept))
	for i, k := range kept {
		ids[i] = c.ids[k]
	}
	return ids, probs
}

// acceptOrResample is the rejection rule for one guess d at a position whose
// distribution is ids with probs: d itself with probability p(d) (kept true),
// else a draw from the rest.
func (p *sampler) acceptOrResample(ids []int32, probs []float64, d int32) (int32, bool) {
	pd := 0.0
	rest := slices.Clone(probs)
	for i, id := range ids {
		if id == d {
			pd, rest[i] = probs[i], 0
		}
	}
	if p.rng.Float64() < pd {
		return d, true
	}
	return ids[p.pick(rest)], false
}

// forwardTopKAll runs tokens and returns every position's top-k candidates
// (forwardTopK for each row, in one read).
//
// penalized, when not nil, holds each position's repetition window (ids, −1
// padding, all of one length), whose logits are penalized by penalty first;
// before, when not nil, runs first on the device goroutine (a verify's
// snapshot, speculator.beforeVerify).
func (e *Engine) forwardTopKAll(tokens []int32, k int, penalized [][]int32, penalty float32, before func() error) ([]candidates, error) {
	var out []candidates
	var pen ops.Tensor
	prepare := func() error { // written before the forward records its launches
		if before != nil {
			if err := before(); err != nil {
				return err
			}
		}
		if len(penalized) == 0 {
			return nil
		}
		flat := slices.Concat(penalized...)
		pen = e.scratch.Get("sample.penalized", ops.I32, len(penalized), len(penalized[0]))
		return ops.WriteInt32(e.ctx, pen, flat)
	}
	err := e.step(tokens, true, prepare, func(logits ops.Tensor) (err error) {
		if len(penalized) > 0 {
			v, n := logits.Elements()/len(tokens), len(penalized[0])
			for i := range tokens {
				row := ops.View(logits, 4*i*v, ops.F32, []int{v})
				ops.RepetitionPenalty(e.ctx, row, ops.View(pen, 4*i*n, ops.I32, []int{n}), penalty)
			}
		}
		out, err = e.readTopK(logits, len(tokens), k)
		return err
	})
	return out, err
}
