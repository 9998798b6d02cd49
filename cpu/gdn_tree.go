package cpu

// The Gated DeltaNet over a draft tree (a speculative verify of several
// guesses per position): T nodes, parents first, parent[t] the node before t
// on its path (−1: the tree's root, whose predecessor is the cache). Node t's
// output is the linear kernel's over its path: the conv window and the
// recurrent state start from the cache's, which the tree leaves as they were
// (the accepted path is replayed into them afterwards).

// treePath is node t's path from the root to t, in order.
func treePath(parent []int32, t int) []int {
	var path []int
	for n := t; n >= 0; n = int(parent[n]) {
		path = append(path, n)
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path
}

// checkParents checks that every parent comes before its child.
func checkParents(a *args, parent []int32) {
	for t, p := range parent {
		a.check(p >= -1 && int(p) < t, "parent", "node %d has parent %d, want −1 ≤ parent < %d", t, p, t)
	}
}

// gatherRows copies rows path of x (rows of width) into one slice.
func gatherRows(x []uint16, path []int, width int) []uint16 {
	out := make([]uint16, 0, len(path)*width)
	for _, n := range path {
		out = append(out, x[n*width:(n+1)*width]...)
	}
	return out
}

// conv1d_silu_tree_bf16: conv1d_silu_bf16 of each node over its path, the
// state read only.
func conv1dSiluTree(a *args) {
	T, C, K := a.intArg("T"), a.intArg("C"), a.intArg("K")
	a.check(K >= 1, "K", "%d, want ≥ 1", K)
	x, w, out := a.bf16s("x", T*C), a.bf16s("w", C*K), a.bf16s("out", T*C) // (T, C), (C, K), (T, C)
	state := a.bf16s("state", (K-1)*C)                                     // (K−1, C)
	parent := a.i32s("parent", T)
	checkParents(a, parent)
	for t := range T {
		path := treePath(parent, t)
		o := make([]uint16, len(path)*C)
		convInto(gatherRows(x, path, C), append([]uint16(nil), state...), w, o, len(path), C, K)
		copy(out[t*C:(t+1)*C], o[(len(path)-1)*C:])
	}
}

// gdn_recurrence_tree_bf16: gdn_recurrence_bf16 (normed 0) of each node over
// its path, from the state, which stays as it was.
func gdnRecurrenceTree(a *args) {
	T, Hk, Hv := a.intArg("T"), a.intArg("Hk"), a.intArg("Hv")
	Dk, Dv := a.intArg("Dk"), a.intArg("Dv")
	a.check(Hk > 0 && Hv%Hk == 0, "Hk", "%d does not divide Hv=%d", Hk, Hv)
	width := 2*Hk*Dk + Hv*Dv
	conv := a.bf16s("conv", T*width)                   // (T, 2·Hk·Dk + Hv·Dv)
	alpha, b := a.bf16s("a", T*Hv), a.bf16s("b", T*Hv) // (T, Hv)
	aLog, dtBias := a.f32s("aLog", Hv), a.bf16s("dtBias", Hv)
	state := a.f32s("state", Hv*Dv*Dk) // (Hv, Dv, Dk)
	out := a.bf16s("out", T*Hv*Dv)     // (T, Hv, Dv)
	parent := a.i32s("parent", T)
	checkParents(a, parent)
	for t := range T {
		path := treePath(parent, t)
		n := len(path)
		g, beta := make([]float32, n*Hv), make([]float32, n*Hv)
		gatesInto(gatherRows(alpha, path, Hv), gatherRows(b, path, Hv), aLog, dtBias, g, beta, n, Hv)
		o := make([]uint16, n*Hv*Dv)
		gdnRun(a, gatherRows(conv, path, width), g, beta, append([]float32(nil), state...), o, n, Hk, Hv, Dk, Dv, false)
		copy(out[t*Hv*Dv:(t+1)*Hv*Dv], o[(n-1)*Hv*Dv:])
	}
}
