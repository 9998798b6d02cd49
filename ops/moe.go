package ops

import "bagel/backend"

// RouterTopK turns router logits bf16 [T, E] into the K chosen experts per token,
// ids i32 [T, K], and their (renormalised when norm) probabilities, weights bf16 [T, K].
func RouterTopK(c *Ctx, logits, ids, weights Tensor, norm bool) {
	checkDType("router ids", ids, backend.I32)
	if !(len(logits.Shape) == 2 && len(ids.Shape) == 2) {
		fail("router: logits %v ids %v", logits, ids)
	}
	t, e, k := logits.Shape[0], logits.Shape[1], ids.Shape[1]
	if !(ids.Shape[0] == t && weights.Elements() == t*k && k <= e) {
		fail("router: logits %v ids %v weights %v", logits, ids, weights)
	}
	if !(e <= RouterMaxExperts && k <= RouterMaxPicks) {
		fail("router: %d of %d experts (at most %d of %d)", k, e, RouterMaxPicks, RouterMaxExperts)
	}
	c.dispatch("router_topk_bf16", logits.Arg(), ids.Arg(), weights.Arg(), backend.Int(t), backend.Int(e), backend.Int(k), backend.Int(boolInt(norm)))
}

// GridFence tells whether c's device runs the kernels that find a launch's
// last threadgroup by a fenced ticket (QMatmulRouter): backend.GridFencer.
func GridFence(c *Ctx) bool {
	f, ok := c.Dev.(backend.GridFencer)
	return ok && f.GridFence()
}

// QMatmulRouter is the router's GEMV (QMatmulMulti over ws: the router, and
// optionally the shared expert's scalar gate) and RouterTopK on its logits
// (outs[0], bf16 [T, E]) in one dispatch, on a device with GridFence.
// tickets u32 [≥ T] is zero and stays so between dispatches (the kernel's
// last threadgroup of each token sets it back).
func QMatmulRouter(c *Ctx, x Tensor, ws []QLinear, outs []Tensor, tickets, ids, weights Tensor, norm bool) {
	if !(len(ws) == 1 || len(ws) == 2) {
		fail("qmatmul_router: %d weights, want 1 or 2", len(ws))
	}
	checkDType("qmatmul_router ids", ids, backend.I32)
	checkDType("qmatmul_router tickets", tickets, backend.U32)
	t, multi := multiArgs(c, x, ws, outs)
	e := ws[0].Out
	if !(len(ids.Shape) == 2 && ids.Shape[0] == t && weights.Elements() == ids.Elements() && tickets.Elements() >= t) {
		fail("qmatmul_router: ids %v weights %v tickets %v for %d tokens", ids, weights, tickets, t)
	}
	k := ids.Shape[1]
	if !(k <= e && e <= RouterMaxExperts && k <= RouterMaxPicks) {
		fail("router: %d of %d experts (at most %d of %d)", k, e, RouterMaxPicks, RouterMaxExperts)
	}
	// multiArgs lays out x, four slots (an unused one repeating slot 0), T,
	// In, Out0..3, fmt0..3: this kernel takes the first two slots.
	args := append(multi[:9:9], tickets.Arg(), ids.Arg(), weights.Arg())
	args = append(args, multi[17:21]...)      // T, In, Out0, Out1
	args = append(args, multi[23], multi[24]) // fmt0, fmt1
	c.dispatch("qmatmul_router_bf16", append(args, backend.Int(k), backend.Int(boolInt(norm)))...)
}

// MoECombine sums the expert outputs y bf16 [T, K, H] weighted by weights bf16 [T, K]
// into out bf16 [T, H].
func MoECombine(c *Ctx, y, weights, out Tensor) {
	if len(y.Shape) != 3 {
		fail("moe_combine: y %v", y)
	}
	t, k, h := y.Shape[0], y.Shape[1], y.Shape[2]
	if !(weights.Elements() == t*k && out.Elements() == t*h) {
		fail("moe_combine: y %v weights %v out %v", y, weights, out)
	}
	c.dispatch("moe_combine_bf16", y.Arg(), weights.Arg(), out.Arg(), backend.Int(t), backend.Int(k), backend.Int(h))
}

// boolInt is a kernel's flag argument: 1 for true.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
