package cpu

import (
	"fmt"
	"slices"

	"bagel/backend"
)

// qmatmul_multi_bf16: outI[t,o] = bf16(Σ_j x[t,j]·WI[o,j]) for I = 0..3 (OutI = 0:
// unused), each matrix with its own bits and gs, over one x (T, In): four
// qmatmul_bf16 in one dispatch, each row computed as that kernel computes it.
func qmatmulMulti(a *args) {
	qmatmulMultiFormats(a, func(i int) (string, int) {
		name := "fmt" + fmt.Sprint(i)
		return name, a.intArg(name)
	})
}

// qmatmulMultiFormats is qmatmulMulti with matrix i's format (bits + 256·gs)
// and its name from format(i).
func qmatmulMultiFormats(a *args, format func(i int) (string, int)) {
	T, In := a.intArg("T"), a.intArg("In")
	x := widen(a.bf16s("x", T*In)) // (T, In)
	for i := range 4 {
		slot := fmt.Sprint(i)
		Out := a.intArg("Out" + slot)
		if Out == 0 {
			continue
		}
		name, f := format(i)
		m := a.quantFormatOf("w"+slot, "scales"+slot, "biases"+slot, name, f, Out) // (OutI, In)
		out := a.bf16s("out"+slot, T*Out)                                          // (T, OutI)
		a.parallel(Out, T*In, func(lo, hi int) {
			row := make([]float32, In)
			for o := lo; o < hi; o++ {
				if T == 1 {
					out[o] = backend.F32ToBF16(m.dotRow(o, x, row))
					continue
				}
				m.row(o, row)
				for t := range T {
					out[t*Out+o] = backend.F32ToBF16(dot(x[t*In:(t+1)*In], row))
				}
			}
		})
	}
}

// qmatmul_multi_conv_bf16: qmatmul_multi_bf16 for one token, matrix 0's
// projection (rounded to bf16) then through conv1d_silu_bf16's step with
// conv_state and conv_w into out0.
func qmatmulMultiConv(a *args) {
	Out0, K := a.intArg("Out0"), a.intArg("K")
	a.check(K >= 1, "K", "%d, want ≥ 1", K)
	a.check(a.intArg("T") == 1, "T", "%d, want 1 (a token's conv needs the token before)", a.intArg("T"))
	qmatmulMulti(a)
	out0 := a.bf16s("out0", Out0)
	convInto(slices.Clone(out0), a.bf16s("conv_state", (K-1)*Out0), a.bf16s("conv_w", Out0*K), out0, 1, Out0, K)
}

// qmatmul_mma_multi_conv_bf16: qmatmul_multi_conv_bf16 for up to 16 tokens,
// matrix 0's projections (rounded to bf16) also stored in raw0 and run
// through the conv token after token.
func qmatmulMmaMultiConv(a *args) {
	T, Out0, K := a.intArg("T"), a.intArg("Out0"), a.intArg("K")
	a.check(K >= 1, "K", "%d, want ≥ 1", K)
	a.check(T >= 1 && T <= 16, "T", "%d, want 1 to 16 (one tile of tokens)", T)
	qmatmulMulti(a)
	out0, raw0 := a.bf16s("out0", T*Out0), a.bf16s("raw0", T*Out0)
	copy(raw0, out0)
	convInto(slices.Clone(out0), a.bf16s("conv_state", (K-1)*Out0), a.bf16s("conv_w", Out0*K), out0, T, Out0, K)
}

// qmatmul_mma_multi_conv_batch_bf16: qmatmul_mma_multi_conv_bf16 over a
// batched step's rows, each sequence's (runs[s] = slot, first row, rows,
// covering the T rows in order) through its slot's window; the formats two
// a scalar (fmt01 = fmt0 | fmt1 << 16, fmt23 likewise).
func qmatmulMmaMultiConvBatch(a *args) {
	T, Out0, K, stride := a.intArg("T"), a.intArg("Out0"), a.intArg("K"), a.intArg("stride")
	a.check(K >= 1, "K", "%d, want ≥ 1", K)
	a.check(T >= 1 && T <= 16, "T", "%d, want 1 to 16 (one tile of rows)", T)
	runs, R := runsOf(a, runCount(a, T), 16)
	a.check(R == T, "runs", "cover %d rows, want the launch's %d", R, T)
	for s, next := 0, 0; s < len(runs); s, next = s+1, next+runs[s].rows {
		a.check(runs[s].row == next, "runs", "run %d starts at row %d, want %d (the rows in order)", s, runs[s].row, next)
	}
	packed := [2]int{a.intArg("fmt01"), a.intArg("fmt23")}
	qmatmulMultiFormats(a, func(i int) (string, int) {
		name := []string{"fmt01", "fmt23"}[i/2]
		return name, packed[i/2] >> (16 * (i % 2)) & 0xffff
	})
	out0, raw0 := a.bf16s("out0", T*Out0), a.bf16s("raw0", T*Out0)
	copy(raw0, out0)
	window := (K - 1) * Out0
	windows := a.bf16s("windows", slotSpan(a, "windows", runSlots(runs), stride, window))
	w, proj := a.bf16s("conv_w", Out0*K), slices.Clone(out0)
	for _, r := range runs {
		at, rows := r.slot*stride, out0[r.row*Out0:(r.row+r.rows)*Out0]
		convInto(proj[r.row*Out0:(r.row+r.rows)*Out0], windows[at:at+window], w, rows, r.rows, Out0, K)
	}
}

// runCount is how many runs of the runs table cover a launch's T rows in
// order (their rows summed), read a run at a time: the kernel takes no S.
func runCount(a *args, T int) int {
	table := a.i32s("runs", 3)
	s, covered := 0, 0
	for covered < T {
		s++
		table = a.i32s("runs", 3*s)
		rows := int(table[3*s-1])
		a.check(rows >= 1, "runs", "run %d has %d rows", s-1, rows)
		covered += rows
	}
	return s
}

// qmatmul_gather_swiglu_bf16: out[t,s,o] = bf16(silu(g)·u) with g =
// bf16(x[t]·Wgate[e,o]), u = bf16(x[t]·Wup[e,o]), e = ids[t,s]: two
// qmatmul_gather_bf16 (xPerSlot 0) and swiglu_bf16 in one dispatch.
func qmatmulGatherSwiglu(a *args) {
	T, K, In, Out := a.intArg("T"), a.intArg("K"), a.intArg("In"), a.intArg("Out")
	x := widen(a.bf16s("x", T*In))                                                 // (T, In)
	ids := a.i32s("ids", T*K)                                                      // (T, K)
	gate := a.quantNamed("gate_w", "gate_scales", "gate_biases", "bits", "gs", -1) // (E·Out, In)
	up := a.quantNamed("up_w", "up_scales", "up_biases", "bits", "gs", -1)         // (E·Out, In)
	out := a.bf16s("out", T*K*Out)                                                 // (T, K, Out)
	gatherSwiglu(a, x, ids, gate, up, out, K, In, Out)
}

// gatherSwiglu is qmatmul_gather_swiglu_bf16's work: x (T, In), ids (T, K),
// gate and up (E·Out, In), out (T, K, Out).
func gatherSwiglu(a *args, x []float32, ids []int32, gate, up *quantMatrix, out []uint16, K, In, Out int) {
	if Out == 0 {
		return
	}
	experts := min(gate.rows, up.rows) / Out
	for slot, id := range ids {
		a.check(id >= 0 && int(id) < experts, "ids", "ids[%d] = %d outside the %d experts of the weights", slot, id, experts)
	}
	a.parallel(len(ids)*Out, In, func(lo, hi int) {
		g, u := make([]float32, In), make([]float32, In)
		for item := lo; item < hi; item++ {
			slot, o := item/Out, item%Out
			row := int(ids[slot])*Out + o
			xr := x[(slot/K)*In : (slot/K+1)*In]
			gv := backend.RoundBF16(gate.dotRow(row, xr, g))
			uv := backend.RoundBF16(up.dotRow(row, xr, u))
			out[item] = backend.F32ToBF16(silu(gv) * uv)
		}
	})
}

// moe_up_bf16: qmatmul_gather_swiglu_bf16 for the routed slots, and for the
// shared expert hs[t,o] = bf16(silu(bf16(x[t]·Wsg[o]))·bf16(x[t]·Wsu[o])):
// qmatmul_multi_bf16's shared gate and up slots and swiglu_bf16, one dispatch.
func moeUp(a *args) {
	T, K, In, Out, Is := a.intArg("T"), a.intArg("K"), a.intArg("In"), a.intArg("Out"), a.intArg("Is")
	x := widen(a.bf16s("x", T*In))                                                                       // (T, In)
	ids := a.i32s("ids", T*K)                                                                            // (T, K)
	gate := a.quantNamed("gate_w", "gate_scales", "gate_biases", "bits", "gs", -1)                       // (E·Out, In)
	up := a.quantNamed("up_w", "up_scales", "up_biases", "bits", "gs", -1)                               // (E·Out, In)
	out := a.bf16s("out", T*K*Out)                                                                       // (T, K, Out)
	sgate := a.quantNamed("shared_gate_w", "shared_gate_scales", "shared_gate_biases", "bits", "gs", Is) // (Is, In)
	sup := a.quantNamed("shared_up_w", "shared_up_scales", "shared_up_biases", "bits", "gs", Is)         // (Is, In)
	hs := a.bf16s("hs", T*Is)                                                                            // (T, Is)
	gatherSwiglu(a, x, ids, gate, up, out, K, In, Out)
	a.parallel(Is, T*In, func(lo, hi int) {
		g, u := make([]float32, In), make([]float32, In)
		for o := lo; o < hi; o++ {
			sgate.row(o, g)
			sup.row(o, u)
			for t := range T {
				xr := x[t*In : (t+1)*In]
				hs[t*Is+o] = backend.F32ToBF16(silu(backend.RoundBF16(dot(xr, g))) * backend.RoundBF16(dot(xr, u)))
			}
		}
	})
}

// moe_down_bf16: for token t and output row o, y_s = bf16(h[t,s]·Wdown[ids[t,s],o])
// for the K slots, ys = bf16(hs[t]·Wshared[o]), r = bf16(Σ_s weights[t,s]·y_s)
// in slot order, out[t,o] = bf16(r + σ(gate[t])·ys): qmatmul_gather_bf16
// (xPerSlot 1), moe_combine_bf16, qmatmul_bf16 and add_sigmoid_scaled_bf16 in
// one dispatch, each step rounded as those kernels round it.
func moeDown(a *args) {
	T, K, H, I, Is := a.intArg("T"), a.intArg("K"), a.intArg("H"), a.intArg("I"), a.intArg("Is")
	h := widen(a.bf16s("h", T*K*I))                                                                            // (T, K, I)
	ids := a.i32s("ids", T*K)                                                                                  // (T, K)
	weights := a.bf16s("weights", T*K)                                                                         // (T, K)
	hs := widen(a.bf16s("hs", T*Is))                                                                           // (T, Is)
	gate := a.bf16s("gate", T)                                                                                 // (T)
	out := a.bf16s("out", T*H)                                                                                 // (T, H)
	down := a.quantMatrixIn("w", "scales", "biases", "bits", "gs", I, -1)                                      // (E·H, I)
	shared := a.quantMatrixIn("shared_w", "shared_scales", "shared_biases", "shared_bits", "shared_gs", Is, H) // (H, Is)
	experts := down.rows / max(H, 1)
	for slot, id := range ids {
		a.check(id >= 0 && int(id) < experts, "ids", "ids[%d] = %d outside the %d experts of w", slot, id, experts)
	}
	a.parallel(T*H, (K+1)*I, func(lo, hi int) {
		row, srow := make([]float32, I), make([]float32, Is)
		for item := lo; item < hi; item++ {
			t, o := item/H, item%H
			var routed float32
			for s := range K {
				y := backend.RoundBF16(down.dotRow(int(ids[t*K+s])*H+o, h[(t*K+s)*I:(t*K+s+1)*I], row))
				routed += f32(weights[t*K+s]) * y
			}
			ys := backend.RoundBF16(shared.dotRow(o, hs[t*Is:(t+1)*Is], srow))
			out[item] = backend.F32ToBF16(backend.RoundBF16(routed) + sigmoid(f32(gate[t]))*ys)
		}
	})
}
