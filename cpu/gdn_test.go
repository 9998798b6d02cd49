package cpu

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"bagel/backend"
)

func runConv(t *testing.T, d *Device, x []float32, state backend.Buffer, w []float32, T, C, K int) []float32 {
	out := poisonBuf(t, d, 2*T*C)
	dispatch(d, "conv1d_silu_bf16", arg(bf16Buf(t, d, x)), arg(state), arg(bf16Buf(t, d, w)), arg(out),
		backend.Int(T), backend.Int(C), backend.Int(K))
	return readBF16(t, d, out, T*C)
}

// TestConv1dSilu checks the formula, and that carrying the state across a call
// of 3 tokens and one of 2 (fewer than K−1) equals one call of all 5.
func TestConv1dSilu(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	d := newTestDevice()
	const C, K = 5, 4
	x := randBF16(rng, 5*C, 1)
	w := randBF16(rng, C*K, 0.5)
	state0 := randBF16(rng, (K-1)*C, 1)

	whole := bf16Buf(t, d, state0)
	outWhole := runConv(t, d, x, whole, w, 5, C, K)
	ci := append(slices.Clone(state0), x...) // (K−1+5, C)
	for tok := range 5 {
		for c := range C {
			var s float64
			for k := range K {
				s += float64(ci[(tok+k)*C+c]) * float64(w[c*K+k])
			}
			if g := outWhole[tok*C+c]; !bf16Close(g, silu64(s), 1e-6) {
				t.Fatalf("out[%d,%d] = %v, want %v", tok, c, g, silu64(s))
			}
		}
	}
	if got, want := readBF16(t, d, whole, (K-1)*C), ci[5*C:]; !slices.Equal(got, want) {
		t.Fatalf("state = %v, want the last K−1 input rows %v", got, want)
	}

	split := bf16Buf(t, d, state0)
	out := append(runConv(t, d, x[:3*C], split, w, 3, C, K), runConv(t, d, x[3*C:], split, w, 2, C, K)...)
	if !slices.Equal(out, outWhole) {
		t.Fatalf("3+2 tokens: %v\nwant 5 tokens: %v", out, outWhole)
	}
	if a, b := readBF16(t, d, split, (K-1)*C), readBF16(t, d, whole, (K-1)*C); !slices.Equal(a, b) {
		t.Fatalf("state after 3+2 tokens %v, after 5 %v", a, b)
	}
}

func TestGDNGates(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	d := newTestDevice()
	const T, Hv = 3, 4
	a, b := randBF16(rng, T*Hv, 2), randBF16(rng, T*Hv, 2)
	aLog := []float32{0, -1.5, 0.7, 2}
	dtBias := randBF16(rng, Hv, 1)
	a[0], dtBias[0] = 0, 0 // the hand case below
	g, beta := poisonBuf(t, d, 4*T*Hv), poisonBuf(t, d, 4*T*Hv)
	dispatch(d, "gdn_gates_bf16", arg(bf16Buf(t, d, a)), arg(bf16Buf(t, d, b)), arg(f32Buf(t, d, aLog)), arg(bf16Buf(t, d, dtBias)),
		arg(g), arg(beta), backend.Int(T), backend.Int(Hv))
	gotG, gotBeta := readF32(t, d, g, T*Hv), readF32(t, d, beta, T*Hv)

	// a+dtBias = 0, aLog = 0: softplus(0) = ln 2 rounds to bf16 0.69140625, so
	// g = e^−0.69140625 = 0.5008712, not 0.5.
	if math.Abs(float64(gotG[0])-0.5008712) > 1e-6 {
		t.Fatalf("g[0,0] = %v, want 0.5008712", gotG[0])
	}
	for tok := range T {
		for h := range Hv {
			i := tok*Hv + h
			wantBeta := backend.RoundBF16(float32(sigmoid64(float64(b[i]))))
			if math.Abs(float64(gotBeta[i]-wantBeta)) > float64(wantBeta)/256 || backend.RoundBF16(gotBeta[i]) != gotBeta[i] {
				t.Fatalf("beta[%d,%d] = %v, want bf16 %v", tok, h, gotBeta[i], wantBeta)
			}
			x := float64(backend.RoundBF16(a[i] + dtBias[h]))
			sp := float64(backend.RoundBF16(float32(math.Log1p(math.Exp(x)))))
			want := math.Exp(-math.Exp(float64(aLog[h])) * sp)
			// One bf16 step of sp either way: |Δ ln g| ≤ e^aLog·sp/128.
			if tol := want * math.Exp(float64(aLog[h])) * sp / 128; math.Abs(float64(gotG[i])-want) > tol+1e-7 {
				t.Fatalf("g[%d,%d] = %v, want %v", tok, h, gotG[i], want)
			}
		}
	}
}

// gdnCase is the input of gdn_recurrence_bf16.
type gdnCase struct {
	T, Hk, Hv, Dk, Dv int
	conv              []float32 // (T, 2·Hk·Dk + Hv·Dv)
	a, b              []float32 // (T, Hv) gate logits, bf16 values
	aLog, dtBias      []float32 // (Hv); dtBias bf16 values
	state             []float32 // (Hv, Dv, Dk)
}

func newGDNCase(rng *rand.Rand, T, Hk, Hv, Dk, Dv int) gdnCase {
	c := gdnCase{T: T, Hk: Hk, Hv: Hv, Dk: Dk, Dv: Dv, conv: randBF16(rng, T*(2*Hk*Dk+Hv*Dv), 1),
		a: randBF16(rng, T*Hv, 1), b: randBF16(rng, T*Hv, 2), dtBias: randBF16(rng, Hv, 0.5)}
	for range Hv {
		c.aLog = append(c.aLog, float32(-3+2*rng.Float64())) // decays g of about 0.6 to 0.98
	}
	for range Hv * Dv * Dk {
		c.state = append(c.state, float32(rng.NormFloat64()*0.1))
	}
	return c
}

// run runs tokens [t0, t1) on the state buffer and returns their outputs.
func (c gdnCase) run(t *testing.T, d *Device, state backend.Buffer, t0, t1 int) []float32 {
	width := 2*c.Hk*c.Dk + c.Hv*c.Dv
	n := t1 - t0
	out := poisonBuf(t, d, 2*n*c.Hv*c.Dv)
	dispatch(d, "gdn_recurrence_bf16", append([]backend.Arg{arg(bf16Buf(t, d, c.conv[t0*width:t1*width]))},
		append(c.gates(t, d, t0, t1), arg(state), arg(out),
			backend.Int(n), backend.Int(c.Hk), backend.Int(c.Hv), backend.Int(c.Dk), backend.Int(c.Dv), backend.Int(0))...)...)
	return readBF16(t, d, out, n*c.Hv*c.Dv)
}

// gates is the recurrence's gate arguments for tokens [t0, t1): a, b, aLog, dtBias.
func (c gdnCase) gates(t *testing.T, d *Device, t0, t1 int) []backend.Arg {
	return []backend.Arg{arg(bf16Buf(t, d, c.a[t0*c.Hv:t1*c.Hv])), arg(bf16Buf(t, d, c.b[t0*c.Hv:t1*c.Hv])),
		arg(f32Buf(t, d, c.aLog)), arg(bf16Buf(t, d, c.dtBias))}
}

// TestGDNQKNormThenRecurrenceIsTheSame: normalising q and k first
// (gdn_qk_norm_bf16) and running the recurrence with normed = 1 gives the bits
// of the recurrence that normalises them itself.
func TestGDNQKNormThenRecurrenceIsTheSame(t *testing.T) {
	d := newTestDevice()
	c := newGDNCase(rand.New(rand.NewPCG(51, 52)), 7, 2, 4, 40, 24)
	width := 2*c.Hk*c.Dk + c.Hv*c.Dv
	whole := c.run(t, d, f32Buf(t, d, c.state), 0, c.T)
	conv := bf16Buf(t, d, c.conv)
	dispatch(d, "gdn_qk_norm_bf16", arg(conv), backend.Int(c.T), backend.Int(c.Hk), backend.Int(c.Hv), backend.Int(c.Dk), backend.Int(c.Dv))
	if got := readBF16(t, d, conv, c.T*width); !slices.Equal(got[2*c.Hk*c.Dk:width], c.conv[2*c.Hk*c.Dk:width]) {
		t.Fatal("gdn_qk_norm_bf16 changed v")
	}
	out := poisonBuf(t, d, 2*c.T*c.Hv*c.Dv)
	dispatch(d, "gdn_recurrence_bf16", append([]backend.Arg{arg(conv)}, append(c.gates(t, d, 0, c.T), arg(f32Buf(t, d, c.state)), arg(out),
		backend.Int(c.T), backend.Int(c.Hk), backend.Int(c.Hv), backend.Int(c.Dk), backend.Int(c.Dv), backend.Int(1))...)...)
	got := readBF16(t, d, out, c.T*c.Hv*c.Dv)
	for i := range got {
		if got[i] != whole[i] {
			t.Fatalf("out[%d] = %v after the separate norm, %v without", i, got[i], whole[i])
		}
	}
}
