package cpu

import (
	"cmp"
	"math"
	"slices"

	"bagel/kernels"
)

var negInf = float32(math.Inf(-1))

// quietNaN is the NaN the top-k kernels write for a non-finite row (0x7fc00000,
// as the GPU kernels write it, so the GPU tests can compare it).
var quietNaN = math.Float32frombits(0x7fc00000)

// topKChunk is kernels' TOPK_CHUNK: the logits of one topk_partial_f32 threadgroup.
var topKChunk = kernels.Defines()["TOPK_CHUNK"]

// topk_partial_f32: per row and chunk of TOPK_CHUNK elements, the chunk's K
// largest values in descending order (ties: lower index first; NaNs passed
// over; padding id −1, value −∞) with ids indexing the row, and stats (m, s):
// m the chunk's largest number (−∞ if none) and s = Σ exp(x − m) over its
// numbers (in f64, rounded: the GPU's f32 sum differs by rounding); m is NaN
// and s 0 when the chunk holds a NaN or an infinity.
func topkPartial(a *args) {
	R, N, K := a.intArg("R"), a.intArg("N"), a.intArg("K")
	C := (N + topKChunk - 1) / topKChunk
	topKPartialInto(a.f32s("x", R*N), R, N, K, a.i32s("cand_ids", R*C*K), a.f32s("cand_vals", R*C*K),
		a.f32s("stats", R*C*2), a.parallel)
}

// TopKPartial is topk_partial_f32 on x (R, N): cand_ids, cand_vals (R, C, K)
// and stats (R, C, 2), C = ceil(N / TOPK_CHUNK). The GPU tests build
// topk_merge_f32's inputs with it.
func TopKPartial(x []float32, R, N, K int) (ids []int32, vals, stats []float32) {
	C := (N + topKChunk - 1) / topKChunk
	ids, vals, stats = make([]int32, R*C*K), make([]float32, R*C*K), make([]float32, R*C*2)
	serial := func(n, _ int, fn func(lo, hi int)) { fn(0, n) }
	topKPartialInto(x, R, N, K, ids, vals, stats, serial)
	return ids, vals, stats
}

// topKPartialInto fills ids, vals and stats as TopKPartial returns them, the
// R·C (row, chunk) pairs spread by par (they are independent: the same bits
// however they are spread).
func topKPartialInto(x []float32, R, N, K int, ids []int32, vals, stats []float32, par func(n, cost int, fn func(lo, hi int))) {
	C := (N + topKChunk - 1) / topKChunk
	par(R*C, topKChunk, func(lo, hi int) {
		for rc := lo; rc < hi; rc++ {
			r, c := rc/C, rc%C
			clo, chi := c*topKChunk, min(N, (c+1)*topKChunk)
			row := x[r*N : (r+1)*N]
			m, s := topK(row, clo, chi, ids[rc*K:(rc+1)*K], vals[rc*K:(rc+1)*K])
			for _, v := range row[clo:chi] {
				if v-v != 0 { // NaN or ±Inf
					m, s = quietNaN, 0
				}
			}
			stats[2*rc], stats[2*rc+1] = m, s
		}
	})
}

// topK writes the K = len(ids) largest numbers of row[lo:hi] (ids index row)
// in descending order, ties to the lower index (padding −1, −∞), and returns
// the largest m and Σ exp(x − m) over them (NaNs and −∞ are not numbers
// here). It keeps the K best seen so far in order and inserts a number only
// when it beats the K-th: a full sort of the chunk was half a CPU decode
// step's time at the real vocabulary.
func topK(row []float32, lo, hi int, ids []int32, vals []float32) (m, s float32) {
	k := len(ids)
	n := 0 // numbers kept in ids[:n], vals[:n]
	mx := math.Inf(-1)
	for i := lo; i < hi; i++ {
		v := row[i]
		if !(v > negInf) {
			continue
		}
		mx = math.Max(mx, float64(v))
		if k == 0 || (n == k && !(v > vals[k-1])) {
			continue // not above the K-th; on a tie the earlier index stays
		}
		p := min(n, k-1) // the slot it takes: after every kept value ≥ v
		for p > 0 && vals[p-1] < v {
			ids[p], vals[p] = ids[p-1], vals[p-1]
			p--
		}
		ids[p], vals[p] = int32(i), v
		n = min(n+1, k)
	}
	for j := n; j < k; j++ {
		ids[j], vals[j] = -1, negInf
	}
	var sum float64
	for i := lo; i < hi; i++ {
		if row[i] > negInf {
			sum += math.Exp(float64(row[i]) - mx)
		}
	}
	return float32(mx), float32(sum)
}

// topk_merge_f32: per row, the K largest of the chunks' candidates in
// descending order (ties: lower index first; padding id −1, value −∞), and
// lse = M + log Σ_c s_c·exp(m_c − M) over the chunks' stats (−∞ without
// numbers; NaN when a chunk's m is NaN).
func topkMerge(a *args) {
	R, N, K := a.intArg("R"), a.intArg("N"), a.intArg("K")
	C := (N + topKChunk - 1) / topKChunk
	candIDs := a.i32s("cand_ids", R*C*K)   // (R, C, K)
	candVals := a.f32s("cand_vals", R*C*K) // (R, C, K)
	stats := a.f32s("stats", R*C*2)        // (R, C, 2)
	ids := a.i32s("ids", R*K)              // (R, K)
	vals := a.f32s("vals", R*K)            // (R, K)
	lse := a.f32s("lse", R)                // (R)
	for r := range R {
		type cand struct {
			id int32
			v  float32
		}
		var cs []cand
		M, bad := math.Inf(-1), false
		for c := range C {
			if m := float64(stats[2*(r*C+c)]); math.IsNaN(m) {
				bad = true
			} else {
				M = math.Max(M, m)
			}
			for k := range K {
				if j := (r*C+c)*K + k; candIDs[j] >= 0 {
					cs = append(cs, cand{candIDs[j], candVals[j]})
				}
			}
		}
		var S float64
		for c := range C {
			if m := float64(stats[2*(r*C+c)]); m > math.Inf(-1) {
				S += float64(stats[2*(r*C+c)+1]) * math.Exp(m-M)
			}
		}
		switch {
		case bad:
			lse[r] = quietNaN
		case M > math.Inf(-1):
			lse[r] = float32(M + math.Log(S))
		default:
			lse[r] = negInf
		}
		slices.SortFunc(cs, func(x, y cand) int {
			if c := cmp.Compare(y.v, x.v); c != 0 {
				return c
			}
			return cmp.Compare(x.id, y.id)
		})
		for k := range K {
			ids[r*K+k], vals[r*K+k] = -1, negInf
			if k < len(cs) {
				ids[r*K+k], vals[r*K+k] = cs[k].id, cs[k].v
			}
		}
	}
}

// repetition_penalty_f32: x[id] = x[id]·penalty if negative, else x[id]/penalty,
// for each of the M distinct ids inside [0, N).
func repetitionPenalty(a *args) {
	N, M, penalty := a.intArg("N"), a.intArg("M"), a.floatArg("penalty")
	x := a.f32s("x", N)     // (N)
	ids := a.i32s("ids", M) // (M)
	for _, id := range ids {
		if id < 0 || int(id) >= N {
			continue
		}
		if x[id] < 0 {
			x[id] *= penalty
		} else {
			x[id] /= penalty
		}
	}
}

// sample_top_f32: the row's draw from its top K candidates (best first) as
// engine/sampler.go draws, in f32 with the uniform u: top-p, then min-p keep a
// prefix, a categorical at the temperature over it picks the first i whose
// running sum passes u·Σp (the last kept one otherwise); −1 when the row's
// log-sum-exp is not finite or it has no candidate.
func sampleTop(a *args) {
	K := a.intArg("K")
	temperature, topP, minP, u := a.floatArg("temperature"), a.floatArg("top_p"), a.floatArg("min_p"), a.floatArg("u")
	ids := a.i32s("ids", K)   // (K)
	vals := a.f32s("vals", K) // (K)
	z := a.f32s("lse", 1)[0]
	out := a.i32s("out", 1)
	n := 0
	for n < K && ids[n] >= 0 {
		n++
	}
	if z-z != 0 || n == 0 { // NaN or ±∞
		out[0] = -1
		return
	}
	keep := n
	if topP > 0 && topP < 1 {
		var cum float32
		for i := range keep {
			cum += expf(vals[i] - z)
			if cum >= topP {
				keep = i + 1
				break
			}
		}
	}
	if minP > 0 {
		limit := (vals[0] - z) + float32(math.Log(float64(minP)))
		m := 1
		for m < keep && vals[m]-z >= limit {
			m++
		}
		keep = m
	}
	inv := 1 / temperature
	best := float32(math.Inf(-1))
	for i := range keep {
		best = max(best, (vals[i]-z)*inv)
	}
	var total float32
	for i := range keep {
		total += expf((vals[i]-z)*inv - best)
	}
	left, pick := u*total, keep-1
	for i := range keep {
		left -= expf((vals[i]-z)*inv - best)
		if left < 0 {
			pick = i
			break
		}
	}
	out[0] = ids[pick]
}
