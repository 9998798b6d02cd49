package cpu

import (
	"fmt"

	"bagel/backend"
	"bagel/kernels"
)

// The prefill GEMMs (kernels/qgemm.metal). With exact = 1 they compute the
// GEMVs' sums, every weight dequantized exactly (f32) as qmatmul_bf16 takes
// it, so on the CPU a GEMM's output is the GEMV's bit for bit (the GPUs reach
// the same products with each weight as two bf16 parts, their f32 sums in
// other orders). With exact = 0 each weight is rounded to bf16 before its
// products, as MLX's quantized GEMM stages it.

// qgemmTile is QG_BM, the most pairs one tile of qgemm_gather_bf16 holds.
var qgemmTile = kernels.Defines()["QG_BM"]

// gemmRow dequantizes row r of m into row: exactly, or rounded to bf16 when
// exact is 0.
func gemmRow(m *quantMatrix, r int, row []float32, exact int) {
	m.row(r, row)
	if exact == 0 {
		for j, v := range row {
			row[j] = backend.RoundBF16(v)
		}
	}
}

// qgemm_bf16: out[t,o] = bf16(Σ_j x[t,j]·W[o,j]), W exact or bf16 (exact 0).
func qgemmBF16(a *args) {
	T, In, Out := a.intArg("T"), a.intArg("In"), a.intArg("Out")
	a.check(In%32 == 0, "In", "%d is not a multiple of 32 (the GEMM steps over 32 inputs)", In)
	qgemmInto(a, widen(a.bf16s("x", T*In)), a.quant(Out), a.bf16s("out", T*Out), T, In, Out, a.intArg("exact"))
}

// qgemm_multi_bf16: qgemm_bf16 for each matrix I = 0..3 with OutI > 0 over
// the same x, into outI.
func qgemmMulti(a *args) {
	T, In := a.intArg("T"), a.intArg("In")
	a.check(In%32 == 0, "In", "%d is not a multiple of 32 (the GEMM steps over 32 inputs)", In)
	x := widen(a.bf16s("x", T*In)) // (T, In)
	for i := range 4 {
		n := fmt.Sprint(i)
		if Out := a.intArg("Out" + n); Out > 0 {
			qgemmInto(a, x, a.quantFormat("w"+n, "scales"+n, "biases"+n, "fmt"+n, Out), a.bf16s("out"+n, T*Out), T, In, Out, a.intArg("exact"))
		}
	}
}

// qgemmInto is qgemm_bf16 on x (T, In) and the matrix m (Out, In) into out (T, Out).
func qgemmInto(a *args, x []float32, m *quantMatrix, out []uint16, T, In, Out, exact int) {
	a.parallel(Out, T*In, func(lo, hi int) {
		row := make([]float32, In) // W[o,:]
		for o := lo; o < hi; o++ {
			gemmRow(m, o, row, exact)
			for t := range T {
				out[t*Out+o] = backend.F32ToBF16(dot(x[t*In:(t+1)*In], row))
			}
		}
	})
}

// SortByExpert is moe_sort_i32 for the host: the pairs p = t·K+s grouped by
// expert (ascending p within an expert) and the tile table, tiles[3b:3b+3] =
// (expert, first index into perm, pairs) for tiles of at most tile pairs, then
// (−1, 0, 0) up to ceil(len(ids), tile) + experts entries. Ids outside
// [0, experts) belong to no tile and leave their perm entries at −1.
func SortByExpert(ids []int32, experts, tile int) (perm, tiles []int32) {
	n := len(ids)
	counts := make([]int, experts)
	for _, id := range ids {
		if id >= 0 && int(id) < experts {
			counts[id]++
		}
	}
	first := make([]int, experts+1)
	for e, c := range counts {
		first[e+1] = first[e] + c
	}
	perm = make([]int32, n)
	for i := range perm {
		perm[i] = -1
	}
	at := append([]int(nil), first[:experts]...)
	for p, id := range ids {
		if id >= 0 && int(id) < experts {
			perm[at[id]] = int32(p)
			at[id]++
		}
	}
	ntiles := (n+tile-1)/tile + experts
	tiles = make([]int32, 0, 3*ntiles)
	for e, c := range counts {
		for j := 0; j*tile < c; j++ {
			tiles = append(tiles, int32(e), int32(first[e]+j*tile), int32(min(tile, c-j*tile)))
		}
	}
	for len(tiles) < 3*ntiles {
		tiles = append(tiles, -1, 0, 0)
	}
	return perm, tiles
}

// moe_sort_i32: see SortByExpert. The perm entries past the routed pairs are
// not written (the kernel leaves them as they were).
func moeSort(a *args) {
	T, K, E := a.intArg("T"), a.intArg("K"), a.intArg("E")
	ids := a.i32s("ids", T*K)
	for p, id := range ids {
		a.check(id >= 0 && int(id) < E, "ids", "ids[%d] = %d outside the %d experts", p, id, E)
	}
	perm, tiles := SortByExpert(ids, E, qgemmTile)
	copy(a.i32s("perm", T*K), perm)
	copy(a.i32s("tiles", len(tiles)), tiles)
}

// qgemm_gather_bf16: for every tile (e, start, count) of the table and pair p =
// perm[start+r], r < count: out[p,o] = bf16(Σ_j xrow[j]·W[e,o,j]), xrow =
// x[p/K,:] (xPerSlot 0) or x[p,:] (xPerSlot 1).
func qgemmGather(a *args) {
	T, K, E, In, Out := a.intArg("T"), a.intArg("K"), a.intArg("E"), a.intArg("In"), a.intArg("Out")
	xPerSlot, exact := a.intArg("xPerSlot"), a.intArg("exact")
	a.check(xPerSlot <= 1, "xPerSlot", "%d, want 0 or 1", xPerSlot)
	a.check(In%32 == 0, "In", "%d is not a multiple of 32 (the GEMM steps over 32 inputs)", In)
	n := T * K
	xRows := T
	if xPerSlot == 1 {
		xRows = n
	}
	x := widen(a.bf16s("x", xRows*In)) // (T, In) or (T·K, In)
	perm := a.i32s("perm", n)
	ntiles := (n+qgemmTile-1)/qgemmTile + E
	tiles := a.i32s("tiles", 3*ntiles)
	m := a.quant(E * Out)        // (E·Out, In)
	out := a.bf16s("out", n*Out) // (T·K, Out)
	type tile struct{ e, start, count int }
	var list []tile
	for b := range ntiles {
		e, start, count := int(tiles[3*b]), int(tiles[3*b+1]), int(tiles[3*b+2])
		if e < 0 {
			continue
		}
		a.check(e < E && count >= 0 && count <= qgemmTile && start >= 0 && start+count <= n, "tiles",
			"tile %d = (%d, %d, %d) outside %d experts and %d pairs", b, e, start, count, E, n)
		for _, p := range perm[start : start+count] {
			a.check(p >= 0 && int(p) < n, "perm", "pair %d outside the %d pairs", p, n)
		}
		list = append(list, tile{e, start, count})
	}
	// One work item is one (tile, output row) pair.
	a.parallel(len(list)*Out, qgemmTile*In, func(lo, hi int) {
		row := make([]float32, In)
		for item := lo; item < hi; item++ {
			tl, o := list[item/Out], item%Out
			gemmRow(m, tl.e*Out+o, row, exact)
			for _, p := range perm[tl.start : tl.start+tl.count] {
				r := int(p) / K
				if xPerSlot == 1 {
					r = int(p)
				}
				out[int(p)*Out+o] = backend.F32ToBF16(dot(x[r*In:(r+1)*In], row))
			}
		}
	})
}
