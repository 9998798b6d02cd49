package cpu

import (
	"cmp"
	"math"
	"slices"
)

// argmax_f32: per row, the index of the largest value, the lowest index among
// equals; NaNs are passed over; a row with nothing above −∞ gives 0.
func argmaxF32(a *args) {
	R, N := a.intArg("R"), a.intArg("N")
	x := a.f32s("x", R*N)   // (R, N)
	out := a.i32s("out", R) // (R)
	for r := range R {
		row := x[r*N : (r+1)*N]
		best := -1
		for i, v := range row {
			if v > negInf && (best < 0 || v > row[best]) {
				best = i
			}
		}
		out[r] = int32(max(best, 0))
	}
}

var negInf = float32(math.Inf(-1))

// topk_f32: per row, the K largest values in descending order (ties: lower
// index first; NaNs passed over; padding id −1, value −∞ when a row has fewer
// than K numbers above −∞), and lse = log Σ exp over the row's numbers (computed
// in f64 and rounded: the GPU's f32 sum differs by rounding).
func topkF32(a *args) {
	R, N, K := a.intArg("R"), a.intArg("N"), a.intArg("K")
	x := a.f32s("x", R*N)       // (R, N)
	ids := a.i32s("ids", R*K)   // (R, K)
	vals := a.f32s("vals", R*K) // (R, K)
	lse := a.f32s("lse", R)     // (R)
	for r := range R {
		row := x[r*N : (r+1)*N]
		order := make([]int, 0, N)
		m := math.Inf(-1)
		for i, v := range row {
			if v > negInf {
				order = append(order, i)
				m = math.Max(m, float64(v))
			}
		}
		var sum float64
		for _, i := range order {
			sum += math.Exp(float64(row[i]) - m)
		}
		lse[r] = negInf
		if len(order) > 0 {
			lse[r] = float32(m + math.Log(sum))
		}
		slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(row[j], row[i]) })
		for k := range K {
			ids[r*K+k], vals[r*K+k] = -1, negInf
			if k < len(order) {
				ids[r*K+k], vals[r*K+k] = int32(order[k]), row[order[k]]
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
