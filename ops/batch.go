package ops

import (
	"math"
	"slices"

	"bagel/backend"
	"bagel/kernels"
)

// A batched step's per-sequence parts in one launch each: the rows of B
// sequences whose states lie in a pool's slots, slot s's state at s ·
// stride elements past slot 0's (which base views); a sequence's rows are
// its token, or its token and a drafter's guesses (a verify). A table on the
// device names each sequence's slot and rows (runs, the conv and the GDN
// rule's: the rule runs a sequence's tokens one after the other) or each
// row's slot and cache row (seqs, the attention's: rows apart). Each row
// gets the bits the kernel of its sequence alone gives it (kernels/README.md,
// the *_batch kernels).

// Conv1dSiLUBatch is Conv1dSiLU of each of S sequences' rows of x bf16 [R,
// C] through the window of its slot (runs i32 [S, 3]: slot, first row,
// rows, 1 to RunMaxRows, no slot twice; base is slot 0's window bf16 [K−1,
// C]) into the same rows of out bf16 [R, C].
func Conv1dSiLUBatch(c *Ctx, x, base, runs Tensor, stride int, w, out Tensor, kernelSize int) {
	if len(x.Shape) != 2 {
		fail("conv1d batch: x %v", x)
	}
	r, ch := x.Shape[0], x.Shape[1]
	s := checkRuns("conv1d batch", base, runs, r, stride)
	if !(base.Elements() == (kernelSize-1)*ch && w.Elements() == ch*kernelSize && out.Elements() == r*ch) {
		fail("conv1d batch: x %v window %v w %v out %v", x, base, w, out)
	}
	c.dispatch("conv1d_silu_batch_bf16", x.Arg(), base.Arg(), runs.Arg(), w.Arg(), out.Arg(),
		backend.Int(s), backend.Int(ch), backend.Int(kernelSize), backend.Int(stride))
}

// QMatmulMultiConvTiledBatch is QMatmulMultiConvTiled over a batched step's
// rows (up to MultiConvTiledTokens), each sequence's rows through the conv
// window of its slot (runs i32 [S, 3] as Conv1dSiLUBatch's, covering the
// rows in order; base is slot 0's window bf16 [K−1, channels], slot s's s ·
// stride elements past it): the GDN in-projection, its record raw and every
// sequence's conv in one launch (qmatmul_mma_multi_conv_batch_bf16). Each
// row's bits are its sequence's alone.
func QMatmulMultiConvTiledBatch(c *Ctx, x Tensor, ws []QLinear, outs []Tensor, raw, base, runs Tensor, stride int, w Tensor, kernelSize int) {
	if !TiledGEMVs(c) {
		fail("qmatmul_multi_conv batch %s: the tiled GEMV needs a device with matrix units", ws[0].Name)
	}
	t, args := multiConv(c, x, ws, outs, base, w, kernelSize)
	if !(t >= 1 && t <= MultiConvTiledTokens) {
		fail("qmatmul_multi_conv batch: %d rows, want 1 to %d", t, MultiConvTiledTokens)
	}
	checkRuns("qmatmul_multi_conv batch", base, runs, t, stride)
	checkDType("qmatmul_multi_conv batch raw", raw, backend.BF16)
	if raw.Elements() != t*ws[0].Out {
		fail("qmatmul_multi_conv batch %s: raw %v, want [%d,%d]", ws[0].Name, raw, t, ws[0].Out)
	}
	// args ends T, In, Out0..3, fmt0..3: raw and runs go before them, the
	// formats two a scalar (the kernel's 31 arguments).
	n := len(args) - 10
	tail := slices.Clone(args[n:])
	args = append(args[:n], raw.Arg(), runs.Arg())
	args = append(args, tail[:6]...)
	args = append(args, backend.Int(int(tail[6].Int)|int(tail[7].Int)<<16), backend.Int(int(tail[8].Int)|int(tail[9].Int)<<16))
	c.dispatch("qmatmul_mma_multi_conv_batch_bf16", append(args, backend.Int(kernelSize), backend.Int(stride))...)
}

// RunMaxRows is the most rows a sequence of a batched step's runs may have
// (a thread of conv1d_silu_batch_bf16 takes them all).
var RunMaxRows = kernels.Defines()["CONV_TOKENS"]

// GDNRecurrenceBatch is GDNRecurrence of each of S sequences' rows of conv
// bf16 [R, ConvDim] and of the gate logits a, b bf16 [R, Hv], advancing the
// state of its slot (runs as Conv1dSiLUBatch's; base is slot 0's state f32
// [Hv, Dv, Dk]), into the same rows of out bf16 [R, Hv, Dv].
func GDNRecurrenceBatch(c *Ctx, conv, a, b, aLog, dtBias, base, runs Tensor, stride int, out Tensor, s GDNShape) {
	checkDType("gdn state", base, backend.F32)
	rows := a.Elements() / s.Hv
	n := checkRuns("gdn_recurrence batch", base, runs, rows, stride)
	if !(conv.Elements() == rows*s.ConvDim() && a.Elements() == rows*s.Hv && b.Elements() == rows*s.Hv && aLog.Elements() == s.Hv &&
		dtBias.Elements() == s.Hv && base.Elements() == s.Hv*s.Dv*s.Dk && out.Elements() == rows*s.Hv*s.Dv) {
		fail("gdn_recurrence batch: conv %v a %v b %v state %v out %v shape %+v", conv, a, b, base, out, s)
	}
	c.dispatch("gdn_recurrence_batch_bf16", conv.Arg(), a.Arg(), b.Arg(), aLog.Arg(), dtBias.Arg(), base.Arg(), runs.Arg(), out.Arg(),
		backend.Int(n), backend.Int(s.Hk), backend.Int(s.Hv), backend.Int(s.Dk), backend.Int(s.Dv), backend.Int(stride))
}

// checkRuns checks a runs table i32 [S, 3] over rows rows (a sequence at
// least one) and the stride of the states it names, and returns S.
func checkRuns(what string, base, runs Tensor, rows, stride int) int {
	checkDType(what+" runs", runs, backend.I32)
	s := runs.Elements() / 3
	if !(s >= 1 && s <= rows && runs.Elements() == 3*s && stride >= base.Elements()) {
		fail("%s: %d rows, runs %v, states %v apart, each %v", what, rows, runs, stride, base)
	}
	return s
}

// AttnPrepBatch is AttnPrep of B rows of a batched step: row r of
// qp, k and v ([B, ...]) into row r of q and gate, its key and value into the
// caches of slot seqs[r, 0] (base keys and values: slot 0's bf16 [Hkv, Cap,
// D]) at row seqs[r, 1], q and k rotated at position seqs[r, 2] (i32 [B, 3]).
// Where AttnPrepBatchFits says.
func AttnPrepBatch(c *Ctx, qp, k, v, qNorm, kNorm, q, gate, keys, values, seqs Tensor, stride, rotDims int, theta, eps float32) {
	if !(len(q.Shape) == 3 && len(k.Shape) == 3 && len(keys.Shape) == 3) {
		fail("attn_prep batch: q %v k %v cache %v", q, k, keys)
	}
	b, hq, d := q.Shape[0], q.Shape[1], q.Shape[2]
	hkv, capacity := k.Shape[1], keys.Shape[1]
	checkSlots("attn_prep batch", keys, seqs, b, 3, stride)
	if !(qp.Elements() == 2*b*hq*d && gate.Elements() == b*hq*d && k.Shape[0] == b && k.Shape[2] == d &&
		v.Elements() == k.Elements() && keys.Shape[0] == hkv && keys.Shape[2] == d && values.Elements() == keys.Elements() &&
		qNorm.Elements() == d && kNorm.Elements() == d && rotDims%2 == 0 && rotDims <= d) {
		fail("attn_prep batch: qp %v q %v gate %v k %v v %v cache %v rotDims %d", qp, q, gate, k, v, keys, rotDims)
	}
	c.dispatch("attn_prep_batch_bf16", qp.Arg(), k.Arg(), v.Arg(), qNorm.Arg(), kNorm.Arg(), q.Arg(), gate.Arg(), keys.Arg(), values.Arg(),
		seqs.Arg(), backend.Int(b), backend.Int(hq), backend.Int(hkv), backend.Int(d), backend.Int(rotDims), backend.Int(capacity),
		backend.Float(theta), backend.Float(eps), backend.Int(stride))
}

// AttnPrepBatchFits says whether AttnPrepBatch serves heads of d values:
// where the plan fuses the preamble (AttnPreamble's one launch).
func AttnPrepBatchFits(c *Ctx, d int) bool { return c.Plan.AttnPrep && d <= AttnPrepMaxD }

// checkSlots checks a slot table i32 [rows, width] and the stride of the
// states it names (at least one state apart).
func checkSlots(what string, base, table Tensor, rows, width, stride int) {
	checkDType(what+" slots", table, backend.I32)
	if !(rows >= 1 && table.Elements() == rows*width && stride >= base.Elements()) {
		fail("%s: %d rows, slot table %v, states %v apart, each %v", what, rows, table, stride, base)
	}
}

// AttendBatch is Attend of one query for each of B rows of a batched step
// whose caches lie in a pool (a verify's rows each over its own keys): row r of q bf16 [B, Hq, D] over the first kvLens[r] keys of
// slot seqs[r, 0] (seqs i32 [B, 3], AttnPrepBatch's; keys and values slot 0's
// bf16 [Hkv, Cap, D]) into row r of out. A row takes the kernel Attend gives
// a query of its own (the split kernels past splitKVMinContext keys where the
// plan splits, the plain one below), so it gets that launch's bits: at most
// one plain launch and one split-and-merge pair for all rows. partial is
// SplitPartial's.
func AttendBatch(c *Ctx, q, keys, values, seqs Tensor, stride int, kvLens []int, out Tensor, scale float32, partial Tensor) {
	if !(len(q.Shape) == 3 && len(keys.Shape) == 3 && len(kvLens) == q.Shape[0]) {
		fail("attention batch: q %v cache %v, %d key counts", q, keys, len(kvLens))
	}
	b, hq, d := q.Shape[0], q.Shape[1], q.Shape[2]
	hkv, capacity := keys.Shape[0], keys.Shape[1]
	checkSlots("attention batch", keys, seqs, b, 3, stride)
	if !(hq%hkv == 0 && keys.Shape[2] == d && values.Elements() == keys.Elements() && out.Elements() == q.Elements()) {
		fail("attention batch: q %v cache %v out %v", q, keys, out)
	}
	split, kernel := math.MaxInt32, "attention_split_batch_f32" // the rows of split keys or more take the split kernels
	splitting, tiled, ranges := decodeSplit(c, partial, hq, hkv, d, capacity)
	if splitting {
		split = splitKVMinContext
	}
	if tiled {
		kernel = "attention_split_mma_batch_f32"
	}
	plain, long := false, false
	for _, n := range kvLens {
		if !(n >= 1 && n <= capacity) {
			fail("attention batch: %d keys in a cache of %d", n, capacity)
		}
		plain, long = plain || n < split, long || n >= split
	}
	dims := []backend.Arg{backend.Int(b), backend.Int(hq), backend.Int(hkv), backend.Int(d), backend.Int(capacity)}
	if plain {
		c.dispatch("attention_batch_bf16", append(c.args(q.Arg(), keys.Arg(), values.Arg(), seqs.Arg(), out.Arg()),
			append(dims, backend.Int(split), backend.Int(stride), backend.Float(scale))...)...)
	}
	if long {
		part := View(partial, 0, F32, []int{b, hq, ranges, d + 2})
		c.dispatch(kernel, append(c.args(q.Arg(), keys.Arg(), values.Arg(), seqs.Arg(), part.Arg()),
			append(dims, backend.Int(ranges), backend.Int(split), backend.Int(stride), backend.Float(scale))...)...)
		c.dispatch("attention_merge_batch_bf16", part.Arg(), seqs.Arg(), out.Arg(), backend.Int(b), backend.Int(hq), backend.Int(d),
			backend.Int(ranges), backend.Int(split))
	}
}
