package cpu

import (
	"math/rand/v2"
	"testing"

	"bagel/backend"
)

func TestElementwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	const N = 50
	cases := []struct {
		kernel string
		f      func(x, y float64) float64
	}{
		{"sigmoid_mul_bf16", func(x, gate float64) float64 { return x * sigmoid64(gate) }},
		{"add_bf16", func(a, b float64) float64 { return a + b }},
		{"swiglu_bf16", func(gate, up float64) float64 { return silu64(gate) * up }},
	}
	for _, c := range cases {
		t.Run(c.kernel, func(t *testing.T) {
			d := newTestDevice()
			x, y := randBF16(rng, N, 3), randBF16(rng, N, 3)
			out := poisonBuf(t, d, 2*N)
			dispatch(d, c.kernel, arg(bf16Buf(t, d, x)), arg(bf16Buf(t, d, y)), arg(out), backend.Int(N))
			got := readBF16(t, d, out, N)
			for i := range N {
				if want := c.f(float64(x[i]), float64(y[i])); !bf16Close(got[i], want, 1e-7) {
					t.Fatalf("out[%d] = %v, want %v (inputs %v, %v)", i, got[i], want, x[i], y[i])
				}
			}
		})
	}
}

func TestAddInPlace(t *testing.T) {
	d := newTestDevice()
	a := bf16Buf(t, d, []float32{1, 2, 3, 0.5})
	dispatch(d, "add_bf16", arg(a), arg(bf16Buf(t, d, []float32{10, 20, 30, 0.25})), arg(a), backend.Int(4))
	if got, want := readBF16(t, d, a, 4), []float32{11, 22, 33, 0.75}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Fatalf("a = %v, want %v", got, want)
	}
}

func TestAddSigmoidScaled(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	d := newTestDevice()
	const T, H = 3, 10
	x, y, gate := randBF16(rng, T*H, 1), randBF16(rng, T*H, 1), randBF16(rng, T, 2)
	out := poisonBuf(t, d, 2*T*H)
	dispatch(d, "add_sigmoid_scaled_bf16", arg(bf16Buf(t, d, x)), arg(bf16Buf(t, d, y)), arg(bf16Buf(t, d, gate)), arg(out),
		backend.Int(T), backend.Int(H))
	got := readBF16(t, d, out, T*H)
	for tok := range T {
		for i := range H {
			j := tok*H + i
			want := float64(x[j]) + sigmoid64(float64(gate[tok]))*float64(y[j])
			if !bf16Close(got[j], want, 1e-6) {
				t.Fatalf("out[%d,%d] = %v, want %v", tok, i, got[j], want)
			}
		}
	}
}
