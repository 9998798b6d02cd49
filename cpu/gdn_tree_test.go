package cpu

import (
	"math/rand/v2"
	"slices"
	"testing"

	"bagel/backend"
)

// TestGDNTreeFollowsPaths: over a draft tree, the conv and the rule give each
// node what the linear kernels give the last token of its path, from the same
// window and state, which the tree leaves as they were.
func TestGDNTreeFollowsPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	d := newTestDevice()
	// 0 ← 1 ← 2, 0 ← 3 ← 4, a second root 5 ← 6.
	parent := []int32{-1, 0, 1, 0, 3, -1, 5}
	T := len(parent)
	const C, K = 6, 4
	x := randBF16(rng, T*C, 1)
	w := randBF16(rng, C*K, 0.5)
	state := randBF16(rng, (K-1)*C, 1)
	stateBuf := bf16Buf(t, d, state)
	out := poisonBuf(t, d, 2*T*C)
	dispatch(d, "conv1d_silu_tree_bf16", arg(bf16Buf(t, d, x)), arg(stateBuf), arg(bf16Buf(t, d, w)),
		arg(i32Buf(t, d, parent)), arg(out), backend.Int(T), backend.Int(C), backend.Int(K))
	tree := readBF16(t, d, out, T*C)
	if got := readBF16(t, d, stateBuf, (K-1)*C); !slices.Equal(got, state) {
		t.Fatalf("the tree's conv moved the state: %v, was %v", got, state)
	}
	const Hk, Hv, Dk, Dv = 1, 2, 8, 4
	width := 2*Hk*Dk + Hv*Dv
	conv := randBF16(rng, T*width, 1)
	ga, gb := randBF16(rng, T*Hv, 2), randBF16(rng, T*Hv, 2)
	aLog, dtBias := []float32{0.5, 1.5}, randBF16(rng, Hv, 1)
	s0 := make([]float32, Hv*Dv*Dk)
	for i := range s0 {
		s0[i] = float32(rng.NormFloat64() * 0.1)
	}
	s0Buf := f32Buf(t, d, s0)
	rout := poisonBuf(t, d, 2*T*Hv*Dv)
	dispatch(d, "gdn_recurrence_tree_bf16", arg(bf16Buf(t, d, conv)), arg(bf16Buf(t, d, ga)), arg(bf16Buf(t, d, gb)),
		arg(f32Buf(t, d, aLog)), arg(bf16Buf(t, d, dtBias)), arg(s0Buf), arg(i32Buf(t, d, parent)), arg(rout),
		backend.Int(T), backend.Int(Hk), backend.Int(Hv), backend.Int(Dk), backend.Int(Dv))
	treeRule := readBF16(t, d, rout, T*Hv*Dv)
	if got := readF32(t, d, s0Buf, len(s0)); !slices.Equal(got, s0) {
		t.Fatal("the tree's rule moved the state")
	}

	rows := func(v []float32, path []int, width int) []float32 {
		var out []float32
		for _, n := range path {
			out = append(out, v[n*width:(n+1)*width]...)
		}
		return out
	}
	for node := range T {
		path := treePath(parent, node)
		n := len(path)
		lin := runConv(t, d, rows(x, path, C), bf16Buf(t, d, state), w, n, C, K)
		if want := lin[(n-1)*C:]; !slices.Equal(tree[node*C:(node+1)*C], want) {
			t.Errorf("conv, node %d (path %v): %v, want %v", node, path, tree[node*C:(node+1)*C], want)
		}
		lout := poisonBuf(t, d, 2*n*Hv*Dv)
		dispatch(d, "gdn_recurrence_bf16", arg(bf16Buf(t, d, rows(conv, path, width))), arg(bf16Buf(t, d, rows(ga, path, Hv))),
			arg(bf16Buf(t, d, rows(gb, path, Hv))), arg(f32Buf(t, d, aLog)), arg(bf16Buf(t, d, dtBias)),
			arg(f32Buf(t, d, s0)), arg(lout), backend.Int(n), backend.Int(Hk), backend.Int(Hv), backend.Int(Dk),
			backend.Int(Dv), backend.Int(0))
		if want := readBF16(t, d, lout, n*Hv*Dv)[(n-1)*Hv*Dv:]; !slices.Equal(treeRule[node*Hv*Dv:(node+1)*Hv*Dv], want) {
			t.Errorf("rule, node %d (path %v): %v, want %v", node, path, treeRule[node*Hv*Dv:(node+1)*Hv*Dv], want)
		}
	}
}
