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
