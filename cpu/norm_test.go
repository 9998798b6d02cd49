package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"bagel/backend"
)

// TestRMSNormHandExample follows one row by hand, where the bf16 rounding of x̂
// before the weight multiply changes the result:
//
//	x = [1 1 1 2], w = 1.5, eps = 0: mean(x²) = 7/4, rsqrt = 0.75592893
//	x̂ = [0.75592893 … 1.5118579]  → bf16(x̂) = [0.7578125 … 1.515625] (97/128, 97/64)
//	w·bf16(x̂) = [1.13671875 … 2.2734375], halfway between bf16 neighbours → even:
//	out = [1.140625 … 2.28125]
//	(rounding once, bf16(w·x̂) = bf16(1.1338934) would give 1.1328125.)
//
// The second row is the first times 2 and normalises to the same values.
func TestRMSNormHandExample(t *testing.T) {
	d := newTestDevice()
	x := bf16Buf(t, d, []float32{1, 1, 1, 2, 2, 2, 2, 4})
	w := bf16Buf(t, d, []float32{1.5, 1.5, 1.5, 1.5})
	out := poisonBuf(t, d, 2*8)
	dispatch(d, "rms_norm_bf16", arg(x), arg(w), arg(out), backend.Int(2), backend.Int(4), backend.Float(0))
	want := []float32{1.140625, 1.140625, 1.140625, 2.28125, 1.140625, 1.140625, 1.140625, 2.28125}
	got := readBF16(t, d, out, 8)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("out = %v, want %v", got, want)
		}
	}

	// In place: out aliases x.
	dispatch(d, "rms_norm_bf16", arg(x), arg(w), arg(x), backend.Int(2), backend.Int(4), backend.Float(0))
	got = readBF16(t, d, x, 8)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("in place: x = %v, want %v", got, want)
		}
	}
}

// rmsNorm64 is x̂ and the step-by-step reference of one row, in float64 with the
// contract's bf16 roundings.
func rmsNorm64(x, w []float32, eps float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+eps)
	y := make([]float64, len(x))
	for i, v := range x {
		xhat := backend.RoundBF16(float32(float64(v) * inv))
		y[i] = float64(w[i]) * float64(xhat)
	}
	return y
}

func TestRMSNormRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	d := newTestDevice()
	const R, N, eps = 3, 96, 1e-6
	x, w := randBF16(rng, R*N, 2), randBF16(rng, N, 1)
	out := poisonBuf(t, d, 2*R*N)
	dispatch(d, "rms_norm_bf16", arg(bf16Buf(t, d, x)), arg(bf16Buf(t, d, w)), arg(out), backend.Int(R), backend.Int(N), backend.Float(eps))
	got := readBF16(t, d, out, R*N)
	for r := range R {
		want := rmsNorm64(x[r*N:(r+1)*N], w, eps)
		for i := range N {
			// x̂ may round to the other bf16 neighbour: two bf16 steps of slack.
			if g := got[r*N+i]; math.Abs(float64(g)-want[i]) > math.Abs(want[i])/64 {
				t.Fatalf("out[%d,%d] = %v, want %v", r, i, g, want[i])
			}
		}
	}
}

func TestRMSNormGated(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	d := newTestDevice()
	const R, N, eps = 4, 64, 1e-6
	x, z, w := randBF16(rng, R*N, 1), randBF16(rng, R*N, 2), randBF16(rng, N, 1)
	out := poisonBuf(t, d, 2*R*N)
	dispatch(d, "rms_norm_gated_bf16", arg(bf16Buf(t, d, x)), arg(bf16Buf(t, d, z)), arg(bf16Buf(t, d, w)), arg(out),
		backend.Int(R), backend.Int(N), backend.Float(eps))
	got := readBF16(t, d, out, R*N)
	for r := range R {
		y := rmsNorm64(x[r*N:(r+1)*N], w, eps)
		for i := range N {
			yb := float64(backend.RoundBF16(float32(y[i])))
			want := yb * silu64(float64(z[r*N+i]))
			if g := got[r*N+i]; math.Abs(float64(g)-want) > math.Abs(want)/64+1e-6 {
				t.Fatalf("out[%d,%d] = %v, want %v", r, i, g, want)
			}
		}
	}
}
