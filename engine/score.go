package engine

import (
	"fmt"
	"math"
	"slices"
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
	// Prefill is how many leading tokens are prefilled (in forwards of up to
	// scoreChunk tokens); the rest are decoded one token at a time. 0 or
	// ≥ len(ids): all prefilled.
	Prefill int
	// Images are the prompt's images (EncodeImage), in order: ids carry one
	// image pad token for each, which is expanded into the image's tokens as
	// the processor does. Positions are then those of the expanded ids.
	Images []*Image
}

// scoreChunk bounds the positions whose logits are held at once: a prefill
// forward of every position keeps T × vocabulary f32 logits (3.7 GB for 2000
// ids at Qwen3.5's 248320), in chunks it keeps 64 × vocabulary.
const scoreChunk = 64

// Score runs ids teacher-forced from an empty cache and reports every position.
func (e *Engine) Score(ids []int32, opt ScoreOptions) ([]Position, error) {
	var out []Position
	err := e.ScoreEach(ids, opt, func(p Position) error {
		out = append(out, p)
		return nil
	})
	return out, err
}

// ScoreEach is Score handing each position to emit as soon as its chunk is
// computed, so that memory stays bounded however many ids there are. An error
// from emit stops the scoring and is returned.
func (e *Engine) ScoreEach(ids []int32, opt ScoreOptions, emit func(Position) error) error {
	if len(ids) == 0 {
		return fmt.Errorf("score: no token ids")
	}
	if len(ids) > e.ContextLength() {
		return fmt.Errorf("score: %d tokens exceed the context length %d", len(ids), e.ContextLength())
	}
	if opt.Top <= 0 {
		opt.Top = 10
	}
	if opt.Prefill <= 0 || opt.Prefill > len(ids) {
		opt.Prefill = len(ids)
	}
	forward := e.forward
	if v := e.Config.Vision; v != nil && (len(opt.Images) > 0 || slices.Contains(ids, v.ImageToken)) {
		p, err := e.layImages(ids, opt.Images, 0)
		if err != nil {
			return fmt.Errorf("score: %w", err)
		}
		if len(p.ids) > e.ContextLength() {
			return fmt.Errorf("score: %d tokens with the images' exceed the context length %d", len(p.ids), e.ContextLength())
		}
		opt.Prefill = p.expanded(opt.Prefill) // the same tokens prefilled, with their images' pads
		ids = p.ids
		at := 0
		forward = func(tokens []int32, all bool) ([]float32, error) {
			at += len(tokens)
			if !p.holdsImage(at-len(tokens), at) { // text: the cache's positions (shifted after an image) serve
				return e.forward(tokens, all)
			}
			return e.forwardImages(p, at-len(tokens), at, all)
		}
	} else if len(opt.Images) > 0 {
		return fmt.Errorf("score: this model cannot read images")
	}
	e.waitTurn() // a generation under way finishes first
	defer e.give()
	if err := e.resetCache(); err != nil {
		return err
	}
	vocab := e.Config.VocabSize
	pos := 0
	add := func(logits []float32) error {
		for r := 0; r < len(logits)/vocab; r++ {
			if err := emit(summarise(pos, logits[r*vocab:(r+1)*vocab], opt.Top)); err != nil {
				return err
			}
			pos++
		}
		return nil
	}
	for i := 0; i < opt.Prefill; i += scoreChunk {
		logits, err := forward(ids[i:min(i+scoreChunk, opt.Prefill)], true)
		if err != nil {
			return err
		}
		if err := add(logits); err != nil {
			return err
		}
	}
	for i := opt.Prefill; i < len(ids); i++ {
		logits, err := forward(ids[i:i+1], false)
		if err != nil {
			return err
		}
		if err := add(logits); err != nil {
			return err
		}
	}
	return nil
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

// topKWindow is the largest k TopK keeps in a sorted window.
const topKWindow = 1024

// TopK returns the indices of the k largest values, largest first (ties: lower
// index). It keeps a sorted window of k, so one pass costs O(n) for small k;
// past topKWindow it sorts every value once instead (the window's inserts
// cost O(k) each: a top-k of the whole 248,320-token vocabulary, a client's
// "top_k": 1000000, took 3.3 s a token on a 2-core machine, the sort 30 ms).
func TopK(v []float32, k int) []int {
	k = min(k, len(v))
	if k > topKWindow {
		// One sort of keys that order by value, largest first, then by index:
		// the value's bits made monotonic and inverted above, the index below.
		keys := make([]uint64, len(v))
		for i, x := range v {
			if x == 0 {
				x = 0 // −0 ties with +0, as in the window
			}
			b := math.Float32bits(x)
			if b>>31 != 0 {
				b = ^b
			} else {
				b |= 1 << 31
			}
			keys[i] = uint64(^b)<<32 | uint64(i)
		}
		slices.Sort(keys)
		best := make([]int, k)
		for i := range best {
			best[i] = int(uint32(keys[i]))
		}
		return best
	}
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
