package cpu

import (
	"bagel/backend"
	"bagel/kernels"
)

// The batched step's kernels (kernels/gdn.metal, attention.metal): the rows
// of B sequences (a token each, or a verify's few), each sequence's state
// found in a slot of a pool (slot s's at s·stride elements from the buffer
// argument, slot 0's). Each row is what the kernel of one sequence computes
// for it.

// conv1d_silu_batch_bf16: conv1d_silu_bf16 of each sequence's rows of x
// (R, C), runs[s] = (slot, first row, rows), through its slot's window into
// the same rows of out.
func conv1dSiluBatch(a *args) {
	S, C, K, stride := a.intArg("S"), a.intArg("C"), a.intArg("K"), a.intArg("stride")
	a.check(K >= 1, "K", "%d, want ≥ 1", K)
	runs, R := runsOf(a, S, kernels.Defines()["CONV_TOKENS"])
	x, w, out := a.bf16s("x", R*C), a.bf16s("w", C*K), a.bf16s("out", R*C)
	window := (K - 1) * C
	states := a.bf16s("states", slotSpan(a, "states", runSlots(runs), stride, window))
	for _, r := range runs {
		at := r.slot * stride
		convInto(x[r.row*C:(r.row+r.rows)*C], states[at:at+window], w, out[r.row*C:(r.row+r.rows)*C], r.rows, C, K)
	}
}

// gdn_recurrence_batch_bf16: gdn_recurrence_bf16 (normed 0) of each
// sequence's rows of conv, a and b through its slot's state into the same
// rows of out.
func gdnRecurrenceBatch(a *args) {
	S, Hk, Hv := a.intArg("S"), a.intArg("Hk"), a.intArg("Hv")
	Dk, Dv, stride := a.intArg("Dk"), a.intArg("Dv"), a.intArg("stride")
	a.check(Hk > 0 && Hv%Hk == 0, "Hk", "%d does not divide Hv=%d", Hk, Hv)
	width, size := 2*Hk*Dk+Hv*Dv, Hv*Dv*Dk
	runs, R := runsOf(a, S, 1<<30)
	conv, out := a.bf16s("conv", R*width), a.bf16s("out", R*Hv*Dv)
	states := a.f32s("states", slotSpan(a, "states", runSlots(runs), stride, size))
	g, beta := make([]float32, R*Hv), make([]float32, R*Hv)
	gatesInto(a.bf16s("a", R*Hv), a.bf16s("b", R*Hv), a.f32s("aLog", Hv), a.bf16s("dtBias", Hv), g, beta, R, Hv)
	for _, r := range runs {
		at, from, to := r.slot*stride, r.row, r.row+r.rows
		gdnRun(a, conv[from*width:to*width], g[from*Hv:to*Hv], beta[from*Hv:to*Hv], states[at:at+size],
			out[from*Hv*Dv:to*Hv*Dv], r.rows, Hk, Hv, Dk, Dv, false)
	}
}

// run is a sequence of a batched step: its slot and its rows.
type run struct{ slot, row, rows int }

// runsOf reads the runs table (i32 [S, 3]: slot, first row, rows): each
// sequence 1 to most rows, no slot in two sequences, no row in two; it
// returns them and the rows they reach.
func runsOf(a *args, S, most int) ([]run, int) {
	table := a.i32s("runs", 3*S)
	runs, taken, slots := make([]run, S), map[int]bool{}, map[int]bool{}
	R := 0
	for s := range runs {
		r := run{slot: int(table[3*s]), row: int(table[3*s+1]), rows: int(table[3*s+2])}
		a.check(r.slot >= 0 && !slots[r.slot], "runs", "sequence %d's slot %d", s, r.slot)
		a.check(r.row >= 0 && r.rows >= 1 && r.rows <= most, "runs", "sequence %d: rows %d..+%d (at most %d)", s, r.row, r.rows, most)
		for i := r.row; i < r.row+r.rows; i++ {
			a.check(!taken[i], "runs", "row %d in two sequences", i)
			taken[i] = true
		}
		slots[r.slot], runs[s] = true, r
		R = max(R, r.row+r.rows)
	}
	return runs, R
}

// runSlots are the runs' slots.
func runSlots(runs []run) []int {
	slots := make([]int, len(runs))
	for i, r := range runs {
		slots[i] = r.slot
	}
	return slots
}

// attn_prep_batch_bf16: attn_prep_bf16 of row r into the caches of slot
// seqs[r, 0] at row seqs[r, 1], rotated at position seqs[r, 2].
func attnPrepBatch(a *args) {
	B, Hq, Hkv, D := a.intArg("B"), a.intArg("Hq"), a.intArg("Hkv"), a.intArg("D")
	rotDims, Cap, stride := a.intArg("rotDims"), a.intArg("Cap"), a.intArg("stride")
	a.check(rotDims%2 == 0 && rotDims <= D, "rotDims", "%d, want even and ≤ D=%d", rotDims, D)
	seqs := rowsOf(a, B)
	slots := make([]int, B)
	for r := range B {
		slots[r] = seqs[3*r]
		a.check(seqs[3*r+1] < Cap, "seqs", "row %d writes cache row %d of %d", r, seqs[3*r+1], Cap)
	}
	size := Hkv * Cap * D
	n := slotSpan(a, "kcache", slots, stride, size)
	kcache, vcache := a.bf16s("kcache", n), a.bf16s("vcache", n)
	qp, k, v := a.bf16s("qp", B*Hq*2*D), a.bf16s("k", B*Hkv*D), a.bf16s("v", B*Hkv*D)
	qNorm, kNorm := a.bf16s("q_norm", D), a.bf16s("k_norm", D)
	q, gate := a.bf16s("q", B*Hq*D), a.bf16s("gate", B*Hq*D)
	prep := attnPrepShape{T: 1, Hq: Hq, Hkv: Hkv, D: D, rotDims: rotDims, Cap: Cap, theta: a.floatArg("theta"), eps: a.floatArg("eps")}
	for r, s := range slots {
		at, rot := s*stride, seqs[3*r+2]
		prep.run(qp[r*Hq*2*D:(r+1)*Hq*2*D], k[r*Hkv*D:(r+1)*Hkv*D], v[r*Hkv*D:(r+1)*Hkv*D], qNorm, kNorm,
			q[r*Hq*D:(r+1)*Hq*D], gate[r*Hq*D:(r+1)*Hq*D], kcache[at:at+size], vcache[at:at+size], seqs[3*r+1],
			func(int, int) int { return rot })
	}
}

// rowsOf reads a seqs table (i32 [B, 3]: slot, cache row, rotary
// position) as ints: none negative, no cache row of a slot in two rows (a
// verify's rows share their slot).
func rowsOf(a *args, B int) []int {
	table := a.i32s("seqs", B*3)
	out := make([]int, len(table))
	seen := make(map[[2]int32]bool, B)
	for i, v := range table {
		a.check(v >= 0, "seqs", "value %d at %d", v, i)
		out[i] = int(v)
	}
	for r := range B {
		key := [2]int32{table[3*r], table[3*r+1]}
		a.check(!seen[key], "seqs", "slot %d's cache row %d in two rows", key[0], key[1])
		seen[key] = true
	}
	return out
}

// slotSpan is how many elements of buffer name the slots reach: slot s's
// size elements start at s·stride.
func slotSpan(a *args, name string, slots []int, stride, size int) int {
	n := 0
	for _, s := range slots {
		n = max(n, s*stride+size)
	}
	a.check(len(slots) <= 1 || stride >= size, name, "slots %d elements apart, each %d long", stride, size)
	return n
}

// attention_batch_bf16: attention_bf16 of row r of q over the first
// seqs[r, 1] + 1 keys of slot seqs[r, 0]'s caches into row r of out, for the
// rows of fewer than split keys.
func attentionBatch(a *args) {
	a.batchRows("attention_bf16", attention, false, func(r, slot int) map[string]int {
		row := 2 * r * a.intArg("Hq") * a.intArg("D")
		return map[string]int{"q": row, "kcache": 2 * slot * a.intArg("stride"), "vcache": 2 * slot * a.intArg("stride"), "out": row}
	})
}

// attention_split_batch_f32 and attention_split_mma_batch_f32: the split
// kernels' partials of row r (for the rows of split keys or more).
func attentionSplitBatch(a *args) {
	a.batchRows("attention_split_f32", attentionSplit, true, a.splitRow)
}
func attentionSplitMMABatch(a *args) {
	a.batchRows("attention_split_mma_f32", attentionSplitMMA, true, a.splitRow)
}

// splitRow is where a split kernel finds row r's query, caches and partials.
func (a *args) splitRow(r, slot int) map[string]int {
	hq, d, s := a.intArg("Hq"), a.intArg("D"), a.intArg("S")
	at := 2 * slot * a.intArg("stride")
	return map[string]int{"q": 2 * r * hq * d, "kcache": at, "vcache": at, "partial": 4 * r * hq * s * (d + 2)}
}

// attention_merge_batch_bf16: attention_merge_bf16 of row r's partials (for
// the rows of split keys or more).
func attentionMergeBatch(a *args) {
	a.batchRows("attention_merge_bf16", attentionMerge, true, func(r, _ int) map[string]int {
		hq, d := a.intArg("Hq"), a.intArg("D")
		return map[string]int{"partial": 4 * r * hq * a.intArg("S") * (d + 2), "out": 2 * r * hq * d}
	})
}

// batchRows runs kernel (its reference run), the one-sequence kernel of a
// batched attention kernel, on each row of seqs (i32 [B, 3]) with split keys or more (split
// true) or fewer (false): one query (T = 1) over kvLen = seqs[r, 1] + 1 keys,
// its buffers at the byte offsets at(r, slot) past the batch kernel's, its
// other scalars the batch kernel's of the same names.
func (a *args) batchRows(kernel string, run func(*args), split bool, at func(r, slot int) map[string]int) {
	B, from := a.intArg("B"), a.intArg("split")
	seqs := rowsOf(a, B)
	sig := kernels.Signatures()[kernel]
	for r := range B {
		kvLen := seqs[3*r+1] + 1
		if (kvLen >= from) != split {
			continue
		}
		off := at(r, seqs[3*r])
		list := make([]backend.Arg, len(sig.Params))
		for i, p := range sig.Params {
			switch p.Name {
			case "T":
				list[i] = backend.Int(1)
			case "kvLen":
				list[i] = backend.Int(kvLen)
			default:
				list[i] = a.list[a.index(p.Name)]
				list[i].Off += off[p.Name]
			}
		}
		run(newArgs(kernel, sig, list, a.threads))
	}
}
