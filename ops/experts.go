package ops

// Experts is a mixture-of-experts block: a router, E experts of SwiGLU MLPs
// (stacked [E, ...]) of which each token takes the top K, weighted by the
// router's softmax (renormalised over the K when NormTopK), and a shared
// expert gated by sigmoid(x·SharedExpertGate). Qwen3.5-MoE's block
// (MLX_QWEN35.md §3).
type Experts struct {
	Router                           QLinear // [E, hidden]
	Gate, Up, Down                   QLinear // stacked experts
	SharedGate, SharedUp, SharedDown QLinear
	SharedExpertGate                 QLinear // [1, hidden]
	K                                int
	NormTopK                         bool
}

// moeDownMaxSlots is the fused down's limit on the routed experts plus the
// shared one (kernels' MOE_MAX_SLOTS); a model routing to more takes the
// unfused path.
const moeDownMaxSlots = 32

// moeSortMaxExperts is moe_sort_i32's limit on the experts (kernels'
// MOE_SORT_MAX_EXPERTS); a model with more takes the GEMV path for its experts.
const moeSortMaxExperts = 1024

// MoE computes the block for x bf16 [T, hidden] (normed) into out bf16 [T,
// hidden]: out = Σ_k w_k·expert_k(x) + sigmoid(x·g)·shared(x). The plan picks
// how: a prompt sorts the (token, expert) pairs and runs each expert's
// weights once over its tokens as grouped GEMMs; a step runs the experts'
// gate and up with the shared expert's in one launch (on the matrix units
// with TiledGEMV, a step's and a verify's alike), and the down projections
// with their weighted sum and the shared expert's down and gate in another;
// the unfused ops are the reference.
func MoE(c *Ctx, x Tensor, m Experts, out Tensor) {
	t, k, hidden, inter, ne := x.Shape[0], m.K, m.Down.Out, m.Gate.Out, m.Gate.Experts
	s := c.Scratch
	// What reads x: the router, the shared expert's gate and up, its scalar gate.
	routerLogits := s.Get("moe.router", BF16, t, ne)
	gateLogit := s.Get("moe.shared_gate_logit", BF16, t)
	sg := s.Get("moe.shared_gate", BF16, t, m.SharedGate.Out) // then silu(gate)·up
	ids, weights := s.Get("moe.ids", I32, t, k), s.Get("moe.weights", BF16, t, k)
	gate := s.Get("moe.gate", BF16, t, k, inter) // then silu(gate)·up
	up := func() Tensor { return s.Get("moe.up", BF16, t, k, inter) }
	grouped := Prompt(c, t) && ne <= moeSortMaxExperts && inter%32 == 0 && hidden%32 == 0 &&
		x.Off%16 == 0 && gate.Off%16 == 0
	// The decode path's experts and shared expert in one launch (moe_up_bf16):
	// then only the router and the scalar gate are projected here.
	fusedUp := !grouped && c.Plan.ExpertSwiGLU && MoEUpFits(m.Gate, m.SharedGate, m.SharedUp)
	// TiledExperts: the experts on the matrix units (moe_up_mma_bf16), for a
	// step and a verify alike, so that their bits agree (as the plain
	// kernels' do), whatever the plan's other GEMVs.
	tiledUp := fusedUp && c.Plan.TiledExperts && MoEUpTiledFits(c, m.Gate, m.SharedGate, m.SharedUp)
	var su Tensor
	if fusedUp {
		Project(c, x, []QLinear{m.Router, m.SharedExpertGate}, []Tensor{routerLogits, gateLogit})
	} else {
		su = s.Get("moe.shared_up", BF16, t, m.SharedUp.Out)
		Project(c, x, []QLinear{m.Router, m.SharedGate, m.SharedUp, m.SharedExpertGate},
			[]Tensor{routerLogits, sg, su, gateLogit})
	}
	var perm, tiles, y Tensor
	RouterTopK(c, routerLogits, ids, weights, m.NormTopK)
	switch {
	case tiledUp:
		MoEUpTiled(c, x, ids, m.Gate, m.Up, gate, m.SharedGate, m.SharedUp, sg)
	case fusedUp:
		MoEUp(c, x, ids, m.Gate, m.Up, gate, m.SharedGate, m.SharedUp, sg)
	case grouped:
		// A prompt: the pairs sorted by expert, each expert's weights read once
		// per tile of its pairs.
		perm, tiles = s.Get("moe.perm", I32, t*k), s.Get("moe.tiles", I32, ExpertTileRows(t, k, ne), 3)
		sorted := SortByExpert(c, ids, ne, perm, tiles)
		up := up()
		QGemmGather(c, x, sorted, m.Gate, gate, false, c.Plan.ExactGEMM)
		QGemmGather(c, x, sorted, m.Up, up, false, c.Plan.ExactGEMM)
		SwiGLU(c, gate, up, gate)
	case c.Plan.ExpertSwiGLU:
		QMatmulGatherSwiGLU(c, x, ids, m.Gate, m.Up, gate)
	default:
		up := up()
		QMatmulGather(c, x, ids, m.Gate, gate, false)
		QMatmulGather(c, x, ids, m.Up, up, false)
		SwiGLU(c, gate, up, gate)
	}
	if !fusedUp {
		SwiGLU(c, sg, su, sg)
	}
	switch {
	case grouped:
		y = s.Get("moe.y", BF16, t, k, hidden)
		QGemmGather(c, gate, ExpertTiles{Perm: perm, Tiles: tiles, T: t, K: k, E: ne}, m.Down, y, true, c.Plan.ExactGEMM)
	case tiledUp && MoEDownTiledFits(c, m.Down, m.SharedDown, k):
		moeDownTiledSlices(c, gate, ids, weights, m, sg, gateLogit, out)
		return
	case c.Plan.MoEDown && k+1 <= moeDownMaxSlots:
		// The router's top-k ran two dispatches back.
		if MoEDownWarpFits(ids, m.Down, m.SharedDown) {
			MoEDownWarp(c, gate, ids, weights, m.Down, sg, m.SharedDown, gateLogit, out, true)
			return
		}
		MoEDown(c, gate, ids, weights, m.Down, sg, m.SharedDown, gateLogit, out, true)
		return
	default:
		y = s.Get("moe.y", BF16, t, k, hidden)
		QMatmulGather(c, gate, ids, m.Down, y, true)
	}
	routed, sharedOut := s.Get("moe.routed", BF16, t, hidden), s.Get("moe.shared_out", BF16, t, hidden)
	MoECombine(c, y, weights, routed)
	Linear(c, sg, m.SharedDown, sharedOut)
	AddSigmoidScaled(c, routed, sharedOut, gateLogit, out)
}

// TiledExperts says whether m's experts can run on the matrix units (on a
// plan with TiledExperts), for a step and any forward under the prompt path:
// moe_up_mma_bf16 (the fused up on weights it takes), then moe_down_mma_bf16
// 16 tokens at a time.
func TiledExperts(c *Ctx, m Experts) bool {
	return c.Plan.ExpertSwiGLU && MoEUpTiledFits(c, m.Gate, m.SharedGate, m.SharedUp) &&
		MoEDownTiledFits(c, m.Down, m.SharedDown, m.K)
}

// moeDownTiledSlices is MoE's down projection on the matrix units
// (moe_down_mma_bf16, with moe_up_mma_bf16): a step's and a verify's (at
// most MoEDownTiledTokens, 16) in one launch, alike; more tokens (a prompt
// under the prompt path, Plan.PromptMin, on the step kernels) 16 at a time. A token's sums
// do not depend on the others in its launch, so each gets its bits alone,
// where moe_down_bf16 took a launch a token's expert (112.7 µs a layer for
// 31 tokens on an H100, ncu, twenty-sixth session).
func moeDownTiledSlices(c *Ctx, gate, ids, weights Tensor, m Experts, sg, gateLogit, out Tensor) {
	t := gate.Shape[0]
	for r := 0; r < t; r += MoEDownTiledTokens {
		e := min(t, r+MoEDownTiledTokens)
		MoEDownTiled(c, gate.Rows(r, e), ids.Rows(r, e), weights.Rows(r, e), m.Down, sg.Rows(r, e), m.SharedDown,
			gateLogit.Rows(r, e), out.Rows(r, e), r == 0) // a later slice waits for the one before it
	}
}
