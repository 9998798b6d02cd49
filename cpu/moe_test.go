package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"bagel/backend"
)

func TestRouterTopK(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	d := newTestDevice()
	const T, E, K = 2, 8, 3
	logits := append([]float32{1, 3, 3, 0, 2, 3, -1, 3}, randBF16(rng, E, 2)...) // token 0 ties four ways
	lb := bf16Buf(t, d, logits)
	for _, norm := range []int{0, 1} {
		ids, weights := poisonBuf(t, d, 4*T*K), poisonBuf(t, d, 2*T*K)
		dispatch(d, "router_topk_bf16", arg(lb), arg(ids), arg(weights), backend.Int(T), backend.Int(E), backend.Int(K), backend.Int(norm))
		gotIDs, gotW := readI32(t, d, ids, T*K), readBF16(t, d, weights, T*K)
		if want := []int32{1, 2, 5}; gotIDs[0] != want[0] || gotIDs[1] != want[1] || gotIDs[2] != want[2] {
			t.Fatalf("norm=%d: tied ids %v, want %v (lower index first, index 7 left out)", norm, gotIDs[:K], want)
		}
		for tok := range T {
			// p in float64, then bf16 as the contract stores it.
			row := logits[tok*E : (tok+1)*E]
			m := math.Inf(-1)
			for _, l := range row {
				m = max(m, float64(l))
			}
			var sum float64
			for _, l := range row {
				sum += math.Exp(float64(l) - m)
			}
			p := make([]float64, E)
			for e, l := range row {
				p[e] = float64(backend.RoundBF16(float32(math.Exp(float64(l)-m) / sum)))
			}
			var total, sumP float64
			seen := map[int32]bool{}
			for s := range K {
				id := gotIDs[tok*K+s]
				if id < 0 || id >= E || seen[id] {
					t.Fatalf("norm=%d token %d: ids %v", norm, tok, gotIDs[tok*K:(tok+1)*K])
				}
				seen[id] = true
				if s > 0 && p[id] > p[gotIDs[tok*K+s-1]] {
					t.Fatalf("norm=%d token %d: ids %v not in descending order of p %v", norm, tok, gotIDs[tok*K:(tok+1)*K], p)
				}
				w := float64(gotW[tok*K+s])
				total += w
				sumP += p[id]
				if norm == 0 && math.Abs(w-p[id]) > p[id]/256 {
					t.Fatalf("token %d slot %d: weight %v, want p = %v", tok, s, w, p[id])
				}
			}
			last := gotIDs[(tok+1)*K-1]
			for e := range int32(E) { // nothing left out beats the last one taken
				if !seen[e] && (p[e] > p[last] || p[e] == p[last] && e < last) {
					t.Fatalf("norm=%d token %d: expert %d (p %v) left out for %d (p %v)", norm, tok, e, p[e], last, p[last])
				}
			}
			for s := range K {
				want := p[gotIDs[tok*K+s]] / float64(backend.RoundBF16(float32(sumP)))
				if w := float64(gotW[tok*K+s]); norm == 1 && math.Abs(w-want) > want/256 {
					t.Fatalf("token %d slot %d: weight %v, want p/bf16(Σp) = %v", tok, s, w, want)
				}
			}
			if norm == 1 && math.Abs(total-1) > 3.0/256 {
				t.Fatalf("token %d: renormalised weights %v sum to %v", tok, gotW[tok*K:(tok+1)*K], total)
			}
		}
	}
}

func TestMoECombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	d := newTestDevice()
	const T, K, H = 2, 3, 16
	y, w := randBF16(rng, T*K*H, 1), randBF16(rng, T*K, 0.5)
	out := poisonBuf(t, d, 2*T*H)
	dispatch(d, "moe_combine_bf16", arg(bf16Buf(t, d, y)), arg(bf16Buf(t, d, w)), arg(out), backend.Int(T), backend.Int(K), backend.Int(H))
	got := readBF16(t, d, out, T*H)
	for tok := range T {
		for i := range H {
			var want float64
			for s := range K {
				want += float64(w[tok*K+s]) * float64(y[(tok*K+s)*H+i])
			}
			if g := got[tok*H+i]; !bf16Close(g, want, 1e-6) {
				t.Fatalf("out[%d,%d] = %v, want %v", tok, i, g, want)
			}
		}
	}
}
