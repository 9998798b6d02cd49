package ops

import (
	"math"

	"bagel/backend"
)

// A batched decode step's per-sequence parts in one launch each: one token of
// each of B sequences whose states lie in a pool's slots, slot s's state at s
// · stride elements past slot 0's (which base views). A table on the device
// names each row's slot; no two rows share one. Each row gets the bits the
// kernel of its sequence alone gives it (kernels/README.md, the *_batch
// kernels).

// Conv1dSiLUBatch is Conv1dSiLU of row r of x bf16 [B, C] through the window
// of slot slots[r] (i32 [B]; base is slot 0's window bf16 [K−1, C]) into row r
// of out bf16 [B, C].
func Conv1dSiLUBatch(c *Ctx, x, base, slots Tensor, stride int, w, out Tensor, kernelSize int) {
	if len(x.Shape) != 2 {
		fail("conv1d batch: x %v", x)
	}
	b, ch := x.Shape[0], x.Shape[1]
	checkSlots("conv1d batch", base, slots, b, 1, stride)
	if !(base.Elements() == (kernelSize-1)*ch && w.Elements() == ch*kernelSize && out.Elements() == b*ch) {
		fail("conv1d batch: x %v window %v w %v out %v", x, base, w, out)
	}
	c.dispatch("conv1d_silu_batch_bf16", x.Arg(), base.Arg(), slots.Arg(), w.Arg(), out.Arg(),
		backend.Int(b), backend.Int(ch), backend.Int(kernelSize), backend.Int(stride))
}

// GDNRecurrenceBatch is GDNRecurrence of one token for each of B sequences:
// row r of conv bf16 [B, ConvDim] and of the gate logits a, b bf16 [B, Hv]
// advances the state of slot slots[r] (i32 [B]; base is slot 0's state f32
// [Hv, Dv, Dk]) into row r of out bf16 [B, Hv, Dv].
func GDNRecurrenceBatch(c *Ctx, conv, a, b, aLog, dtBias, base, slots Tensor, stride int, out Tensor, s GDNShape) {
	checkDType("gdn state", base, backend.F32)
	rows := a.Elements() / s.Hv
	checkSlots("gdn_recurrence batch", base, slots, rows, 1, stride)
	if !(conv.Elements() == rows*s.ConvDim() && a.Elements() == rows*s.Hv && b.Elements() == rows*s.Hv && aLog.Elements() == s.Hv &&
		dtBias.Elements() == s.Hv && base.Elements() == s.Hv*s.Dv*s.Dk && out.Elements() == rows*s.Hv*s.Dv) {
		fail("gdn_recurrence batch: conv %v a %v b %v state %v out %v shape %+v", conv, a, b, base, out, s)
	}
	c.dispatch("gdn_recurrence_batch_bf16", conv.Arg(), a.Arg(), b.Arg(), aLog.Arg(), dtBias.Arg(), base.Arg(), slots.Arg(), out.Arg(),
		backend.Int(rows), backend.Int(s.Hk), backend.Int(s.Hv), backend.Int(s.Dk), backend.Int(s.Dv), backend.Int(stride))
}

// AttnPrepBatch is AttnPrep of one token for each of B sequences: row r of
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

// AttendBatch is Attend of one query for each of B sequences whose caches
// lie in a pool: row r of q bf16 [B, Hq, D] over the first kvLens[r] keys of
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
	splitting, tiled, ranges := decodeSplit(c, partial, 1, hq, hkv, d, capacity)
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
