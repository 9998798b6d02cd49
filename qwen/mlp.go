package qwen

import "bagel/ops"

// denseMLP is down(silu(gate(x)) ⊙ up(x)).
type denseMLP struct {
	gate, up, down ops.QLinear
}

func (d *denseMLP) weights(cfg *Config) []weight {
	h, inter := cfg.HiddenSize, cfg.IntermediateSize
	return []weight{
		linear(&d.gate, "mlp.gate_proj", inter, h),
		linear(&d.up, "mlp.up_proj", inter, h),
		linear(&d.down, "mlp.down_proj", h, inter),
	}
}

// forward: x bf16 [T, hidden] (normed) → out bf16 [T, hidden].
func (d *denseMLP) forward(c *ops.Ctx, _ *Config, x, out ops.Tensor) {
	t := x.Shape[0]
	s := c.Scratch
	gate, up := s.Get("mlp.gate", ops.BF16, t, d.gate.Out), s.Get("mlp.up", ops.BF16, t, d.up.Out)
	ops.Project(c, x, []ops.QLinear{d.gate, d.up}, []ops.Tensor{gate, up})
	ops.SwiGLU(c, gate, up, gate)
	ops.Linear(c, gate, d.down, out)
}

// sparseMoE routes each token to top-k experts plus a sigmoid-gated shared expert.
type sparseMoE struct {
	router                           ops.QLinear // [E, hidden], 8-bit in official conversions
	gate, up, down                   ops.QLinear // stacked [E, ...]
	sharedGate, sharedUp, sharedDown ops.QLinear
	sharedExpertGate                 ops.QLinear // [1, hidden]
}

func (e *sparseMoE) weights(cfg *Config) []weight {
	h, ne, mi, si := cfg.HiddenSize, cfg.NumExperts, cfg.MoEIntermediateSize, cfg.SharedIntermediate
	return []weight{
		linear(&e.router, "mlp.gate", ne, h),
		experts(&e.gate, "mlp.switch_mlp.gate_proj", ne, mi, h),
		experts(&e.up, "mlp.switch_mlp.up_proj", ne, mi, h),
		experts(&e.down, "mlp.switch_mlp.down_proj", ne, h, mi),
		linear(&e.sharedGate, "mlp.shared_expert.gate_proj", si, h),
		linear(&e.sharedUp, "mlp.shared_expert.up_proj", si, h),
		linear(&e.sharedDown, "mlp.shared_expert.down_proj", h, si),
		linear(&e.sharedExpertGate, "mlp.shared_expert_gate", 1, h),
	}
}

// forward: x bf16 [T, hidden] (normed) → out bf16 [T, hidden] (ops.MoE
// picks the launches).
func (e *sparseMoE) forward(c *ops.Ctx, cfg *Config, x, out ops.Tensor) {
	ops.MoE(c, x, e.experts(cfg), out)
}

func (e *sparseMoE) experts(cfg *Config) ops.Experts {
	return ops.Experts{Router: e.router, Gate: e.gate, Up: e.up, Down: e.down,
		SharedGate: e.sharedGate, SharedUp: e.sharedUp, SharedDown: e.sharedDown,
		SharedExpertGate: e.sharedExpertGate, K: cfg.ExpertsPerToken, NormTopK: cfg.NormTopKProb}
}

// TiledPrompts says whether the prompt path may start at
// ops.TiledPromptMinTokens on c's plan (ops.Plan.TiledPrompts): a lone
// reply's prompt under it runs on the tiled GEMVs (ShortPromptTiled) and
// the model's experts take them (ops.TiledExperts). A plan with TiledGEMV
// (an engine loaded for several replies) keeps ops.PromptMinTokens: there
// prompts of 32 tokens and more go together on the prompt path, which beat
// each alone on the step kernels (H100, 8 replies' prompts of 64 tokens:
// median first token at 57.2 against 96.9 ms). So does a dense model: its
// tiled GEMVs read every weight again for each 16 tokens, where a MoE's
// read only the experts routed to, and it was not measured.
func (m *Model) TiledPrompts(c *ops.Ctx) bool {
	moe, ok := m.layers[0].ffn.(*sparseMoE)
	return ok && c.Plan.ShortPromptTiled && !c.Plan.TiledGEMV && ops.TiledExperts(c, moe.experts(m.Cfg))
}
