package cpu

import (
	"math/rand/v2"
	"slices"
	"testing"

	"bagel/backend"
)

// TestAttentionTreeSeesItsPath: over a draft tree, query t's output is plain
// attention's for one query whose cache is the keys before the tree and then
// t's path, in order (the same keys in the same order: the same bits).
func TestAttentionTreeSeesItsPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	d := newTestDevice()
	parent := []int32{-1, 0, 1, 0, 3, 3}
	T, base := len(parent), 5
	c := newAttnCase(rng, T, 4, 2, 8, base+T, base+T)
	mask := make([]int32, T)
	for n, p := range parent {
		mask[n] = 1 << n
		if p >= 0 {
			mask[n] |= mask[p]
		}
	}
	out := poisonBuf(t, d, 2*T*c.Hq*c.D)
	dispatch(d, "attention_tree_bf16", arg(bf16Buf(t, d, c.q)), arg(bf16Buf(t, d, c.k)), arg(bf16Buf(t, d, c.v)),
		arg(i32Buf(t, d, mask)), arg(out), backend.Int(T), backend.Int(c.Hq), backend.Int(c.Hkv), backend.Int(c.D),
		backend.Int(c.Cap), backend.Int(c.kvLen), backend.Float(c.scale))
	tree := readBF16(t, d, out, T*c.Hq*c.D)
	for n := range T {
		path := treePath(parent, n)
		rows := make([]int, 0, base+len(path))
		for j := range base {
			rows = append(rows, j)
		}
		for _, p := range path {
			rows = append(rows, base+p)
		}
		one := attnCase{T: 1, Hq: c.Hq, Hkv: c.Hkv, D: c.D, Cap: len(rows), kvLen: len(rows), scale: c.scale,
			q: c.q[n*c.Hq*c.D : (n+1)*c.Hq*c.D]}
		for h := range c.Hkv {
			for _, r := range rows {
				one.k = append(one.k, c.k[(h*c.Cap+r)*c.D:(h*c.Cap+r+1)*c.D]...)
				one.v = append(one.v, c.v[(h*c.Cap+r)*c.D:(h*c.Cap+r+1)*c.D]...)
			}
		}
		if got, want := tree[n*c.Hq*c.D:(n+1)*c.Hq*c.D], one.run(t, d); !slices.Equal(got, want) {
			t.Errorf("node %d (path %v): %v\nwant %v", n, path, got, want)
		}
	}
}
