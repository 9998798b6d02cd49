package engine

import (
	"fmt"
	"math"
	"sort"
)

// Position is the teacher-forced prediction after token Pos (the logits that
// predict token Pos+1): the Top highest logits, their ids, and logsumexp over the
// whole vocabulary.
type Position struct {
	Pos       int       `json:"pos"`
	TopIDs    []int     `json:"top_ids"`
	TopLogits []float32 `json:"top_logits"`
	LogSumExp float64   `json:"logsumexp"`
}

// ScoreOptions tune Score.
type ScoreOptions struct {
	Top int // ids per position (default 10)
	// Prefill is how many leading tokens go through one prefill forward; the rest
	// are decoded one token at a time. 0 or ≥ len(ids): all in one forward.
	Prefill int
}

// Score runs ids teacher-forced from an empty cache and reports every position.
func (e *Engine) Score(ids []int32, opt ScoreOptions) ([]Position, error) {
	if len(ids) == 0 {
		return nil, fmt.Errorf("score: no token ids")
	}
	if len(ids) > e.ContextLength() {
		return nil, fmt.Errorf("score: %d tokens exceed the context length %d", len(ids), e.ContextLength())
	}
	if opt.Top <= 0 {
		opt.Top = 10
	}
	if opt.Prefill <= 0 || opt.Prefill > len(ids) {
		opt.Prefill = len(ids)
	}
	if err := e.resetCache(); err != nil {
		return nil, err
	}
	vocab := e.Config.VocabSize
	var out []Position
	add := func(logits []float32) {
		for r := 0; r < len(logits)/vocab; r++ {
			out = append(out, summarise(len(out), logits[r*vocab:(r+1)*vocab], opt.Top))
		}
	}
	logits, err := e.forward(ids[:opt.Prefill], true)
	if err != nil {
		return nil, err
	}
	add(logits)
	for i := opt.Prefill; i < len(ids); i++ {
		if logits, err = e.forward(ids[i:i+1], false); err != nil {
			return nil, err
		}
		add(logits)
	}
	return out, nil
}

func summarise(pos int, logits []float32, top int) Position {
	top = min(top, len(logits))
	idx := TopK(logits, top)
	p := Position{Pos: pos, TopIDs: idx, TopLogits: make([]float32, top), LogSumExp: LogSumExp(logits)}
	for i, id := range idx {
		p.TopLogits[i] = logits[id]
	}
	return p
}

// TopK returns the indices of the k largest values, largest first (ties: lower
// index). It keeps a sorted window of k, so one pass costs O(n) for small k.
func TopK(v []float32, k int) []int {
	k = min(k, len(v))
	best := make([]int, 0, k+1)
	for i, x := range v {
		if len(best) == k && (k == 0 || x <= v[best[k-1]]) {
			continue
		}
		j := sort.Search(len(best), func(j int) bool { return v[best[j]] < x })
		best = append(best, 0)
		copy(best[j+1:], best[j:])
		best[j] = i
		if len(best) > k {
			best = best[:k]
		}
	}
	return best
}

// LogSumExp is log Σ exp(v) computed in float64.
func LogSumExp(v []float32) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = math.Max(m, float64(x))
	}
	var s float64
	for _, x := range v {
		s += math.Exp(float64(x) - m)
	}
	return m + math.Log(s)
}
