package engine

import (
	"math"
	"slices"

	"bagel/drafter"
	"bagel/ops"
	"bagel/switches"
)

// A reply's decode is planned once, before its first token: which picker
// runs a step and chooses its token (on the device or the host), whether
// steps guess ahead (speculation) and whether the next step is launched
// before the host reads this one (the pipeline). The loop then only asks the
// plan for tokens.

// picker runs tokens through the model and picks the token after them.
type picker interface {
	next(tokens []int32) (int32, error)
}

// pickState is what the pickers share with the loop: the sampler (its
// generator and settings) and the history the repetition penalty sees (the
// prompt's last token, then the reply's).
type pickState struct {
	e       *Engine
	smp     *sampler
	history []int32
	// top is how many likeliest tokens a logprobs entry lists; -1: no
	// logprobs. logprobs is the entry of the token last picked.
	top      int
	logprobs *TokenLogprobs
}

// The pickers, from the least read back to the most.
type (
	// argmaxPicker: greedy without a penalty, the device picks (one id read).
	argmaxPicker struct{ *pickState }
	// drawPicker: a top-k draw without a penalty, on the device with the
	// host's uniform (one id read: device_draw.go).
	drawPicker struct{ *pickState }
	// penalizedArgmaxPicker: greedy with a repetition penalty; the device
	// penalizes and picks the best (forwardTopK, k = 1): 12 bytes read, not
	// the logits (1 MB at a vocabulary of 248320).
	penalizedArgmaxPicker struct{ *pickState }
	// topKPicker: a top-k draw the host makes from the device's k best.
	topKPicker struct{ *pickState }
	// filteredPicker: top-p or min-p without a top-k: the device's best
	// ops.TopKMax, the logits read only when the filters' cut falls past them.
	filteredPicker struct{ *pickState }
	// hostPicker: the logits read, the host samples (the reference).
	hostPicker struct{ *pickState }
)

func (p argmaxPicker) next(tokens []int32) (int32, error) { return p.e.forwardArgmax(tokens) }

func (p drawPicker) next(tokens []int32) (int32, error) {
	return p.e.forwardDraw(tokens, p.smp.s, p.smp.uniform())
}

// penalized is the ids the repetition penalty applies to now (none when off).
func (p *pickState) penalized() []int32 {
	if r := p.smp.s.RepetitionPenalty; r == 0 || r == 1 {
		return nil
	}
	return p.smp.penalizedIDs(p.history)
}

func (p *pickState) penalty() float32 { return float32(p.smp.s.RepetitionPenalty) }

func (p penalizedArgmaxPicker) next(tokens []int32) (int32, error) {
	c, err := p.e.forwardTopK(tokens, 1, p.smp.penalizedIDs(p.history), p.penalty())
	if err != nil {
		return 0, err
	}
	if math.IsNaN(c.lse) || math.IsInf(c.lse, 0) {
		return 0, errNonFinite
	}
	return c.ids[0], nil
}

func (p topKPicker) next(tokens []int32) (int32, error) {
	c, err := p.e.forwardTopK(tokens, p.smp.s.TopK, p.penalized(), p.penalty())
	if err != nil {
		return 0, err
	}
	if math.IsNaN(c.lse) || math.IsInf(c.lse, 0) {
		return 0, errNonFinite
	}
	return p.smp.sampleTop(c), nil
}

func (p filteredPicker) next(tokens []int32) (int32, error) {
	c, logits, err := p.e.forwardFiltered(tokens, p.smp.s, p.penalized(), p.penalty())
	if err != nil {
		return 0, err
	}
	if math.IsNaN(c.lse) || math.IsInf(c.lse, 0) {
		return 0, errNonFinite
	}
	if logits != nil { // penalized on the device already: draw, not sample
		if !finiteLogits(logits) {
			return 0, errNonFinite
		}
		return int32(p.smp.draw(logits)), nil
	}
	return p.smp.sampleTop(c), nil
}

func (p hostPicker) next(tokens []int32) (int32, error) {
	logits, err := p.e.forward(tokens, false)
	if err != nil {
		return 0, err
	}
	if !finiteLogits(logits) {
		return 0, errNonFinite
	}
	if p.top < 0 {
		return p.smp.sample(logits, p.history), nil
	}
	// The entry is of the raw logits: the sampler's penalty changes them.
	lse, top := p.e.logprobsOf(logits, p.top)
	raw := slices.Clone(logits)
	id := p.smp.sample(logits, p.history)
	p.logprobs = &TokenLogprobs{TokenLogprob: p.e.tokenLogprob(id, float64(raw[id])-lse), Top: top}
	return id, nil
}

// decodePlan is a reply's decode, chosen once.
type decodePlan struct {
	*pickState
	pick picker
	// greedy: the device picks greedily (argmaxPicker); speculative steps
	// then run in batches on the device goroutine (speculator.steps).
	greedy bool
	// onDevice: the token is picked on the device (Stats.SampledOnDevice).
	onDevice bool
	spec     *speculator // nil: no guesses
	pipe     *decodePipe // nil: each step waits for its token
}

// planDecode chooses req's decode from its sampling and the switches.
func (e *Engine) planDecode(req Request, history []int32) *decodePlan {
	s := req.Sampling
	ps := &pickState{e: e, smp: newSampler(s), history: history, top: -1}
	if req.Logprobs || s.additive() {
		// The logits come to the host each step (for their log-probabilities,
		// or the presence and frequency penalties): the host picks, one step
		// at a time.
		if req.Logprobs {
			ps.top = req.TopLogprobs
		}
		return &decodePlan{pickState: ps, pick: hostPicker{ps}}
	}
	noPenalty := s.RepetitionPenalty == 0 || s.RepetitionPenalty == 1
	greedy, topK := devicePicks(s)
	greedyPenalized := s.Temperature == 0 && !noPenalty && switches.On(SwitchDeviceTopK)
	filtered := s.Temperature > 0 && s.TopK == 0 && (s.TopP > 0 && s.TopP < 1 || s.MinP > 0) && switches.On(SwitchDeviceTopK)
	draw := drawsOnDevice(s)
	p := &decodePlan{pickState: ps, greedy: greedy, onDevice: greedy || greedyPenalized || topK || filtered}
	switch {
	case greedy:
		p.pick = argmaxPicker{ps}
	case draw:
		p.pick = drawPicker{ps}
	case greedyPenalized:
		p.pick = penalizedArgmaxPicker{ps}
	case topK:
		p.pick = topKPicker{ps}
	case filtered:
		p.pick = filteredPicker{ps}
	default:
		p.pick = hostPicker{ps}
	}
	// Speculative decoding: greedy replies without a repetition penalty, and
	// sampled ones with a top-k on the device.
	if (greedy || topK) && e.mtpWanted() && req.Drafter == nil {
		spec := &speculator{e: e, mtp: true, draftLen: DefaultMTPDraftLength}
		if req.DraftLength > 0 {
			spec.draftLen = req.DraftLength
		}
		p.spec = spec
	} else if (greedy || topK) && switches.On(SwitchSpeculative) {
		p.spec = e.promptLookup(req, greedy)
	}
	// Decode without drafts whose token the device picks (greedy, or drawn on
	// the device) keeps its next step launched ahead of the host where the
	// device reads back asynchronously (pipeline.go).
	if (greedy || draw) && p.spec == nil && switches.On(SwitchDecodePipeline) && e.CanPipeline() {
		p.pipe = &decodePipe{e: e}
		if draw {
			p.pipe.draw = &deviceDraw{s: s, uniform: ps.smp.uniform}
		}
	}
	return p
}

// promptLookup is a reply's prompt-lookup speculator (the speculative-ngram
// switch): n-gram guesses, or trees of them where the request asks for a
// width and trees are allowed (greedy replies), as many as pay
// (draft_budget.go); a drafter the request brings (the benchmark's oracle)
// guesses its length.
func (e *Engine) promptLookup(req Request, trees bool) *speculator {
	spec := &speculator{e: e, drafter: drafter.NGramDrafter{MinN: 2, MaxN: 4}, draftLen: DefaultDraftLength}
	if req.TreeWidth > 1 && trees {
		spec.drafter = drafter.NGramTreeDrafter{MinN: 2, MaxN: 4, Width: req.TreeWidth}
	}
	if req.DraftLength > 0 {
		spec.draftLen = req.DraftLength
	}
	spec.budget = newDraftBudget(spec.draftLen)
	if req.Drafter != nil {
		spec.drafter, spec.budget = req.Drafter, nil
	}
	return spec
}

// drawsOnDevice says whether a reply sampled with s draws its tokens on the
// device (device_draw.go): a top-k, no penalty, the device's top-k and
// sampling switched on.
func drawsOnDevice(s Sampling) bool {
	noPenalty := (s.RepetitionPenalty == 0 || s.RepetitionPenalty == 1) && !s.additive()
	return s.Temperature > 0 && s.TopK > 0 && s.TopK <= ops.TopKMax && noPenalty &&
		switches.On(SwitchDeviceTopK) && switches.On(SwitchDeviceSampling)
}

// devicePicks says whether a reply sampled with s (no additive penalties)
// is picked greedily on the device (no repetition penalty) or drawn from
// the device's top-k: the replies speculative decoding serves.
func devicePicks(s Sampling) (greedy, topK bool) {
	noPenalty := s.RepetitionPenalty == 0 || s.RepetitionPenalty == 1
	greedy = s.Temperature == 0 && noPenalty && switches.On(SwitchDeviceArgmax)
	topK = s.Temperature > 0 && s.TopK > 0 && s.TopK <= ops.TopKMax && switches.On(SwitchDeviceTopK)
	return greedy, topK
}
