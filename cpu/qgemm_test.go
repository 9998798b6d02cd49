package cpu

import (
	"math/rand/v2"
	"slices"
	"testing"

	"bagel/backend"
)

// TestSortByExpert checks the grouping against its definition: every valid
// pair once, experts ascending, pairs ascending within one, tiles covering each
// expert's run in pieces of at most the tile size, the rest of the table empty.
func TestSortByExpert(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, c := range []struct{ n, experts, tile int }{{200, 16, 64}, {7, 300, 64}, {130, 2, 64}, {64, 1, 64}, {0, 4, 64}, {50, 5, 8}} {
		ids := make([]int32, c.n)
		for i := range ids {
			ids[i] = int32(rng.IntN(c.experts))
		}
		perm, tiles := SortByExpert(ids, c.experts, c.tile)
		if len(tiles) != 3*((c.n+c.tile-1)/c.tile+c.experts) {
			t.Fatalf("%+v: %d table entries", c, len(tiles)/3)
		}
		for i := 1; i < len(perm); i++ {
			a, b := perm[i-1], perm[i]
			if ids[a] > ids[b] || ids[a] == ids[b] && a >= b {
				t.Fatalf("%+v: perm[%d] = %d (expert %d) before perm[%d] = %d (expert %d)", c, i-1, a, ids[a], i, b, ids[b])
			}
		}
		if sorted := slices.Sorted(slices.Values(perm)); len(perm) > 0 && (sorted[0] != 0 || int(sorted[len(sorted)-1]) != c.n-1) {
			t.Fatalf("%+v: perm is not a permutation", c)
		}
		covered, ended := 0, false
		for b := 0; b < len(tiles); b += 3 {
			e, start, count := tiles[b], int(tiles[b+1]), int(tiles[b+2])
			if e < 0 {
				ended = true
				continue
			}
			if ended || start != covered || count < 1 || count > c.tile {
				t.Fatalf("%+v: tile %d = (%d, %d, %d) after %d pairs", c, b/3, e, start, count, covered)
			}
			for _, p := range perm[start : start+count] {
				if ids[p] != e {
					t.Fatalf("%+v: tile %d of expert %d holds pair %d of expert %d", c, b/3, e, p, ids[p])
				}
			}
			covered += count
		}
		if covered != c.n {
			t.Fatalf("%+v: tiles cover %d of %d pairs", c, covered, c.n)
		}
	}
}

// TestQGemmIsTheGEMV: the exact prefill GEMM computes what qmatmul_bf16
// computes, on the CPU in the same order, so every output is the GEMV's bit
// for bit; with each weight rounded to bf16 first (exact 0: MLX's, and the
// GEMM's only form once), 1,150 of these 2,590 outputs differ, 361 by more
// than a bf16 step (sums that cancel). For each form the grouped GEMM is, per
// pair, the dense GEMM of that pair's expert.
func TestQGemmIsTheGEMV(t *testing.T) {
	for _, exact := range []int{1, 0} {
		testQGemmIsTheGEMV(t, exact)
	}
}

func testQGemmIsTheGEMV(t *testing.T, exact int) {
	rng := rand.New(rand.NewPCG(43, 44))
	d := newTestDevice()
	const T, K, E, In, Out = 70, 3, 5, 128, 37
	c := randQuant(rng, 4, 64, E*Out, In)
	wb, sb, bb := c.upload(t, d)
	x := randBF16(rng, T*In, 1)
	xb := bf16Buf(t, d, x)

	// Dense: expert 0's rows as a plain matrix, against qmatmul_bf16.
	gemm, gemv := poisonBuf(t, d, 2*T*Out), poisonBuf(t, d, 2*T*Out)
	scalars := []backend.Arg{backend.Int(T), backend.Int(In), backend.Int(Out), backend.Int(4), backend.Int(64)}
	dispatch(d, "qgemm_bf16", append([]backend.Arg{arg(xb), arg(wb), arg(sb), arg(bb), arg(gemm)}, append(scalars, backend.Int(exact))...)...)
	dispatch(d, "qmatmul_bf16", append([]backend.Arg{arg(xb), arg(wb), arg(sb), arg(bb), arg(gemv)}, scalars...)...)
	a, b := readBF16(t, d, gemm, T*Out), readBF16(t, d, gemv, T*Out)
	differ := 0
	for i := range a {
		if a[i] != b[i] {
			differ++
		}
	}
	if exact == 1 && differ > 0 || exact == 0 && differ < len(a)/4 {
		t.Fatalf("exact %d: %d of %d outputs differ from the GEMV's", exact, differ, len(a))
	}

	// Grouped: route every token to K experts, sort, and compare pair by pair
	// with the dense GEMM of the expert.
	ids := make([]int32, T*K)
	for tok := range T {
		for s, e := range rng.Perm(E)[:K] {
			ids[tok*K+s] = int32(e)
		}
	}
	perm, tiles := poisonBuf(t, d, 4*T*K), poisonBuf(t, d, 4*len(ids)) // more than the table needs
	dispatch(d, "moe_sort_i32", arg(i32Buf(t, d, ids)), arg(perm), arg(tiles), backend.Int(T), backend.Int(K), backend.Int(E))
	wantPerm, _ := SortByExpert(ids, E, qgemmTile)
	if got := readI32(t, d, perm, T*K); !slices.Equal(got, wantPerm) {
		t.Fatalf("moe_sort_i32 perm differs from SortByExpert")
	}
	grouped := poisonBuf(t, d, 2*T*K*Out)
	dispatch(d, "qgemm_gather_bf16", arg(xb), arg(perm), arg(tiles), arg(wb), arg(sb), arg(bb), arg(grouped),
		backend.Int(T), backend.Int(K), backend.Int(E), backend.Int(In), backend.Int(Out), backend.Int(4), backend.Int(64), backend.Int(0),
		backend.Int(exact))
	got := readBF16(t, d, grouped, T*K*Out)
	for e := range E {
		dense := poisonBuf(t, d, 2*T*Out)
		words, groups := In*4/32, In/64
		dispatch(d, "qgemm_bf16", arg(xb), backend.Buf(wb, 4*e*Out*words), backend.Buf(sb, 2*e*Out*groups),
			backend.Buf(bb, 2*e*Out*groups), arg(dense), backend.Int(T), backend.Int(In), backend.Int(Out), backend.Int(4), backend.Int(64),
			backend.Int(exact))
		want := readBF16(t, d, dense, T*Out)
		for p, id := range ids {
			if int(id) != e {
				continue
			}
			tok := p / K
			for o := range Out {
				if got[p*Out+o] != want[tok*Out+o] {
					t.Fatalf("pair %d (token %d, expert %d) output %d: %v grouped, %v dense", p, tok, e, o, got[p*Out+o], want[tok*Out+o])
				}
			}
		}
	}
}
