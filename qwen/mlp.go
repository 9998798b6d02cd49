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
	gate, up := s.Get(ops.BF16, t, d.gate.Out), s.Get(ops.BF16, t, d.up.Out)
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

// forward: x bf16 [T, hidden] (normed) → out bf16 [T, hidden].
func (e *sparseMoE) forward(c *ops.Ctx, cfg *Config, x, out ops.Tensor) {
	t, k, hidden, inter := x.Shape[0], cfg.ExpertsPerToken, cfg.HiddenSize, cfg.MoEIntermediateSize
	s := c.Scratch
	// What reads x: the router, the shared expert's gate and up, its scalar gate.
	routerLogits := s.Get(ops.BF16, t, cfg.NumExperts)
	sg, su := s.Get(ops.BF16, t, e.sharedGate.Out), s.Get(ops.BF16, t, e.sharedUp.Out)
	gateLogit := s.Get(ops.BF16, t)
	// Every forward asks for the same scratch in the same order whatever its
	// path (ops.Arena): the prompt path's tensors are taken on the decode path too.
	ids, weights := s.Get(ops.I32, t, k), s.Get(ops.BF16, t, k)
	gate, up := s.Get(ops.BF16, t, k, inter), s.Get(ops.BF16, t, k, inter)
	y := s.Get(ops.BF16, t, k, hidden)
	perm, tiles := s.Get(ops.I32, t*k), s.Get(ops.I32, ops.ExpertTileRows(t, k, cfg.NumExperts), 3)
	routed, sharedOut := s.Get(ops.BF16, t, hidden), s.Get(ops.BF16, t, hidden)
	grouped := ops.Prompt(c, t) && cfg.NumExperts <= moeSortMaxExperts && inter%32 == 0 && hidden%32 == 0 &&
		x.Off%16 == 0 && gate.Off%16 == 0
	// The decode path's experts and shared expert in one launch (moe_up_bf16):
	// then only the router and the scalar gate are projected here.
	fusedUp := !grouped && c.Plan.ExpertSwiGLU && ops.MoEUpFits(e.gate, e.sharedGate, e.sharedUp)
	// Switch tiled-gemv: the experts on the matrix units (moe_up_mma_bf16),
	// for a step and a verify alike, so that their bits agree.
	tiledUp := fusedUp && c.Plan.TiledGEMV && ops.MoEUpTiledFits(c, e.gate, e.sharedGate, e.sharedUp)
	if fusedUp {
		ops.Project(c, x, []ops.QLinear{e.router, e.sharedExpertGate}, []ops.Tensor{routerLogits, gateLogit})
	} else {
		ops.Project(c, x, []ops.QLinear{e.router, e.sharedGate, e.sharedUp, e.sharedExpertGate},
			[]ops.Tensor{routerLogits, sg, su, gateLogit})
	}
	ops.RouterTopK(c, routerLogits, ids, weights, cfg.NormTopKProb)
	switch {
	case tiledUp:
		ops.MoEUpTiled(c, x, ids, e.gate, e.up, gate, e.sharedGate, e.sharedUp, sg)
	case fusedUp:
		ops.MoEUp(c, x, ids, e.gate, e.up, gate, e.sharedGate, e.sharedUp, sg)
	case grouped:
		// A prompt: the pairs sorted by expert, each expert's weights read once
		// per 64 of its pairs.
		sorted := ops.SortByExpert(c, ids, cfg.NumExperts, perm, tiles)
		ops.QGemmGather(c, x, sorted, e.gate, gate, false, c.Plan.ExactGEMM)
		ops.QGemmGather(c, x, sorted, e.up, up, false, c.Plan.ExactGEMM)
		ops.SwiGLU(c, gate, up, gate)
	case c.Plan.ExpertSwiGLU:
		ops.QMatmulGatherSwiGLU(c, x, ids, e.gate, e.up, gate)
	default:
		ops.QMatmulGather(c, x, ids, e.gate, gate, false)
		ops.QMatmulGather(c, x, ids, e.up, up, false)
		ops.SwiGLU(c, gate, up, gate)
	}
	if !fusedUp {
		ops.SwiGLU(c, sg, su, sg)
	}
	switch {
	case grouped:
		ops.QGemmGather(c, gate, ops.ExpertTiles{Perm: perm, Tiles: tiles, T: t, K: k, E: cfg.NumExperts}, e.down, y, true, c.Plan.ExactGEMM)
	case tiledUp && t <= ops.MoEDownTiledTokens && ops.MoEDownTiledFits(c, e.down, e.sharedDown, k):
		// With moe_up_mma_bf16, a step's and a verify's (at most 16 tokens) alike.
		ops.MoEDownTiled(c, gate, ids, weights, e.down, sg, e.sharedDown, gateLogit, out, true)
		return
	case c.Plan.MoEDown && k+1 <= moeDownMaxSlots:
		// The router's top-k ran two dispatches back.
		ops.MoEDown(c, gate, ids, weights, e.down, sg, e.sharedDown, gateLogit, out, true)
		return
	default:
		ops.QMatmulGather(c, gate, ids, e.down, y, true)
	}
	ops.MoECombine(c, y, weights, routed)
	ops.Linear(c, sg, e.sharedDown, sharedOut)
	ops.AddSigmoidScaled(c, routed, sharedOut, gateLogit, out)
}

// moeDownMaxSlots is the fused kernel's limit on the routed experts plus the
// shared one (kernels' MOE_MAX_SLOTS); a model routing to more takes the
// unfused path.
const moeDownMaxSlots = 32

// moeSortMaxExperts is moe_sort_i32's limit on the experts (kernels'
// MOE_SORT_MAX_EXPERTS); a model with more takes the GEMV path for its experts.
const moeSortMaxExperts = 1024
