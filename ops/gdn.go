package ops

import (
	"bagel/backend"
	"bagel/kernels"
)

// Conv1dSiLU is the GDN short causal depthwise convolution over x bf16 [T, C] with
// the last K−1 input rows of earlier calls in state bf16 [K−1, C] (updated), weight
// bf16 [C, K]; out bf16 [T, C] = silu(conv).
func Conv1dSiLU(c *Ctx, x, state, w, out Tensor, kernelSize int) {
	if len(x.Shape) != 2 {
		fail("conv1d: x %v", x)
	}
	t, ch := x.Shape[0], x.Shape[1]
	if !(state.Elements() == (kernelSize-1)*ch && w.Elements() == ch*kernelSize && out.Elements() == t*ch) {
		fail("conv1d: x %v state %v w %v out %v", x, state, w, out)
	}
	c.dispatch("conv1d_silu_bf16", x.Arg(), state.Arg(), w.Arg(), out.Arg(), backend.Int(t), backend.Int(ch), backend.Int(kernelSize))
}

// GDNGates computes the per-token, per-v-head decay g = exp(−exp(A_log)·softplus(a+dt_bias))
// and write strength beta = σ(b): a, b bf16 [T, Hv] → g, beta f32 [T, Hv].
func GDNGates(c *Ctx, a, b, aLog, dtBias, g, beta Tensor) {
	checkDType("gdn_gates aLog", aLog, backend.F32)
	hv := aLog.Elements()
	t := a.Elements() / hv
	if !(a.Elements() == t*hv && b.Elements() == t*hv && g.Elements() == t*hv && beta.Elements() == t*hv && dtBias.Elements() == hv) {
		fail("gdn_gates: a %v b %v aLog %v", a, b, aLog)
	}
	c.dispatch("gdn_gates_bf16", a.Arg(), b.Arg(), aLog.Arg(), dtBias.Arg(), g.Arg(), beta.Arg(), backend.Int(t), backend.Int(hv))
}

// GDNShape is the geometry of one Gated-DeltaNet layer.
type GDNShape struct{ Hk, Hv, Dk, Dv int }

// ConvDim is the width of the fused [q | k | v] projection.
func (s GDNShape) ConvDim() int { return 2*s.Hk*s.Dk + s.Hv*s.Dv }

// GDNRecurrence runs the gated delta rule over T tokens, sequentially in t, from the
// convolved [q | k | v] rows conv bf16 [T, ConvDim], the gate logits a, b bf16
// [T, Hv] (g and beta as GDNGates makes them from a, b, aLog f32 [Hv] and dtBias
// bf16 [Hv], computed in the same launch) and state f32 [Hv, Dv, Dk] (updated);
// out bf16 [T, Hv, Dv]. For more than gdnInlineNormTokens tokens the q and k
// heads of conv are first normalised in place, once per token
// (gdn_qk_norm_bf16), rather than once per state row inside the recurrence:
// the same values, so the same bits.
func GDNRecurrence(c *Ctx, conv, a, b, aLog, dtBias, state, out Tensor, s GDNShape) {
	checkDType("gdn state", state, backend.F32)
	checkDType("gdn_recurrence aLog", aLog, backend.F32)
	t := a.Elements() / s.Hv
	if !(conv.Elements() == t*s.ConvDim() && a.Elements() == t*s.Hv && b.Elements() == t*s.Hv && aLog.Elements() == s.Hv &&
		dtBias.Elements() == s.Hv && state.Elements() == s.Hv*s.Dv*s.Dk && out.Elements() == t*s.Hv*s.Dv) {
		fail("gdn_recurrence: conv %v a %v b %v state %v out %v shape %+v", conv, a, b, state, out, s)
	}
	normed := 0
	if t > gdnInlineNormTokens {
		c.dispatch("gdn_qk_norm_bf16", conv.Arg(), backend.Int(t), backend.Int(s.Hk), backend.Int(s.Hv), backend.Int(s.Dk), backend.Int(s.Dv))
		normed = 1
	}
	c.dispatch("gdn_recurrence_bf16", conv.Arg(), a.Arg(), b.Arg(), aLog.Arg(), dtBias.Arg(), state.Arg(), out.Arg(),
		backend.Int(t), backend.Int(s.Hk), backend.Int(s.Hv), backend.Int(s.Dk), backend.Int(s.Dv), backend.Int(normed))
}

// gdnInlineNormTokens is the most tokens whose q and k gdn_recurrence_bf16
// normalises itself (normed 0: every SIMD-group again for its rows). Up to a
// verify's 16 that is cheaper than gdn_qk_norm_bf16's launch before it (2.9 µs
// a GDN layer for 5 tokens, H200); a long run (no GEMM path) takes the launch,
// each head normalised once. The bits are the same either way.
const gdnInlineNormTokens = 16

// ConvMaxKernel is the longest conv QMatmulMultiConv and Conv1dSiLU take (CONV_MAX_K).
var ConvMaxKernel = kernels.Defines()["CONV_MAX_K"]

// GDNChunkMaxDk is the widest key head gdn_chunk_bf16 takes.
var GDNChunkMaxDk = kernels.Defines()["GDN_CHUNK_MAX_DK"]

// GDNPrepShape is the shape of the chunked rule's table for t tokens and hv
// v-heads: f32 [chunks, hv, 2C²+C], C = GDN_CHUNK.
func GDNPrepShape(t, hv int) []int {
	return []int{(t + gdnChunk - 1) / gdnChunk, hv, gdnPrep}
}

var (
	gdnChunk = kernels.Defines()["GDN_CHUNK"]
	gdnPrep  = 2*gdnChunk*gdnChunk + gdnChunk
)

// GDNChunked is GDNRecurrence for a prompt: q and k normalised once per token,
// each chunk's tables worked out at once (gdn_chunk_prep_f32 into prep, f32
// [GDNPrepShape(T, Hv)] or larger), then the rule over chunks of GDN_CHUNK
// tokens (gdn_chunk_bf16), whose sums run in another order than the sequential
// kernel's (f32 noise). s.Dk ≤ GDNChunkMaxDk. conv's q and k are normalised in
// place.
func GDNChunked(c *Ctx, conv, g, beta, prep, state, out Tensor, s GDNShape) {
	checkDType("gdn state", state, backend.F32)
	checkDType("gdn prep", prep, backend.F32)
	t := g.Elements() / s.Hv
	shape := GDNPrepShape(t, s.Hv)
	if !(s.Dk <= GDNChunkMaxDk) {
		fail("gdn_chunk: Dk %d > %d", s.Dk, GDNChunkMaxDk)
	}
	if !(prep.Elements() >= shape[0]*shape[1]*shape[2]) {
		fail("gdn_chunk: prep %v for %v", prep, shape)
	}
	if !(conv.Elements() == t*s.ConvDim() && beta.Elements() == t*s.Hv && state.Elements() == s.Hv*s.Dv*s.Dk && out.Elements() == t*s.Hv*s.Dv) {
		fail("gdn_chunk: conv %v g %v state %v out %v shape %+v", conv, g, state, out, s)
	}
	dims := [...]backend.Arg{backend.Int(t), backend.Int(s.Hk), backend.Int(s.Hv), backend.Int(s.Dk), backend.Int(s.Dv)}
	c.dispatch("gdn_qk_norm_bf16", append(c.args(conv.Arg()), dims[:]...)...)
	c.dispatch("gdn_chunk_prep_f32", append(c.args(conv.Arg(), g.Arg(), beta.Arg(), prep.Arg()), dims[:]...)...)
	c.dispatch("gdn_chunk_bf16", append(c.args(conv.Arg(), beta.Arg(), prep.Arg(), state.Arg(), out.Arg()), dims[:]...)...)
}

// GDNRule runs the gated delta rule over T tokens' convolved [q | k | v]
// rows (conv bf16 [T, ConvDim]) and gate logits (a, b bf16 [T, Hv]),
// advancing state f32 [Hv, Dv, Dk], into o bf16 [T, Hv, Dv]. A prompt goes
// chunk by chunk (GDNGates into decay and beta f32 [T, Hv], then GDNChunked
// with prep, GDNPrepShape's table), those three taken from the scratch;
// otherwise token by token, the gates computed inside the recurrence.
func GDNRule(c *Ctx, conv, aLogits, bLogits, aLog, dtBias, state, o Tensor, shape GDNShape) {
	if t := conv.Shape[0]; Prompt(c, t) && shape.Dk <= GDNChunkMaxDk {
		s := c.Scratch
		decay, beta := s.Get("gdn.decay", F32, t, shape.Hv), s.Get("gdn.beta", F32, t, shape.Hv)
		prep := s.Get("gdn.prep", F32, GDNPrepShape(t, shape.Hv)...)
		GDNGates(c, aLogits, bLogits, aLog, dtBias, decay, beta)
		GDNChunked(c, conv, decay, beta, prep, state, o, shape)
		return
	}
	GDNRecurrence(c, conv, aLogits, bLogits, aLog, dtBias, state, o, shape)
}
