package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Sampling are the sampler settings, with mlx-lm's meanings (MLX_QWEN35.md §5):
// Temperature 0 is greedy; TopP, MinP and TopK filter the untempered distribution
// in that order (0 or 1 turns each off); RepetitionPenalty (1 = off) divides
// positive and multiplies negative logits of tokens seen in the last
// RepetitionContext tokens, once per distinct token. The JSON names are those
// of the app's settings file, which embeds Sampling.
type Sampling struct {
	Temperature       float64 `json:"temperature"`
	TopP              float64 `json:"top_p"`
	TopK              int     `json:"top_k"`
	MinP              float64 `json:"min_p"`
	RepetitionPenalty float64 `json:"repetition_penalty"`
	RepetitionContext int     `json:"repetition_context,omitempty"` // default 20
	// PresencePenalty and FrequencyPenalty (OpenAI's, 0 = off, −2 to 2)
	// subtract from the logit of each token the reply has made so far: the
	// presence penalty once, the frequency penalty once per time it was made.
	// The host applies them (the logits are read every step).
	PresencePenalty  float64 `json:"presence_penalty,omitempty"`
	FrequencyPenalty float64 `json:"frequency_penalty,omitempty"`
	Seed             uint64  `json:"seed"`
}

// MaxAdditivePenalty bounds the presence and frequency penalties (OpenAI's).
const MaxAdditivePenalty = 2.0

// additive reports a presence or frequency penalty in use.
func (s Sampling) additive() bool { return s.PresencePenalty != 0 || s.FrequencyPenalty != 0 }

// MaxRepetitionPenalty bounds the repetition penalty: far above any useful
// value (1.0–1.3 in practice), and low enough that a penalized logit stays
// finite (1e308 made every logit infinite, and the reply stopped blaming the
// weights).
const MaxRepetitionPenalty = 100.0

// MaxRepetitionContext bounds the repetition penalty's window: the device
// path sizes a buffer by it every step (a settings file's 10¹⁵ crashed the
// reply), and no context is longer.
const MaxRepetitionContext = 1 << 18

// Validate reports a setting outside its range, naming it.
func (s Sampling) Validate() error {
	switch {
	case s.Temperature < 0 || math.IsNaN(s.Temperature) || math.IsInf(s.Temperature, 0):
		return fmt.Errorf("temperature must be a number ≥ 0, got %g", s.Temperature)
	case s.TopP < 0 || s.TopP > 1 || math.IsNaN(s.TopP):
		return fmt.Errorf("top-p must be in [0, 1], got %g", s.TopP)
	case s.TopK < 0:
		return fmt.Errorf("top-k must be ≥ 0, got %d", s.TopK)
	case s.MinP < 0 || s.MinP > 1 || math.IsNaN(s.MinP):
		return fmt.Errorf("min-p must be in [0, 1], got %g", s.MinP)
	case s.RepetitionPenalty < 0 || s.RepetitionPenalty > MaxRepetitionPenalty || math.IsNaN(s.RepetitionPenalty):
		return fmt.Errorf("repetition penalty must be between 0 and %g (1: off), got %g", MaxRepetitionPenalty, s.RepetitionPenalty)
	case s.RepetitionContext < 0 || s.RepetitionContext > MaxRepetitionContext:
		return fmt.Errorf("repetition context must be 0 (the default, 20) to %d tokens, got %d", MaxRepetitionContext, s.RepetitionContext)
	case !(math.Abs(s.PresencePenalty) <= MaxAdditivePenalty):
		return fmt.Errorf("presence penalty must be between −%g and %g (0: off), got %g", MaxAdditivePenalty, MaxAdditivePenalty, s.PresencePenalty)
	case !(math.Abs(s.FrequencyPenalty) <= MaxAdditivePenalty):
		return fmt.Errorf("frequency penalty must be between −%g and %g (0: off), got %g", MaxAdditivePenalty, MaxAdditivePenalty, s.FrequencyPenalty)
	}
	return nil
}

// sampler draws tokens from logits with a seeded generator.
type sampler struct {
	s    Sampling
	rng  *rand.Rand
	made madeCounts // the reply's tokens, for the presence and frequency penalties
}

// madeCounts counts the tokens a reply has made, kept from one pick to the
// next: counting the whole reply again each token cost 10 ms a token at
// 32,000 tokens (this 2-core machine), more than a GPU's decode step; kept,
// the pick with its argmax over 248,320 logits is 0.39 ms there.
type madeCounts struct {
	seen  []int32         // the reply as counted
	index map[int32]int32 // a token's place in ids
	ids   []int32         // each distinct token, in the order first made
	n     []int32         // how many times ids[i] was made
}

// update counts reply's tokens past those seen; a reply that does not go
// on from what was seen is counted afresh.
func (c *madeCounts) update(reply []int32) {
	if len(reply) < len(c.seen) || !slices.Equal(reply[:len(c.seen)], c.seen) {
		*c = madeCounts{}
	}
	if c.index == nil {
		c.index = map[int32]int32{}
	}
	for _, id := range reply[len(c.seen):] {
		i, ok := c.index[id]
		if !ok {
			i = int32(len(c.ids))
			c.index[id] = i
			c.ids = append(c.ids, id)
			c.n = append(c.n, 0)
		}
		c.n[i]++
	}
	c.seen = append(c.seen, reply[len(c.seen):]...)
}

func newSampler(s Sampling) *sampler {
	if s.RepetitionContext == 0 {
		s.RepetitionContext = 20
	}
	return &sampler{s: s, rng: rand.New(rand.NewPCG(s.Seed, s.Seed^0x9e3779b97f4a7c15))}
}

// uniform is the generator's next draw in [0, 1), for a draw on the device
// (the host's own draws take one per token too: pick).
func (p *sampler) uniform() float32 { return float32(p.rng.Float64()) }

// sample picks the next token. history is the token context the repetition
// penalty sees (mlx-lm: the last prompt token and the generated ones). logits is
// modified.
func (p *sampler) sample(logits []float32, history []int32) int32 {
	if p.s.additive() && len(history) > 1 {
		p.made.update(history[1:]) // the reply's tokens: history after the prompt's last
		for i, id := range p.made.ids {
			if id >= 0 && int(id) < len(logits) {
				logits[id] -= float32(p.s.PresencePenalty + p.s.FrequencyPenalty*float64(p.made.n[i]))
			}
		}
	}
	if r := p.s.RepetitionPenalty; r != 0 && r != 1 {
		ctx := history[max(0, len(history)-p.s.RepetitionContext):]
		seen := map[int32]bool{}
		for _, id := range ctx {
			if seen[id] || id < 0 || int(id) >= len(logits) {
				continue
			}
			seen[id] = true
			if logits[id] < 0 {
				logits[id] *= float32(r)
			} else {
				logits[id] /= float32(r)
			}
		}
	}
	if p.s.Temperature == 0 {
		return int32(argmax(logits))
	}
	return int32(p.draw(logits))
}

// draw samples an index of logits at the temperature after the top-p, min-p and
// top-k filters.
func (p *sampler) draw(logits []float32) int {
	// logprobs of the untempered distribution
	lse := LogSumExp(logits)
	lp := func(id int) float64 { return float64(logits[id]) - lse }
	// Every filter keeps a prefix of the tokens sorted by probability, so the
	// result is the shortest prefix; with top-k set only k tokens need sorting.
	var order []int
	switch {
	case p.s.TopK > 0:
		order = TopK(logits, p.s.TopK)
	case (p.s.TopP > 0 && p.s.TopP < 1) || p.s.MinP > 0:
		order = TopK(logits, len(logits)) // every index, largest first, ties by index
	default:
		order = make([]int, len(logits))
		for i := range order {
			order[i] = i
		}
	}
	return p.choose(order, lp)
}

// choose applies the top-p and min-p filters to order (indices by descending
// probability; top-k already applied) and draws one at the temperature. lp is
// an index's log-probability under the untempered distribution.
func (p *sampler) choose(order []int, lp func(int) float64) int {
	kept, weights := p.distribution(order, lp)
	return kept[p.pick(weights)]
}

// pick draws an index of weights (not necessarily normalised) with the
// sampler's generator.
func (p *sampler) pick(weights []float64) int {
	var total float64
	for _, w := range weights {
		total += w
	}
	u := p.rng.Float64() * total
	for i, w := range weights {
		u -= w
		if u < 0 {
			return i
		}
	}
	return len(weights) - 1
}

// distribution is what choose draws from: the indices of order that the top-p
// and min-p filters keep, and their probabilities at the temperature
// (normalised).
func (p *sampler) distribution(order []int, lp func(int) float64) (kept []int, probs []float64) {
	keep := len(order)
	if tp := p.s.TopP; tp > 0 && tp < 1 {
		// mlx-lm keeps tokens whose ascending cumulative probability exceeds 1−p:
		// the smallest top set whose mass reaches p.
		cum := 0.0
		for i, id := range order[:keep] {
			cum += math.Exp(lp(id))
			if cum >= tp {
				keep = i + 1
				break
			}
		}
	}
	if mp := p.s.MinP; mp > 0 {
		limit := lp(order[0]) + math.Log(mp)
		n := 1 // min_tokens_to_keep
		for n < keep && lp(order[n]) >= limit {
			n++
		}
		keep = n
	}
	// categorical over the kept tokens at the temperature
	inv := 1 / p.s.Temperature
	best := math.Inf(-1)
	for _, id := range order[:keep] {
		best = math.Max(best, lp(id)*inv)
	}
	probs = make([]float64, keep)
	var total float64
	for i, id := range order[:keep] {
		probs[i] = math.Exp(lp(id)*inv - best)
		total += probs[i]
	}
	for i := range probs {
		probs[i] /= total
	}
	return order[:keep], probs
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}
