package ops

import (
	"bagel/backend"
	"bagel/kernels"
)

// TopK writes, for each row of x f32 [R, N], its K largest values in
// descending order into vals f32 [R, K] with their ids i32 [R, K], and the
// row's log Σ exp into lse f32 [R]: what sampling with a top-k needs of the
// logits, K·8+4 bytes to read back instead of N·4. It runs in two dispatches
// (the row's chunks in parallel, then their merge) through part, a scratch
// i32 tensor of TopKPartSize(R, N, K) elements.
func TopK(c *Ctx, x, ids, vals, lse, part Tensor) {
	checkDType("topk x", x, backend.F32)
	checkDType("topk ids", ids, backend.I32)
	checkDType("topk vals", vals, backend.F32)
	checkDType("topk lse", lse, backend.F32)
	r := lse.Elements()
	if !(r > 0 && x.Elements()%r == 0 && ids.Elements()%r == 0 && vals.Elements() == ids.Elements()) {
		fail("topk: x %v ids %v vals %v lse %v", x, ids, vals, lse)
	}
	n, k := x.Elements()/r, ids.Elements()/r
	if !(part.Elements() >= TopKPartSize(r, n, k)) {
		fail("topk: part %v, want %d elements", part, TopKPartSize(r, n, k))
	}
	chunks := (n + topKChunk - 1) / topKChunk
	candIDs := View(part, 0, backend.I32, []int{r, chunks, k})
	candVals := View(part, 4*r*chunks*k, backend.F32, []int{r, chunks, k})
	stats := View(part, 8*r*chunks*k, backend.F32, []int{r, chunks, 2})
	c.dispatch("topk_partial_f32", x.Arg(), candIDs.Arg(), candVals.Arg(), stats.Arg(), backend.Int(r), backend.Int(n), backend.Int(k))
	c.dispatch("topk_merge_f32", candIDs.Arg(), candVals.Arg(), stats.Arg(), ids.Arg(), vals.Arg(), lse.Arg(),
		backend.Int(r), backend.Int(n), backend.Int(k))
}

// TopKPartSize is the i32 elements of TopK's scratch for R rows of N, top K:
// each chunk's K candidates (ids and values) and its (max, Σexp).
func TopKPartSize(r, n, k int) int {
	chunks := (n + topKChunk - 1) / topKChunk
	return r * chunks * (2*k + 2)
}

var topKChunk = kernels.Defines()["TOPK_CHUNK"]

// TopKMax is the largest K that TopK takes.
const TopKMax = 256

// RepetitionPenalty divides the positive and multiplies the negative logits of
// x f32 [N] at ids i32 [M] (distinct; ids outside [0, N), such as −1 padding,
// are skipped) by penalty, in place.
func RepetitionPenalty(c *Ctx, x, ids Tensor, penalty float32) {
	checkDType("repetition penalty x", x, backend.F32)
	checkDType("repetition penalty ids", ids, backend.I32)
	c.dispatch("repetition_penalty_f32", x.Arg(), ids.Arg(), backend.Int(x.Elements()), backend.Int(ids.Elements()),
		backend.Float(penalty))
}

// SampleTop draws one row's token from its top-k candidates (TopK's ids i32
// [K] and vals f32 [K], best first, and the row's lse f32 [1]) as the engine's
// sampler does, in f32 (sample_top_f32): top-p (0 or 1: off), then min-p (0:
// off), then a categorical at the temperature, picked with the uniform u in
// [0, 1). out i32 [1] = the token, −1 when the row's logits were not all
// finite.
func SampleTop(c *Ctx, ids, vals, lse, out Tensor, temperature, topP, minP, u float32) {
	checkDType("sample ids", ids, backend.I32)
	checkDType("sample vals", vals, backend.F32)
	checkDType("sample lse", lse, backend.F32)
	checkDType("sample out", out, backend.I32)
	k := ids.Elements()
	if !(k > 0 && k <= TopKMax && vals.Elements() == k && lse.Elements() == 1 && out.Elements() == 1) {
		fail("sample: ids %v vals %v lse %v out %v (one row of at most %d)", ids, vals, lse, out, TopKMax)
	}
	if !(temperature > 0) {
		fail("sample: temperature %g, want > 0 (greedy picks the top 1)", temperature)
	}
	c.dispatch("sample_top_f32", ids.Arg(), vals.Arg(), lse.Arg(), out.Arg(), backend.Int(k), backend.Float(temperature),
		backend.Float(topP), backend.Float(minP), backend.Float(u))
}
