package cpu

import "math"

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
