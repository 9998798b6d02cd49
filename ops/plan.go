package ops

import "slices"

// Plan is the kernel plan of a loaded model: which launches serve the
// semantic ops below (Linear, Project, AddNorm, ProjectConv, and the
// choices of the experts', attention's and the GDN rule's ops), chosen once at
// load from the engine's switches (engine/paths.go fills it, each field one
// switch) and carried in Ctx. The model states the math; the plan and the
// device's capabilities, asked here, pick GEMV or GEMM, matrix units or not,
// fused or not. The zero Plan is every path unfused, on the GEMV: the
// reference the fused paths are held to.
type Plan struct {
	AddNorm      bool // each residual add with the norm after it (add_rms_norm_bf16)
	Projections  bool // the projections of one input in one launch (qmatmul_multi_bf16)
	ExpertSwiGLU bool // the experts' gate, up and SwiGLU in one launch
	MoEDown      bool // the experts' down, their sum and the shared expert's down in one launch
	GDNConv      bool // a decode step's GDN in-projection and conv in one launch
	GDNConvBatch bool // a batched step's, every sequence's conv in it (tiled GEMVs)
	AttnPrep     bool // attention's preamble in one launch (attn_prep_bf16)
	SplitKV      bool // decode attention over a long context split across threadgroups
	SplitKVTiled bool // its first half on the matrix units (attention_split_mma_f32)
	PrefillGEMM  bool // a prompt's projections as GEMMs, experts grouped, the GDN rule chunked
	ExactGEMM    bool // the prompt GEMMs with every weight exact (docs/numerics.md)
	MultiGEMM    bool // a prompt's GEMMs of one input in one launch
	PrefillSplit bool // a prompt's attention on the split-KV kernels
	PrefillFlash bool // a prompt's attention as flash attention on the matrix units
	TiledGEMV    bool // decode and verify GEMVs on the matrix units (qmatmul_mma_bf16 and kin)
	// TiledExperts: the experts' gate, up and down on the matrix units
	// (moe_up_mma_bf16, moe_down_mma_bf16: an expert's rows read once for up
	// to 16 of a launch's tokens routed to it), whatever TiledGEMV; without,
	// on their plain kernels (moe_up_bf16, moe_down_bf16, each slot reading
	// its own expert), which were the faster where a launch's tokens route
	// apart, as a real model's replies do (H100, docs/batching.md).
	TiledExperts bool
	// ShortPromptTiled: a prompt's forward under the prompt path (PromptMin)
	// takes the tiled GEMVs though TiledGEMV is off. Only the engine knows a
	// forward is a prompt (a verify of as many tokens must keep the step's
	// bits): it turns TiledGEMV on for such a forward.
	ShortPromptTiled bool
	// TiledPrompts: a lone reply's prompt under the prompt path runs on the
	// tiled GEMVs (ShortPromptTiled, decode steps on the plain ones) and the
	// model's experts take them, which moves the prompt path's start to
	// TiledPromptMinTokens. The engine sets it at load, from the model's
	// weights and the device.
	TiledPrompts bool
	// RepliesPrompts: a model loaded for several replies starts the prompt
	// path at RepliesPromptMinTokens (switch short-prompts-together), so
	// that short prompts arriving together (a chat's follow-up messages,
	// an agent's tool results) prefill in one forward, each weight read once
	// for all of them, where on the step kernels each would take a forward
	// of its own. A lone reply's prompt of RepliesPromptMinTokens to
	// PromptMin−1 tokens reaches its first token later on that path.
	RepliesPrompts bool
}

// PromptMinTokens is the fewest tokens a forward runs on the prompt path
// (GEMMs, grouped experts, the chunked GDN rule) where the step kernels are
// the plain GEMVs. Below it (decode, a speculative verify of a few drafts)
// every token keeps the GEMV's bits: the GEMM sums in another order (and
// without ExactGEMM rounds the weights to bf16 first).
const PromptMinTokens = 32

// TiledPromptMinTokens is the prompt path's start on a plan with
// TiledPrompts: the tiled step kernels read each expert's rows once for 16
// tokens routed to it, so a MoE's lone prompt reached its first token
// sooner on them up to 72 tokens and later from 79 (H100, 35B-A3B shapes,
// twenty-eighth session, against the prompt path: 48 tokens 14.2 against
// 20.7 ms, 64: 18.8 against 21.3, 72: 21.3 against 22.0, 79: 23.2 against
// 22.1; docs/benchmarks.md). The crossing is near 74: from 72 on, the
// prompt path.
const TiledPromptMinTokens = 72

// RepliesPromptMinTokens is the prompt path's start on a plan with
// RepliesPrompts: one token more than a speculative verify's most (a draft
// of 15 and its token), whose logits must stay the steps' bits.
const RepliesPromptMinTokens = MultiConvTiledTokens + 1

// PromptMin is the fewest tokens a forward runs on the prompt path on p.
func (p Plan) PromptMin() int {
	if p.RepliesPrompts {
		return RepliesPromptMinTokens
	}
	if p.TiledPrompts {
		return TiledPromptMinTokens
	}
	return PromptMinTokens
}

// gemmMinRows is the fewest output rows a prompt runs as a GEMM. A smaller
// matrix (the GDN b and a projections, a router of few experts, the shared
// expert's scalar gate) gives the GEMM too few threadgroups to fill the GPU,
// while the GEMV's T·Out/4 of them re-read a matrix that stays in cache.
const gemmMinRows = 128

// Prompt reports whether a forward over t tokens takes the prompt path.
func Prompt(c *Ctx, t int) bool { return c.Plan.PrefillGEMM && t >= c.Plan.PromptMin() }

// useGEMM reports whether out = x·wᵀ over t tokens runs as a GEMM (which
// reads x in 16-byte pieces).
func useGEMM(c *Ctx, t int, x Tensor, w QLinear, out Tensor) bool {
	return Prompt(c, t) && w.Out >= gemmMinRows && w.In%32 == 0 && out.DType == BF16 && x.Off%16 == 0
}

// Linear computes out = x·wᵀ for x bf16 [T, w.In]: a GEMM for a prompt, the
// GEMV otherwise (LinearStep).
func Linear(c *Ctx, x Tensor, w QLinear, out Tensor) {
	if useGEMM(c, x.Elements()/w.In, x, w, out) {
		QGemm(c, x, w, out, c.Plan.ExactGEMM)
		return
	}
	LinearStep(c, x, w, out)
}

// LinearStep computes out = x·wᵀ token by token: on the matrix units where the
// plan has them and the device and weight allow, the plain GEMV otherwise. The
// choice never depends on T, so a decode step and a speculative verify take
// the same kernel (and give the same bits).
func LinearStep(c *Ctx, x Tensor, w QLinear, out Tensor) {
	if c.Plan.TiledGEMV && TiledGEMV(c, w) {
		QMatmulTiled(c, x, w, out)
		return
	}
	QMatmul(c, x, w, out)
}

// Project computes outs[i] = x·ws[i]ᵀ for the projections of one input: for a
// prompt, a GEMM for each large matrix (in one launch with MultiGEMM); the
// rest in one launch with Projections, one LinearStep each otherwise.
func Project(c *Ctx, x Tensor, ws []QLinear, outs []Tensor) {
	if t := x.Elements() / ws[0].In; Prompt(c, t) {
		ws, outs = projectGEMMs(c, x, t, ws, outs)
	}
	if len(ws) == 0 {
		return
	}
	if c.Plan.Projections {
		if tiledMulti(c, ws) {
			QMatmulMultiTiled(c, x, ws, outs)
			return
		}
		QMatmulMulti(c, x, ws, outs)
		return
	}
	for i := range ws {
		LinearStep(c, x, ws[i], outs[i])
	}
}

// projectGEMMs runs the projections that take a GEMM and returns the others.
func projectGEMMs(c *Ctx, x Tensor, t int, ws []QLinear, outs []Tensor) ([]QLinear, []Tensor) {
	var gemmW, restW []QLinear
	var gemmOut, restOut []Tensor
	for i := range ws {
		if useGEMM(c, t, x, ws[i], outs[i]) {
			gemmW, gemmOut = append(gemmW, ws[i]), append(gemmOut, outs[i])
		} else {
			restW, restOut = append(restW, ws[i]), append(restOut, outs[i])
		}
	}
	if c.Plan.MultiGEMM && len(gemmW) > 1 {
		QGemmMulti(c, x, gemmW, gemmOut, c.Plan.ExactGEMM)
	} else {
		for i := range gemmW {
			QGemm(c, x, gemmW[i], gemmOut[i], c.Plan.ExactGEMM)
		}
	}
	return restW, restOut
}

// tiledMulti says whether the projections ws over one x take the
// matrix-unit launch (QMatmulMultiTiled, or its conv twin on a decode step):
// where the plan has it and one of them is a weight the matrix units take. A
// step's fused in-projection and conv and a verify's projections must decide
// alike, or a verify would not give a step's bits.
func tiledMulti(c *Ctx, ws []QLinear) bool {
	return c.Plan.TiledGEMV && slices.ContainsFunc(ws, func(w QLinear) bool { return TiledGEMV(c, w) })
}

// AddNorm is the residual add x += branch and normed = rms(x) under w, in
// one launch where the plan fuses them (the same bits).
func AddNorm(c *Ctx, x, branch, w, normed Tensor, eps float32) {
	if c.Plan.AddNorm {
		AddRMSNorm(c, x, branch, w, x, normed, eps)
		return
	}
	Add(c, x, branch, x)
	RMSNorm(c, x, w, normed, eps)
}

// ProjectConvFuses says whether the GDN in-projection ws of t tokens runs
// with its conv in one launch (ProjectConv): a decode step's (not while
// recording: the plain launch keeps no projection for a replay) where the
// plan fuses both, and on the matrix units up to MultiConvTiledTokens tokens,
// a verify's too, so that a verify takes the step's launch and its bits.
func ProjectConvFuses(c *Ctx, ws []QLinear, t int, recording bool, kernelSize int) bool {
	if !c.Plan.GDNConv || !c.Plan.Projections || kernelSize > ConvMaxKernel {
		return false
	}
	if tiledMulti(c, ws) {
		return t <= MultiConvTiledTokens
	}
	return t == 1 && !recording
}

// ProjectConvBatchFuses says whether a batched step's GDN in-projection
// over t rows runs with its sequences' convs in one launch
// (ProjectConvBatch): on the tiled GEMVs, one tile of rows, every row a
// sequence's of the pool (pooled rows of t).
func ProjectConvBatchFuses(c *Ctx, ws []QLinear, t, pooled, kernelSize int) bool {
	return c.Plan.GDNConvBatch && c.Plan.Projections && kernelSize <= ConvMaxKernel && tiledMulti(c, ws) &&
		t <= MultiConvTiledTokens && pooled == t
}

// ProjectConvBatch is ProjectConv over a batched step's rows, each
// sequence's through the window of its pool slot (QMatmulMultiConvTiledBatch).
// Call it where ProjectConvBatchFuses.
func ProjectConvBatch(c *Ctx, x Tensor, ws []QLinear, outs []Tensor, raw, base, runs Tensor, stride int, w Tensor, kernelSize int) {
	QMatmulMultiConvTiledBatch(c, x, ws, outs, raw, base, runs, stride, w, kernelSize)
}

// ProjectConv is the GDN in-projection and conv in one launch, the
// projections as Project computes them; raw gets the first projection on the
// matrix units' launch (unused by the other). Call it where ProjectConvFuses.
func ProjectConv(c *Ctx, x Tensor, ws []QLinear, outs []Tensor, raw, state, w Tensor, kernelSize int) {
	if tiledMulti(c, ws) {
		QMatmulMultiConvTiled(c, x, ws, outs, raw, state, w, kernelSize)
		return
	}
	QMatmulMultiConv(c, x, ws, outs, state, w, kernelSize)
}
