package engine

import (
	"encoding/binary"
	"math"

	"bagel/ops"
)

// candidates are the top-k of one position's logits, picked on the device:
// ids and logits in descending order, and the log Σ exp of all the logits.
type candidates struct {
	ids    []int32
	logits []float32
	lse    float64
}

// forwardTopK is forward for sampling with a top-k: the device applies the
// repetition penalty to the distinct ids of penalized (−1 pads; a fixed count
// keeps the launch the same every step), picks the k best logits and their
// log-sum-exp, and the host reads back k·8+4 bytes instead of the logits.
func (e *Engine) forwardTopK(tokens []int32, k int, penalized []int32, penalty float32) (candidates, error) {
	var out candidates
	var pen ops.Tensor
	prepare := func() error { // written before the forward records its launches
		if len(penalized) == 0 {
			return nil
		}
		pen = e.scratch.Get("sample.penalized", ops.I32, len(penalized))
		return ops.WriteInt32(e.ctx, pen, penalized)
	}
	err := e.step(tokens, false, prepare, func(logits ops.Tensor) error {
		if len(penalized) > 0 {
			ops.RepetitionPenalty(e.ctx, logits, pen, penalty)
		}
		rows, err := e.readTopK(logits, 1, k)
		if err == nil {
			out = rows[0]
		}
		return err
	})
	return out, err
}

// forwardFiltered is forward for sampling with top-p or min-p but no top-k:
// the device applies the repetition penalty and picks the ops.TopKMax best
// logits with the row's log-sum-exp, and when the filters' cut falls among
// them (candidates.coversFilters) the host draws from those, as it would from
// all the logits; otherwise (a flat distribution) it reads the penalized
// logits too, in the same step, and returns them instead.
func (e *Engine) forwardFiltered(tokens []int32, s Sampling, penalized []int32, penalty float32) (candidates, []float32, error) {
	var out candidates
	var all []float32
	var pen ops.Tensor
	prepare := func() error {
		if len(penalized) == 0 {
			return nil
		}
		pen = e.scratch.Get("sample.penalized", ops.I32, len(penalized))
		return ops.WriteInt32(e.ctx, pen, penalized)
	}
	k := min(ops.TopKMax, e.Config.VocabSize)
	err := e.step(tokens, false, prepare, func(logits ops.Tensor) error {
		if len(penalized) > 0 {
			ops.RepetitionPenalty(e.ctx, logits, pen, penalty)
		}
		rows, err := e.readTopK(logits, 1, k)
		if err != nil {
			return err
		}
		out = rows[0]
		if math.IsNaN(out.lse) || math.IsInf(out.lse, 0) || out.coversFilters(s, e.Config.VocabSize) {
			return nil
		}
		e.filterFallbacks++
		all, err = ops.ReadF32(e.ctx, logits)
		return err
	})
	return out, all, err
}

// coversFilters says whether c, a row's best logits in descending order with
// the whole row's log-sum-exp, holds every token the top-p and min-p filters
// of s keep (sampler.distribution): when one filter's cut falls inside c, the
// shortest kept prefix does; or when c is the whole row.
func (c candidates) coversFilters(s Sampling, vocab int) bool {
	if len(c.ids) >= vocab {
		return true
	}
	if tp := s.TopP; tp > 0 && tp < 1 {
		cum := 0.0
		for _, l := range c.logits {
			if cum += math.Exp(float64(l) - c.lse); cum >= tp {
				return true
			}
		}
	}
	if mp := s.MinP; mp > 0 && len(c.logits) > 0 {
		limit := float64(c.logits[0]) + math.Log(mp)
		for _, l := range c.logits[1:] {
			if float64(l) < limit {
				return true
			}
		}
	}
	return false
}

// readTopK picks the top k of each of the r rows of logits on the device and
// reads them back in one read of one buffer [ids r·k | vals r·k | lse r].
func (e *Engine) readTopK(logits ops.Tensor, r, k int) ([]candidates, error) {
	raw, err := ops.ReadBytes(e.ctx, e.topK(logits, r, k))
	if err != nil {
		return nil, err
	}
	return parseTopK(raw, r, k), nil
}

// topK dispatches the top k of each of the r rows of logits into one scratch
// buffer [ids r·k | vals r·k | lse r], which it returns.
func (e *Engine) topK(logits ops.Tensor, r, k int) ops.Tensor {
	return e.topKNamed("sample.topk", logits, r, k)
}

// topKNamed is topK into the scratch buffer called name.
func (e *Engine) topKNamed(name string, logits ops.Tensor, r, k int) ops.Tensor {
	both := e.scratch.Get(name, ops.I32, r*(2*k+1))
	ids := ops.View(both, 0, ops.I32, []int{r, k})
	vals := ops.View(both, 4*r*k, ops.F32, []int{r, k})
	lse := ops.View(both, 8*r*k, ops.F32, []int{r})
	part := e.scratch.Get(name+"_part", ops.I32, ops.TopKPartSize(r, logits.Elements()/r, k))
	ops.TopK(e.ctx, logits, ids, vals, lse, part)
	return both
}

// parseTopK reads topK's buffer, read back: each row's candidates, best first.
func parseTopK(raw []byte, r, k int) []candidates {
	out := make([]candidates, r)
	for row := range r {
		c := &out[row]
		for i := range k {
			id := int32(binary.LittleEndian.Uint32(raw[4*(row*k+i):]))
			if id < 0 {
				break // the row had fewer than k numbers
			}
			c.ids = append(c.ids, id)
			c.logits = append(c.logits, math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(r*k+row*k+i):])))
		}
		c.lse = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(2*r*k+row):])))
	}
	return out
}

// greedy is the best candidate (top 1 read back), or errNonFinite when the
// row's logits hold a NaN or an infinity (the log-sum-exp is then NaN) or no
// number at all.
func (c candidates) greedy() (int32, error) {
	if len(c.ids) == 0 || math.IsNaN(c.lse) || math.IsInf(c.lse, 0) {
		return 0, errNonFinite
	}
	return c.ids[0], nil
}

// penalizedIDs are the distinct ids of the sampler's repetition window, padded
// with −1 to the window's length (mlx-lm penalizes each seen token once).
func (p *sampler) penalizedIDs(history []int32) []int32 {
	n := p.s.RepetitionContext
	ids := make([]int32, 0, n)
	seen := map[int32]bool{}
	for _, id := range history[max(0, len(history)-n):] {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for len(ids) < n {
		ids = append(ids, -1)
	}
	return ids
}

// sampleTop draws from the device's top-k candidates exactly as sample draws
// from the logits when top-k is set: the filters (top-p, min-p, top-k) each
// keep a prefix of the tokens by probability, so all of them fall inside the
// top-k, and the log-probabilities use the full distribution's log-sum-exp.
func (p *sampler) sampleTop(c candidates) int32 {
	order := make([]int, len(c.ids))
	for i := range order {
		order[i] = i
	}
	lp := func(i int) float64 { return float64(c.logits[i]) - c.lse }
	return c.ids[p.choose(order, lp)]
}
