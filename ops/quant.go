package ops

import (
	"slices"

	"bagel/backend"
	"bagel/kernels"
)

// Embed gathers and dequantizes rows of a quantized embedding.
// ids i32 [T] → out bf16 [T, In].
func Embed(c *Ctx, ids Tensor, emb QLinear, out Tensor) {
	checkDType("embed ids", ids, backend.I32)
	checkDType("embed out", out, backend.BF16)
	t := ids.Elements()
	if out.Elements() != t*emb.In {
		fail("embed: out %v for %d ids of width %d", out, t, emb.In)
	}
	args := emb.appendArgs(c.args(ids.Arg()))
	c.dispatch("embed_dequant_bf16", append(args, out.Arg(), backend.Int(t), backend.Int(emb.In), backend.Int(emb.Bits), backend.Int(emb.GroupSize))...)
}

// QMatmul computes out = x · Wᵀ for a 2-D quantized weight.
// x bf16 [T, In] → out [T, Out], bf16 or f32.
func QMatmul(c *Ctx, x Tensor, w QLinear, out Tensor) {
	qmatmul(c, x, w, out, "qmatmul_bf16")
}

// QMatmulTiled is QMatmul on the matrix units (qmatmul_mma_bf16): one
// launch's tokens, up to 16, cost about what one does, and a token's output
// is the same bits whatever the launch's other tokens, so a decode step and a
// speculative verify agree. Use it where TiledGEMV says it fits; its bits
// differ from QMatmul's by the order of f32 sums.
func QMatmulTiled(c *Ctx, x Tensor, w QLinear, out Tensor) {
	if !TiledGEMV(c, w) {
		fail("qmatmul %s: the tiled GEMV takes 4-bit weights in groups of 64 or 128 on a device with matrix units, not %d-bit in groups of %d", w.Name, w.Bits, w.GroupSize)
	}
	qmatmul(c, x, w, out, "qmatmul_mma_bf16")
}

// TiledGEMV says whether QMatmulTiled runs w on c's device: 4-bit codes in
// groups of 64 or 128, and matrix units (backend.MatrixUnits; the CPU
// runs the reference). The answer depends on the weight, never on the tokens:
// a step and a verify must take the same kernel.
func TiledGEMV(c *Ctx, w QLinear) bool {
	return TiledGEMVs(c) && w.Experts == 0 && w.Bits == 4 && (w.GroupSize == 64 || w.GroupSize == 128)
}

// TiledGEMVs says whether c's device runs the matrix-unit GEMVs
// (backend.MatrixUnits): QMatmulMultiTiled and QMatmulMultiConvTiled, which
// take any weights (those TiledGEMV refuses by whole dot products).
func TiledGEMVs(c *Ctx) bool {
	m, ok := c.Dev.(backend.MatrixUnits)
	return ok && m.MatrixUnits()
}

// qmatmul dispatches kernel (a qmatmul_bf16 or its _f32 twin by out's dtype).
func qmatmul(c *Ctx, x Tensor, w QLinear, out Tensor, kernel string) {
	checkDType("qmatmul x", x, backend.BF16)
	if w.Experts != 0 {
		fail("qmatmul: %s is a stacked expert weight", w.Name)
	}
	if x.Elements()%w.In != 0 {
		fail("qmatmul %s: x %v, In %d", w.Name, x, w.In)
	}
	if x.Off%4 != 0 {
		fail("qmatmul %s: x at byte offset %d: the kernel reads x as 4-byte words", w.Name, x.Off)
	}
	t := x.Elements() / w.In
	if out.Elements() != t*w.Out {
		fail("qmatmul %s: out %v, want [%d,%d]", w.Name, out, t, w.Out)
	}
	switch out.DType {
	case backend.BF16:
	case backend.F32:
		kernel += "_f32"
	default:
		if !false {
			fail("qmatmul %s: out dtype %v", w.Name, out.DType)
		}
	}
	args := w.appendArgs(c.args(x.Arg()))
	args = append(args, out.Arg(), backend.Int(t), backend.Int(w.In), backend.Int(w.Out), backend.Int(w.Bits), backend.Int(w.GroupSize))
	c.dispatch(kernel, args...)
}

// QMatmulGather applies, for each token t and slot s, expert ids[t,s] of a stacked
// weight [E, Out, In]. x is bf16 [T, In] shared by the slots (perSlot false) or
// [T, K, In] (perSlot true); ids i32 [T, K]; out bf16 [T, K, Out].
func QMatmulGather(c *Ctx, x, ids Tensor, w QLinear, out Tensor, perSlot bool) {
	checkDType("gather x", x, backend.BF16)
	checkDType("gather ids", ids, backend.I32)
	checkDType("gather out", out, backend.BF16)
	if !(w.Experts > 0) {
		fail("gather: %s is not a stacked expert weight", w.Name)
	}
	if len(ids.Shape) != 2 {
		fail("gather: ids %v", ids)
	}
	t, k := ids.Shape[0], ids.Shape[1]
	xRows := t
	xPerSlot := 0
	if perSlot {
		xRows, xPerSlot = t*k, 1
	}
	if x.Elements() != xRows*w.In {
		fail("gather %s: x %v", w.Name, x)
	}
	if x.Off%4 != 0 {
		fail("gather %s: x at byte offset %d: the kernel reads x as 4-byte words", w.Name, x.Off)
	}
	if out.Elements() != t*k*w.Out {
		fail("gather %s: out %v", w.Name, out)
	}
	args := w.appendArgs(c.args(x.Arg(), ids.Arg()))
	args = append(args, out.Arg(), backend.Int(t), backend.Int(k), backend.Int(w.In), backend.Int(w.Out),
		backend.Int(w.Bits), backend.Int(w.GroupSize), backend.Int(xPerSlot))
	c.dispatch("qmatmul_gather_bf16", args...)
}

// QMatmulMulti computes outs[i] = x · ws[i]ᵀ for up to four 2-D weights of the
// same input width in one dispatch (the projections of a mixer, which all read
// the same normed x). x bf16 [T, In] → outs[i] bf16 [T, ws[i].Out].
func QMatmulMulti(c *Ctx, x Tensor, ws []QLinear, outs []Tensor) {
	_, args := multiArgs(c, x, ws, outs)
	c.dispatch("qmatmul_multi_bf16", args...)
}

// QMatmulMultiTiled is QMatmulMulti on the matrix units
// (qmatmul_mma_multi_bf16): each weight TiledGEMV takes as QMatmulTiled
// computes it, the others by whole dot products; either way a token's
// outputs are the same bits whatever the launch's other tokens. Use it where
// TiledGEMVs says the device runs it.
func QMatmulMultiTiled(c *Ctx, x Tensor, ws []QLinear, outs []Tensor) {
	if !TiledGEMVs(c) {
		fail("qmatmul_multi %s: the tiled GEMV needs a device with matrix units", ws[0].Name)
	}
	_, args := multiArgs(c, x, ws, outs)
	c.dispatch("qmatmul_mma_multi_bf16", args...)
}

// QMatmulMultiConv is QMatmulMulti for one token whose first projection
// (ConvDim channels) goes on through Conv1dSiLU's step: outs[0] gets the
// conv's output, and the window state [K−1, channels] advances (w [channels,
// K]). The decode step's GDN in-projection and conv in one dispatch.
func QMatmulMultiConv(c *Ctx, x Tensor, ws []QLinear, outs []Tensor, state, w Tensor, kernelSize int) {
	t, args := multiConv(c, x, ws, outs, state, w, kernelSize)
	if t != 1 {
		fail("qmatmul_multi_conv: %d tokens, want 1 (a token's conv needs the token before)", t)
	}
	c.dispatch("qmatmul_multi_conv_bf16", append(args, backend.Int(kernelSize))...)
}

// MultiConvTiledTokens is the most tokens QMatmulMultiConvTiled takes: one
// tile of columns, so that a channel's tokens meet in one threadgroup.
const MultiConvTiledTokens = 16

// QMatmulMultiConvTiled is QMatmulMultiConv with the projections as
// QMatmulMultiTiled computes them (qmatmul_mma_multi_conv_bf16), for up to
// MultiConvTiledTokens tokens, the conv stepping through them in order; raw
// bf16 [T, channels] gets the first projection itself (what QMatmulMultiTiled
// writes to outs[0]: a verify's record). Each token's bits are a lone token's.
func QMatmulMultiConvTiled(c *Ctx, x Tensor, ws []QLinear, outs []Tensor, raw, state, w Tensor, kernelSize int) {
	if !TiledGEMVs(c) {
		fail("qmatmul_multi_conv %s: the tiled GEMV needs a device with matrix units", ws[0].Name)
	}
	t, args := multiConv(c, x, ws, outs, state, w, kernelSize)
	if !(t >= 1 && t <= MultiConvTiledTokens) {
		fail("qmatmul_multi_conv: %d tokens, want 1 to %d", t, MultiConvTiledTokens)
	}
	checkDType("qmatmul_multi_conv raw", raw, backend.BF16)
	if raw.Elements() != t*ws[0].Out {
		fail("qmatmul_multi_conv %s: raw %v, want [%d,%d]", ws[0].Name, raw, t, ws[0].Out)
	}
	n := len(args) - 10 // raw after conv_w, before T, In, Out0..3, fmt0..3
	args = slices.Insert(args, n, raw.Arg())
	c.dispatch("qmatmul_mma_multi_conv_bf16", append(args, backend.Int(kernelSize))...)
}

// multiConv checks the conv's arguments and lays out the launch's: as
// multiArgs, with state and w after the slots' buffers.
func multiConv(c *Ctx, x Tensor, ws []QLinear, outs []Tensor, state, w Tensor, kernelSize int) (int, []backend.Arg) {
	t, args := multiArgs(c, x, ws, outs)
	ch := ws[0].Out
	if !(kernelSize >= 1 && state.Elements() == (kernelSize-1)*ch && w.Elements() == ch*kernelSize) {
		fail("qmatmul_multi_conv %s: state %v w %v kernel %d", ws[0].Name, state, w, kernelSize)
	}
	checkDType("qmatmul_multi_conv state", state, backend.BF16)
	checkDType("qmatmul_multi_conv w", w, backend.BF16)
	// multiArgs ends T, In, Out0..3, fmt0..3: the buffers go before them.
	n := len(args) - 10
	return t, slices.Insert(args, n, state.Arg(), w.Arg())
}

// multiArgs checks QMatmulMulti's arguments and lays them out: x, the four
// slots' w, scales, biases and out (an unused slot repeats slot 0's buffers
// with no rows), T, In, Out0..3, fmt0..3 (QLinear.format).
func multiArgs(c *Ctx, x Tensor, ws []QLinear, outs []Tensor) (int, []backend.Arg) {
	if !(len(ws) >= 1 && len(ws) <= 4 && len(outs) == len(ws)) {
		fail("qmatmul_multi: %d weights, %d outputs (1 to 4)", len(ws), len(outs))
	}
	checkDType("qmatmul_multi x", x, backend.BF16)
	in := ws[0].In
	if !(x.Elements()%in == 0 && x.Off%4 == 0) {
		fail("qmatmul_multi %s: x %v at offset %d, In %d", ws[0].Name, x, x.Off, in)
	}
	t := x.Elements() / in
	args := c.args(x.Arg())
	var outRows, formats [4]backend.Arg
	for i := range 4 {
		w, out, rows := ws[0], outs[0], 0 // an unused slot: slot 0's buffers, no rows
		if i < len(ws) {
			w, out, rows = ws[i], outs[i], ws[i].Out
			if !(w.Experts == 0 && w.In == in) {
				fail("qmatmul_multi: %s is [%d experts] %d×%d, want %d inputs", w.Name, w.Experts, w.Out, w.In, in)
			}
			checkDType("qmatmul_multi out", out, backend.BF16)
			if out.Elements() != t*w.Out {
				fail("qmatmul_multi %s: out %v, want [%d,%d]", w.Name, out, t, w.Out)
			}
		}
		args = append(w.appendArgs(args), out.Arg())
		outRows[i], formats[i] = backend.Int(rows), backend.Int(w.format())
	}
	args = append(args, backend.Int(t), backend.Int(in))
	return t, append(append(args, outRows[:]...), formats[:]...)
}

// QMatmulGatherSwiGLU is the experts' first half in one dispatch: for each token
// t and slot s with expert e = ids[t,s], out[t,s,:] = silu(x[t]·gate[e]ᵀ) ⊙
// (x[t]·up[e]ᵀ), each product rounded to bf16 first as QMatmulGather would.
// x bf16 [T, In]; ids i32 [T, K]; out bf16 [T, K, Out].
func QMatmulGatherSwiGLU(c *Ctx, x, ids Tensor, gate, up QLinear, out Tensor) {
	t, k := checkGatherSwiGLU(x, ids, gate, up, out)
	args := up.appendArgs(gate.appendArgs(c.args(x.Arg(), ids.Arg())))
	args = append(args, out.Arg(), backend.Int(t), backend.Int(k), backend.Int(gate.In), backend.Int(gate.Out),
		backend.Int(gate.Bits), backend.Int(gate.GroupSize))
	c.dispatch("qmatmul_gather_swiglu_bf16", args...)
}

// checkGatherSwiGLU checks the routed experts' arguments of QMatmulGatherSwiGLU
// and MoEUp and returns T and K.
func checkGatherSwiGLU(x, ids Tensor, gate, up QLinear, out Tensor) (t, k int) {
	checkDType("gather_swiglu x", x, backend.BF16)
	checkDType("gather_swiglu ids", ids, backend.I32)
	checkDType("gather_swiglu out", out, backend.BF16)
	if !(gate.Experts > 0 && gate.Experts == up.Experts && gate.Out == up.Out && gate.In == up.In &&
		gate.Bits == up.Bits && gate.GroupSize == up.GroupSize) {
		fail("gather_swiglu: %s and %s differ in shape or quantization", gate.Name, up.Name)
	}
	if len(ids.Shape) != 2 {
		fail("gather_swiglu: ids %v", ids)
	}
	t, k = ids.Shape[0], ids.Shape[1]
	if !(x.Elements() == t*gate.In && x.Off%4 == 0) {
		fail("gather_swiglu %s: x %v at offset %d", gate.Name, x, x.Off)
	}
	if out.Elements() != t*k*gate.Out {
		fail("gather_swiglu %s: out %v", gate.Name, out)
	}
	return t, k
}

// MoEUp is QMatmulGatherSwiGLU for the routed experts and the shared
// expert's gate, up and SwiGLU in one dispatch: hs[t,:] = silu(x[t]·sharedGateᵀ)
// ⊙ (x[t]·sharedUpᵀ), each product rounded to bf16 first. The shared expert
// must have the routed experts' bits and group size (MoEUpFits).
// hs bf16 [T, sharedGate.Out].
func MoEUp(c *Ctx, x, ids Tensor, gate, up QLinear, out Tensor, sharedGate, sharedUp QLinear, hs Tensor) {
	if !MoEUpFits(gate, sharedGate, sharedUp) {
		fail("moe_up: shared expert %s does not match %s", sharedGate.Name, gate.Name)
	}
	moeUp(c, "moe_up_bf16", x, ids, gate, up, out, sharedGate, sharedUp, hs)
}

// moeUp checks MoEUp's tensors and dispatches kernel with them.
func moeUp(c *Ctx, kernel string, x, ids Tensor, gate, up QLinear, out Tensor, sharedGate, sharedUp QLinear, hs Tensor) {
	t, k := checkGatherSwiGLU(x, ids, gate, up, out)
	checkDType(kernel+" hs", hs, backend.BF16)
	if hs.Elements() != t*sharedGate.Out {
		fail("%s %s: hs %v", kernel, sharedGate.Name, hs)
	}
	args := up.appendArgs(gate.appendArgs(c.args(x.Arg(), ids.Arg())))
	args = sharedUp.appendArgs(sharedGate.appendArgs(append(args, out.Arg())))
	args = append(args, hs.Arg(), backend.Int(t), backend.Int(k), backend.Int(gate.In), backend.Int(gate.Out),
		backend.Int(sharedGate.Out), backend.Int(gate.Bits), backend.Int(gate.GroupSize))
	c.dispatch(kernel, args...)
}

// MoEUpTiled is MoEUp on the matrix units (moe_up_mma_bf16): each expert's
// rows are read once for up to 16 of the launch's tokens routed to it, and a
// token's bits do not depend on the others', so a verify's are a step's as
// long as both take this kernel (MoEUpTiledFits).
func MoEUpTiled(c *Ctx, x, ids Tensor, gate, up QLinear, out Tensor, sharedGate, sharedUp QLinear, hs Tensor) {
	if !MoEUpTiledFits(c, gate, sharedGate, sharedUp) {
		fail("moe_up_mma: %s is not 4-bit in groups of 64 or 128 with a matching shared expert, or %s has no matrix units", gate.Name, c.Dev.Name())
	}
	moeUp(c, "moe_up_mma_bf16", x, ids, gate, up, out, sharedGate, sharedUp, hs)
}

// MoEUpTiledFits says whether MoEUpTiled takes these weights on c's device:
// MoEUpFits, 4-bit codes in groups of 64 or 128, and matrix units. As
// TiledGEMV, the answer never depends on the tokens.
func MoEUpTiledFits(c *Ctx, gate, sharedGate, sharedUp QLinear) bool {
	return TiledGEMVs(c) && MoEUpFits(gate, sharedGate, sharedUp) && gate.Bits == 4 && (gate.GroupSize == 64 || gate.GroupSize == 128)
}

// RouterMaxExperts is the most experts the router kernels route among (ROUTER_MAX_E).
var RouterMaxExperts = kernels.Defines()["ROUTER_MAX_E"]

// RouterMaxPicks is the most experts a token takes in the router kernels (ROUTER_MAX_K).
var RouterMaxPicks = kernels.Defines()["ROUTER_MAX_K"]

// MoEUpFits says whether MoEUp takes these weights: a shared expert (gate and
// up alike) quantized as the routed experts, over the same input width.
func MoEUpFits(gate, sharedGate, sharedUp QLinear) bool {
	return sharedGate.Experts == 0 && sharedUp.Experts == 0 && sharedGate.Out == sharedUp.Out &&
		sharedGate.In == gate.In && sharedUp.In == gate.In &&
		sharedGate.Bits == gate.Bits && sharedUp.Bits == gate.Bits &&
		sharedGate.GroupSize == gate.GroupSize && sharedUp.GroupSize == gate.GroupSize
}

// MoEDown is the MoE block's second half in one dispatch: for each token t,
// out[t] = r + σ(gate[t])·(hs[t]·sharedᵀ) with r = Σ_s weights[t,s]·(h[t,s]·down[ids[t,s]]ᵀ),
// each product and the sum rounded to bf16 as QMatmulGather, MoECombine,
// QMatmul and AddSigmoidScaled round them. h bf16 [T, K, I]; ids i32 and
// weights bf16 [T, K]; hs bf16 [T, Is]; gate bf16 [T]; out bf16 [T, H].
// idsEarly says that ids were written two or more dispatches before this one
// (the router's top-k, then MoEUp): the kernel then reads them, and starts
// loading its experts' weights, while the dispatch before still runs.
func MoEDown(c *Ctx, h, ids, weights Tensor, down QLinear, hs Tensor, shared QLinear, gate, out Tensor, idsEarly bool) {
	moeDown(c, "moe_down_bf16", h, ids, weights, down, hs, shared, gate, out, idsEarly)
}

// MoEDownWarp is MoEDown (the same bits) with each threadgroup's work on
// one SIMD-group walking the slots (moe_down_warp_bf16), for a launch of
// several tokens: fewer instructions a code where the launch has enough rows
// to fill the GPU with SIMD-groups (MoEDownWarpFits).
func MoEDownWarp(c *Ctx, h, ids, weights Tensor, down QLinear, hs Tensor, shared QLinear, gate, out Tensor, idsEarly bool) {
	if !MoEDownWarpFits(ids, down, shared) {
		fail("moe_down_warp: %s or %s does not have 4- or 8-bit codes, or ids %v has fewer than %d tokens", down.Name, shared.Name, ids, MoEDownWarpMinTokens)
	}
	moeDown(c, "moe_down_warp_bf16", h, ids, weights, down, hs, shared, gate, out, idsEarly)
}

// MoEDownWarpMinTokens is the fewest tokens MoEDownWarp takes: a launch of T
// tokens of the 35B-A3B has T·256 SIMD-groups, 15.5 a multiprocessor of an
// H100 at 8, where it beat moe_down_bf16, and it lost at 4 (forty-fourth
// session, docs/history/batching-log.md).
const MoEDownWarpMinTokens = 8

// MoEDownWarpFits says whether MoEDownWarp takes these: where moe_down_bf16
// gives each half of a SIMD-group its rows (4- or 8-bit codes, both), for a
// launch of MoEDownWarpMinTokens tokens or more.
func MoEDownWarpFits(ids Tensor, down, shared QLinear) bool {
	return byteCodes(down.Bits) && byteCodes(shared.Bits) && len(ids.Shape) == 2 && ids.Shape[0] >= MoEDownWarpMinTokens
}

// moeDown checks MoEDown's arguments and dispatches kernel with them.
func moeDown(c *Ctx, kernel string, h, ids, weights Tensor, down QLinear, hs Tensor, shared QLinear, gate, out Tensor, idsEarly bool) {
	for _, t := range []struct {
		what string
		t    Tensor
		dt   backend.DType
	}{{"h", h, backend.BF16}, {"ids", ids, backend.I32}, {"weights", weights, backend.BF16}, {"hs", hs, backend.BF16},
		{"gate", gate, backend.BF16}, {"out", out, backend.BF16}} {
		checkDTypeIn("moe_down", t.what, t.t, t.dt)
	}
	if !(len(ids.Shape) == 2 && weights.Elements() == ids.Elements()) {
		fail("moe_down: ids %v weights %v", ids, weights)
	}
	t, k := ids.Shape[0], ids.Shape[1]
	if !(down.Experts > 0 && shared.Experts == 0 && down.Out == shared.Out) {
		fail("moe_down: %s and %s", down.Name, shared.Name)
	}
	if !(h.Elements() == t*k*down.In && hs.Elements() == t*shared.In && gate.Elements() == t && out.Elements() == t*down.Out) {
		fail("moe_down %s: h %v hs %v gate %v out %v", down.Name, h, hs, gate, out)
	}
	if !(h.Off%4 == 0 && hs.Off%4 == 0) {
		fail("moe_down: h and hs must be 4-byte aligned (offsets %d, %d)", h.Off, hs.Off)
	}
	args := down.appendArgs(c.args(h.Arg(), ids.Arg(), weights.Arg()))
	args = shared.appendArgs(append(args, hs.Arg()))
	args = append(args, gate.Arg(), out.Arg(), backend.Int(t), backend.Int(k), backend.Int(down.Out),
		backend.Int(down.In), backend.Int(shared.In), backend.Int(down.Bits), backend.Int(down.GroupSize),
		backend.Int(shared.Bits), backend.Int(shared.GroupSize), backend.Int(boolInt(idsEarly)),
		backend.Int(boolInt(byteCodes(down.Bits) && byteCodes(shared.Bits))))
	c.dispatch(kernel, args...)
}

// MoEDownTiled is MoEDown on the matrix units (moe_down_mma_bf16): each
// expert's rows are read once for up to 16 of the launch's slots routed to it,
// and a token's bits do not depend on the others', so a verify's are a step's
// when both take this kernel (MoEDownTiledFits). T ≤ MoEDownTiledTokens.
func MoEDownTiled(c *Ctx, h, ids, weights Tensor, down QLinear, hs Tensor, shared QLinear, gate, out Tensor, idsEarly bool) {
	if len(ids.Shape) != 2 {
		fail("moe_down_mma: ids %v", ids)
	}
	t, k := ids.Shape[0], ids.Shape[1]
	if !MoEDownTiledFits(c, down, shared, k) {
		fail("moe_down_mma: %s or %s is not 4-bit in groups of 64 or 128, %d experts a token are more than %d, or %s has no matrix units",
			down.Name, shared.Name, k, moeDownTiledSlots/MoEDownTiledTokens, c.Dev.Name())
	}
	if !(t <= MoEDownTiledTokens) {
		fail("moe_down_mma: %d tokens (at most %d)", t, MoEDownTiledTokens)
	}
	moeDown(c, "moe_down_mma_bf16", h, ids, weights, down, hs, shared, gate, out, idsEarly)
}

// MoEDownTiledTokens is the most tokens MoEDownTiled takes (a verify of the
// newest token and 15 guesses); moeDownTiledSlots the most slots (kernels'
// MOE_DOWN_MMA_TOKENS and MOE_DOWN_MMA_SLOTS).
var (
	MoEDownTiledTokens = kernels.Defines()["MOE_DOWN_MMA_TOKENS"]
	moeDownTiledSlots  = kernels.Defines()["MOE_DOWN_MMA_SLOTS"]
)

// MoEDownTiledFits says whether MoEDownTiled takes these weights for k experts
// a token on c's device, for any number of tokens up to MoEDownTiledTokens.
func MoEDownTiledFits(c *Ctx, down, shared QLinear, k int) bool {
	four := func(w QLinear) bool { return w.Bits == 4 && (w.GroupSize == 64 || w.GroupSize == 128) }
	return TiledGEMVs(c) && four(down) && four(shared) && down.Experts > 0 && shared.Experts == 0 &&
		k*MoEDownTiledTokens <= moeDownTiledSlots
}

// QGemm is QMatmul for many tokens on the matrix units (qgemm_bf16): each weight
// tile is dequantized once for 128 tokens. With exact, every weight enters
// exactly, as QMatmul takes it: QMatmul's sums in another order. Without, each
// is rounded to bf16 first (MLX's prompt numerics, half the products on CUDA),
// which moves the result by about as much as the output's own rounding.
// x bf16 [T, In] → out bf16 [T, Out]; In a multiple of 32.
func QGemm(c *Ctx, x Tensor, w QLinear, out Tensor, exact bool) {
	checkDType("qgemm x", x, backend.BF16)
	checkDType("qgemm out", out, backend.BF16)
	if w.Experts != 0 {
		fail("qgemm: %s is a stacked expert weight", w.Name)
	}
	if !(w.In%32 == 0 && x.Elements()%w.In == 0) {
		fail("qgemm %s: x %v, In %d (a multiple of 32)", w.Name, x, w.In)
	}
	if x.Off%16 != 0 {
		fail("qgemm %s: x at byte offset %d: the kernel reads x in 16-byte pieces", w.Name, x.Off)
	}
	t := x.Elements() / w.In
	if out.Elements() != t*w.Out {
		fail("qgemm %s: out %v, want [%d,%d]", w.Name, out, t, w.Out)
	}
	args := w.appendArgs(c.args(x.Arg()))
	args = append(args, out.Arg(), backend.Int(t), backend.Int(w.In), backend.Int(w.Out), backend.Int(w.Bits), backend.Int(w.GroupSize),
		backend.Int(boolInt(exact)))
	c.dispatch("qgemm_bf16", args...)
}

// QGemmMulti is QGemm for up to four matrices over the same x (a prompt's
// projections) in one dispatch: outs[i] = x·ws[i]ᵀ. x must be 16-byte aligned
// and In a multiple of 32, as for QGemm.
func QGemmMulti(c *Ctx, x Tensor, ws []QLinear, outs []Tensor, exact bool) {
	if !(x.Off%16 == 0 && ws[0].In%32 == 0) {
		fail("qgemm_multi %s: x at byte offset %d, In %d", ws[0].Name, x.Off, ws[0].In)
	}
	_, args := multiArgs(c, x, ws, outs)
	c.dispatch("qgemm_multi_bf16", append(args, backend.Int(boolInt(exact)))...)
}

// ExpertTiles is the (token, slot) pairs of a routing grouped by expert
// (moe_sort_i32), ready for QGemmGather.
type ExpertTiles struct {
	Perm, Tiles Tensor
	T, K, E     int
}

// expertTile is QG_BM, the pairs of one grouped-GEMM tile (read once: parsing
// the kernel sources on every forward cost milliseconds per token).
var expertTile = kernels.Defines()["QG_BM"]

// ExpertTileRows is the rows of moe_sort_i32's tile table for T tokens of K
// slots over E experts: enough tiles of 64 pairs for any routing.
func ExpertTileRows(t, k, e int) int {
	return (t*k+expertTile-1)/expertTile + e
}

// SortByExpert groups the pairs of ids i32 [T, K] (experts in [0, experts)) by
// expert on the device, into perm i32 [T·K] and tiles i32 [ExpertTileRows, 3].
func SortByExpert(c *Ctx, ids Tensor, experts int, perm, tiles Tensor) ExpertTiles {
	checkDType("moe_sort ids", ids, backend.I32)
	checkDType("moe_sort perm", perm, backend.I32)
	checkDType("moe_sort tiles", tiles, backend.I32)
	if len(ids.Shape) != 2 {
		fail("moe_sort: ids %v", ids)
	}
	t, k := ids.Shape[0], ids.Shape[1]
	if !(perm.Elements() == t*k && tiles.Elements() == 3*ExpertTileRows(t, k, experts)) {
		fail("moe_sort: perm %v tiles %v for %d×%d pairs over %d experts", perm, tiles, t, k, experts)
	}
	c.dispatch("moe_sort_i32", ids.Arg(), perm.Arg(), tiles.Arg(), backend.Int(t), backend.Int(k), backend.Int(experts))
	return ExpertTiles{Perm: perm, Tiles: tiles, T: t, K: k, E: experts}
}

// QGemmGather is QMatmulGather over a sorted routing (qgemm_gather_bf16): each
// expert's weights are read once per 128 pairs routed to it, exact or
// rounded as QGemm's. x is bf16 [T, In] (perSlot false) or [T, K, In]
// (perSlot true); out bf16 [T, K, Out].
func QGemmGather(c *Ctx, x Tensor, s ExpertTiles, w QLinear, out Tensor, perSlot, exact bool) {
	checkDType("gather gemm x", x, backend.BF16)
	checkDType("gather gemm out", out, backend.BF16)
	if w.Experts != s.E {
		fail("gather gemm: %s has %d experts, the routing %d", w.Name, w.Experts, s.E)
	}
	if w.In%32 != 0 {
		fail("gather gemm %s: In %d is not a multiple of 32", w.Name, w.In)
	}
	xRows, xPerSlot := s.T, 0
	if perSlot {
		xRows, xPerSlot = s.T*s.K, 1
	}
	if !(x.Elements() == xRows*w.In && x.Off%16 == 0) {
		fail("gather gemm %s: x %v at offset %d (16-byte pieces)", w.Name, x, x.Off)
	}
	if out.Elements() != s.T*s.K*w.Out {
		fail("gather gemm %s: out %v", w.Name, out)
	}
	args := w.appendArgs(c.args(x.Arg(), s.Perm.Arg(), s.Tiles.Arg()))
	args = append(args, out.Arg(), backend.Int(s.T), backend.Int(s.K), backend.Int(s.E), backend.Int(w.In), backend.Int(w.Out),
		backend.Int(w.Bits), backend.Int(w.GroupSize), backend.Int(xPerSlot), backend.Int(boolInt(exact)))
	c.dispatch("qgemm_gather_bf16", args...)
}

// byteCodes says whether codes of this width fill whole bytes of a word (4 or
// 8 bits), the widths a kernel's half SIMD-groups take (moe_down_bf16's halves).
func byteCodes(bits int) bool { return bits == 4 || bits == 8 }
