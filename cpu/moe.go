package cpu

import "bagel/backend"

// router_topk_bf16: p = bf16(softmax_f32(logits)) per token; ids = the K largest
// p in descending order, ties to the lower expert index; weights = p[ids], and
// when norm ≠ 0, weights = bf16(w / bf16(Σw)).
func routerTopK(a *args) {
	T, E, K, norm := a.intArg("T"), a.intArg("E"), a.intArg("K"), a.intArg("norm")
	a.check(K <= E, "K", "%d, want ≤ E=%d", K, E)
	a.check(E > 0 || T == 0, "E", "no experts")
	route(a.bf16s("logits", T*E), a.i32s("ids", T*K), a.bf16s("weights", T*K), T, E, K, norm != 0)
}

// route is router_topk_bf16 on slices: logits (T, E) → ids, weights (T, K).
func route(logits []uint16, ids []int32, weights []uint16, T, E, K int, norm bool) {
	p := make([]float32, E) // this token's probabilities, bf16 values
	taken := make([]bool, E)
	for t := range T {
		row := logits[t*E : (t+1)*E]
		maxLogit := f32(row[0])
		for _, h := range row {
			maxLogit = max(maxLogit, f32(h))
		}
		var sum float32
		for e, h := range row {
			p[e] = expf(f32(h) - maxLogit)
			sum += p[e]
		}
		inv := 1 / sum // MLX's softmax multiplies by the reciprocal of the sum
		for e := range p {
			p[e] = backend.RoundBF16(p[e] * inv)
		}

		// K passes of "largest not yet taken"; strict > keeps the lower index on ties.
		clear(taken)
		var total float32
		for s := range K {
			best := -1
			for e := range E {
				if !taken[e] && (best < 0 || p[e] > p[best]) {
					best = e
				}
			}
			taken[best] = true
			ids[t*K+s] = int32(best)
			total += p[best]
		}
		total = backend.RoundBF16(total)
		for s := range K {
			w := p[ids[t*K+s]]
			if norm {
				w /= total
			}
			weights[t*K+s] = backend.F32ToBF16(w)
		}
	}
}

// moe_combine_bf16: out[t,:] = bf16(Σ_s weights[t,s]·y[t,s,:]) in f32, slots in order.
func moeCombine(a *args) {
	T, K, H := a.intArg("T"), a.intArg("K"), a.intArg("H")
	y := a.bf16s("y", T*K*H)           // (T, K, H)
	weights := a.bf16s("weights", T*K) // (T, K)
	out := a.bf16s("out", T*H)         // (T, H)
	for t := range T {
		for i := range H {
			var s float32
			for slot := range K {
				s += f32(weights[t*K+slot]) * f32(y[(t*K+slot)*H+i])
			}
			out[t*H+i] = backend.F32ToBF16(s)
		}
	}
}
