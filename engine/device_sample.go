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
		pen = e.scratch.Get(ops.I32, len(penalized))
		return ops.WriteInt32(e.ctx, pen, penalized)
	}
	err := e.step(tokens, false, prepare, func(logits ops.Tensor) error {
		if len(penalized) > 0 {
			ops.RepetitionPenalty(e.ctx, logits, pen, penalty)
		}
		// One buffer [ids | vals | lse] so that one read brings all back.
		both := e.scratch.Get(ops.I32, 2*k+1)
		ids := ops.View(both, 0, ops.I32, []int{1, k})
		vals := ops.View(both, 4*k, ops.F32, []int{1, k})
		lse := ops.View(both, 8*k, ops.F32, []int{1})
		ops.TopK(e.ctx, logits, ids, vals, lse)
		raw, err := ops.ReadBytes(e.ctx, both)
		if err != nil {
			return err
		}
		out.ids, out.logits = make([]int32, 0, k), make([]float32, 0, k)
		for i := range k {
			id := int32(binary.LittleEndian.Uint32(raw[4*i:]))
			if id < 0 {
				break // the row had fewer than k numbers
			}
			out.ids = append(out.ids, id)
			out.logits = append(out.logits, math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(k+i):])))
		}
		out.lse = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[8*k:])))
		return nil
	})
	return out, err
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
