package qwen

import (
	"math"

	"bagel/ops"
)

// attention is a gated full-attention layer (MLX_QWEN35.md §3, "Gated full attention").
type attention struct {
	qProj, kProj, vProj, oProj ops.QLinear // q_proj out = heads·2·headDim, per head [q | gate]
	qNorm, kNorm               ops.Tensor  // bf16 [headDim]
}

// gatedDeltaNet is a linear-attention layer (MLX_QWEN35.md §3, "Gated DeltaNet").
type gatedDeltaNet struct {
	inProjQKV, inProjZ, inProjB, inProjA, outProj ops.QLinear
	conv                                          ops.Tensor // bf16 [convDim, K]
	aLog                                          ops.Tensor // f32 [Hv]
	dtBias                                        ops.Tensor // bf16 [Hv]
	norm                                          ops.Tensor // bf16 [Dv], not shifted
}

// denseMLP is down(silu(gate(x)) ⊙ up(x)).
type denseMLP struct{ gate, up, down ops.QLinear }

// sparseMoE routes each token to top-k experts plus a sigmoid-gated shared expert.
type sparseMoE struct {
	router                           ops.QLinear // [E, hidden], 8-bit in official conversions
	gate, up, down                   ops.QLinear // stacked [E, ...]
	sharedGate, sharedUp, sharedDown ops.QLinear
	sharedExpertGate                 ops.QLinear // [1, hidden]
}

type layer struct {
	inputNorm, postNorm ops.Tensor // bf16 [hidden], 1+w folded in
	attn                *attention
	gdn                 *gatedDeltaNet
	mlp                 *denseMLP
	moe                 *sparseMoE
}

// forwardAttention: x bf16 [T, hidden] (normed) → out bf16 [T, hidden].
func (m *Model) forwardAttention(c *ops.Ctx, a *attention, kv *layerCache, pos0 int, x, out ops.Tensor) {
	cfg := m.Cfg
	t, hq, hkv, d := x.Shape[0], cfg.NumHeads, cfg.NumKVHeads, cfg.HeadDim
	s := c.Scratch
	qp := s.Get(ops.BF16, t, hq, 2*d)
	ops.QMatmul(c, x, a.qProj, qp)
	q, gate := s.Get(ops.BF16, t, hq, d), s.Get(ops.BF16, t, hq, d)
	ops.SplitQGate(c, qp, q, gate)
	k, v := s.Get(ops.BF16, t, hkv, d), s.Get(ops.BF16, t, hkv, d)
	ops.QMatmul(c, x, a.kProj, k)
	ops.QMatmul(c, x, a.vProj, v)
	ops.RMSNorm(c, q, a.qNorm, q, cfg.RMSNormEps)
	ops.RMSNorm(c, k, a.kNorm, k, cfg.RMSNormEps)
	theta := float32(cfg.RopeTheta)
	ops.RoPE(c, q, cfg.RotaryDims(), pos0, theta)
	ops.RoPE(c, k, cfg.RotaryDims(), pos0, theta)
	ops.KVAppend(c, k, v, kv.keys, kv.values, pos0)
	attn := s.Get(ops.BF16, t, hq, d)
	ops.Attention(c, q, kv.keys, kv.values, attn, pos0+t, float32(1/math.Sqrt(float64(d))))
	ops.SigmoidMul(c, attn, gate, attn)
	ops.QMatmul(c, attn.Reshape(t, hq*d), a.oProj, out)
}

// forwardGDN: x bf16 [T, hidden] (normed) → out bf16 [T, hidden].
func (m *Model) forwardGDN(c *ops.Ctx, g *gatedDeltaNet, st *layerCache, x, out ops.Tensor) {
	cfg := m.Cfg
	t := x.Shape[0]
	shape := ops.GDNShape{Hk: cfg.LinearKeyHeads, Hv: cfg.LinearValueHeads, Dk: cfg.LinearKeyDim, Dv: cfg.LinearValueDim}
	s := c.Scratch
	qkv := s.Get(ops.BF16, t, shape.ConvDim())
	ops.QMatmul(c, x, g.inProjQKV, qkv)
	z := s.Get(ops.BF16, t, shape.Hv, shape.Dv)
	ops.QMatmul(c, x, g.inProjZ, z)
	bLogits, aLogits := s.Get(ops.BF16, t, shape.Hv), s.Get(ops.BF16, t, shape.Hv)
	ops.QMatmul(c, x, g.inProjB, bLogits)
	ops.QMatmul(c, x, g.inProjA, aLogits)
	conv := s.Get(ops.BF16, t, shape.ConvDim())
	ops.Conv1dSiLU(c, qkv, st.conv, g.conv, conv, cfg.ConvKernel)
	decay, beta := s.Get(ops.F32, t, shape.Hv), s.Get(ops.F32, t, shape.Hv)
	ops.GDNGates(c, aLogits, bLogits, g.aLog, g.dtBias, decay, beta)
	o := s.Get(ops.BF16, t, shape.Hv, shape.Dv)
	ops.GDNRecurrence(c, conv, decay, beta, st.state, o, shape)
	ops.RMSNormGated(c, o, z, g.norm, o, cfg.RMSNormEps)
	ops.QMatmul(c, o.Reshape(t, shape.Hv*shape.Dv), g.outProj, out)
}

// forwardDense: x bf16 [T, hidden] (normed) → out bf16 [T, hidden].
func (m *Model) forwardDense(c *ops.Ctx, d *denseMLP, x, out ops.Tensor) {
	t := x.Shape[0]
	s := c.Scratch
	gate, up := s.Get(ops.BF16, t, d.gate.Out), s.Get(ops.BF16, t, d.up.Out)
	ops.QMatmul(c, x, d.gate, gate)
	ops.QMatmul(c, x, d.up, up)
	ops.SwiGLU(c, gate, up, gate)
	ops.QMatmul(c, gate, d.down, out)
}

// forwardMoE: x bf16 [T, hidden] (normed) → out bf16 [T, hidden].
func (m *Model) forwardMoE(c *ops.Ctx, e *sparseMoE, x, out ops.Tensor) {
	cfg := m.Cfg
	t, k, hidden, inter := x.Shape[0], cfg.ExpertsPerToken, cfg.HiddenSize, cfg.MoEIntermediateSize
	s := c.Scratch
	routerLogits := s.Get(ops.BF16, t, cfg.NumExperts)
	ops.QMatmul(c, x, e.router, routerLogits)
	ids, weights := s.Get(ops.I32, t, k), s.Get(ops.BF16, t, k)
	ops.RouterTopK(c, routerLogits, ids, weights, cfg.NormTopKProb)
	gate, up := s.Get(ops.BF16, t, k, inter), s.Get(ops.BF16, t, k, inter)
	ops.QMatmulGather(c, x, ids, e.gate, gate, false)
	ops.QMatmulGather(c, x, ids, e.up, up, false)
	ops.SwiGLU(c, gate, up, gate)
	y := s.Get(ops.BF16, t, k, hidden)
	ops.QMatmulGather(c, gate, ids, e.down, y, true)
	routed := s.Get(ops.BF16, t, hidden)
	ops.MoECombine(c, y, weights, routed)

	sharedOut := s.Get(ops.BF16, t, hidden)
	sg, su := s.Get(ops.BF16, t, e.sharedGate.Out), s.Get(ops.BF16, t, e.sharedUp.Out)
	ops.QMatmul(c, x, e.sharedGate, sg)
	ops.QMatmul(c, x, e.sharedUp, su)
	ops.SwiGLU(c, sg, su, sg)
	ops.QMatmul(c, sg, e.sharedDown, sharedOut)
	gateLogit := s.Get(ops.BF16, t)
	ops.QMatmul(c, x, e.sharedExpertGate, gateLogit)
	ops.AddSigmoidScaled(c, routed, sharedOut, gateLogit, out)
}
