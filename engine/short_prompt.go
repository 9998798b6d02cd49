package engine

import (
	"bagel/ops"
	"bagel/qwen"
)

// shortPromptMinTokens is the fewest tokens of a prompt's forward that
// SwitchShortPromptTiled moves to the tiled GEMVs: one token is a decode
// step, and the plain GEMV's step is the faster (H100: 2.10 against 2.49 ms
// a token); at 2 and 3 tokens the two took the same GPU time (4.6–4.8 and
// 5.1–5.2 ms), from 4 the tiled ones less (5.2–5.4 against 5.9).
const shortPromptMinTokens = 2

// promptKernels readies the plan for a prompt's forward of t tokens, on the
// device goroutine: where the plan has ShortPromptTiled and the forward
// falls under the prompt path (Plan.PromptMin), the tiled GEMVs for
// this forward only (the ops fall back to the plain GEMV where the device or
// a weight has none). Defer the function it returns, which restores the plan.
// Only prompts come here: a speculative verify of as many tokens keeps the
// decode step's kernels, so that its logits are the steps'.
func (e *Engine) promptKernels(t int) (restore func()) {
	p := &e.ctx.Plan
	if !e.movesToTiled(t) {
		return func() {}
	}
	was := p.TiledExperts // a prompt's experts take the tiled kernels, its tokens often sharing them
	p.TiledGEMV, p.TiledExperts = true, true
	return func() { p.TiledGEMV, p.TiledExperts = false, was }
}

// movesToTiled says whether promptKernels moves a prompt's forward of t
// tokens to the tiled GEMVs (the plan's switch is a no-op on a device
// without them: Metal's forward keeps the plain ones).
func (e *Engine) movesToTiled(t int) bool {
	p := &e.ctx.Plan
	return p.ShortPromptTiled && !p.TiledGEMV && t >= shortPromptMinTokens && t < p.PromptMin() && ops.TiledGEMVs(e.ctx)
}

// forwardPrompt runs tokens, a chunk of a prompt, at the cache position on
// the kernels promptKernels picks, and waits for it (the device's greedy
// pick of its last row, which stops a non-finite chunk as a step would).
func (e *Engine) forwardPrompt(tokens []int32) error {
	var id [1]int32
	return e.stepWith(func() (ops.Tensor, error) { return e.forwardChunk(e.cache, tokens) }, nil, e.greedyPicks(id[:]))
}

// forwardChunk runs chunk, a prompt's, at cache's position on the kernels
// promptKernels picks (the plan restored even where the forward panics: the
// device goroutine recovers and goes on), on the device goroutine.
func (e *Engine) forwardChunk(cache *qwen.Cache, chunk []int32) (ops.Tensor, error) {
	defer e.promptKernels(len(chunk))()
	return e.model.Forward(e.ctx, cache, chunk, false)
}
