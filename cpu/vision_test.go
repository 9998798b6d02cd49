package cpu

import (
	"math"
	"testing"

	"bagel/backend"
)

// TestLinearBF16ByHand: two tokens through a 3×2 weight with a bias, each
// activation; the GELUs against their published values (gelu(1) =
// 0.841345, the tanh form 0.841192, gelu(−1) = −0.158655), rounded to bf16.
func TestLinearBF16ByHand(t *testing.T) {
	d := newTestDevice()
	x := bf16Buf(t, d, []float32{1, 2, -1, 0.5})
	w := bf16Buf(t, d, []float32{1, 0, 0, 1, 0.25, 0.25})
	bias := bf16Buf(t, d, []float32{0, -1, 0.25})
	// x·wᵀ + bias: token 0 [1, 1, 1], token 1 [−1, −0.5, 0.125]
	for _, c := range []struct {
		act  int
		want []float64
	}{
		{actNone, []float64{1, 1, 1, -1, -0.5, 0.125}},
		{actGELU, []float64{0.841345, 0.841345, 0.841345, -0.158655, -0.154269, 0.068717}},
		{actGELUTanh, []float64{0.841192, 0.841192, 0.841192, -0.158808, -0.154286, 0.068717}},
	} {
		out := poisonBuf(t, d, 6*2)
		dispatch(d, "linear_bf16", arg(x), arg(w), arg(bias), arg(out), backend.Int(2), backend.Int(2), backend.Int(3), backend.Int(c.act))
		got := readBF16(t, d, out, 6)
		for i, want := range c.want {
			if got[i] != backend.RoundBF16(float32(want)) {
				t.Fatalf("act %d: out = %v, want %v (rounded to bf16)", c.act, got, c.want)
			}
		}
	}
}

// TestLayerNormByHand: a row of mean 2.5 and variance 1.25 normalises to
// ±1.3416, ±0.4472, then w and b apply.
func TestLayerNormByHand(t *testing.T) {
	d := newTestDevice()
	x := bf16Buf(t, d, []float32{1, 2, 3, 4})
	w := bf16Buf(t, d, []float32{1, 1, 2, 2})
	b := bf16Buf(t, d, []float32{0, 0, 0, 1})
	out := poisonBuf(t, d, 8)
	dispatch(d, "layer_norm_bf16", arg(x), arg(w), arg(b), arg(out), backend.Int(1), backend.Int(4), backend.Float(0))
	s := 1 / math.Sqrt(1.25)
	want := []float64{-1.5 * s, -0.5 * s, 2 * 0.5 * s, 2*1.5*s + 1}
	got := readBF16(t, d, out, 4)
	for i := range want {
		if got[i] != backend.RoundBF16(float32(want[i])) {
			t.Fatalf("out = %v, want %v", got, want)
		}
	}
}

// TestVisionAttnPrepTurnsRowsAndColumns: one token, one head of 8 dims
// (quarters of 2): dims 0–1 turn with the row, 2–3 with the column, each
// with its partner four on; v is copied; k lands in the [H, T, D] layout.
func TestVisionAttnPrepTurnsRowsAndColumns(t *testing.T) {
	d := newTestDevice()
	const T, H, D, Dp = 2, 1, 8, 12
	vals := make([]float32, T*3*H*D)
	for i := range vals {
		vals[i] = float32(i%5) - 2
	}
	qkv := bf16Buf(t, d, vals)
	pos := i32Buf(t, d, []int32{3, 7, 0, 0})
	q, k, v := poisonBuf(t, d, 2*T*H*Dp), poisonBuf(t, d, 2*T*H*Dp), poisonBuf(t, d, 2*T*H*Dp)
	dispatch(d, "vision_attn_prep_bf16", arg(qkv), arg(pos), arg(q), arg(k), arg(v),
		backend.Int(T), backend.Int(H), backend.Int(D), backend.Int(Dp), backend.Float(10000))
	gq, gk, gv := readBF16(t, d, q, T*Dp), readBF16(t, d, k, T*Dp), readBF16(t, d, v, T*Dp)
	turn := func(x []float32, p []float64) []float64 {
		out := make([]float64, D)
		for j := range 4 {
			a := p[j/2] * math.Pow(10000, -float64(2*(j%2))/4)
			c, s := math.Cos(a), math.Sin(a)
			out[j] = float64(x[j])*c - float64(x[j+4])*s
			out[j+4] = float64(x[j+4])*c + float64(x[j])*s
		}
		return out
	}
	for tok := range T {
		p := []float64{3, 7}
		if tok == 1 {
			p = []float64{0, 0}
		}
		row := vals[tok*3*D:]
		wq, wk := turn(row[:D], p), turn(row[D:2*D], p)
		for i := range D {
			if !bf16Close(gq[tok*Dp+i], wq[i], 0) || !bf16Close(gk[tok*Dp+i], wk[i], 0) || gv[tok*Dp+i] != row[2*D+i] {
				t.Fatalf("token %d dim %d: q %v k %v v %v, want %v %v %v", tok, i, gq[tok*Dp+i], gk[tok*Dp+i], gv[tok*Dp+i], wq[i], wk[i], row[2*D+i])
			}
		}
		for i := D; i < Dp; i++ {
			if gq[tok*Dp+i] != 0 || gk[tok*Dp+i] != 0 || gv[tok*Dp+i] != 0 {
				t.Fatalf("token %d padding dim %d: q %v k %v v %v, want zeros", tok, i, gq[tok*Dp+i], gk[tok*Dp+i], gv[tok*Dp+i])
			}
		}
	}
}

// TestAttentionFullSeesEveryKey: the first query sees the last key (no causal
// mask): with one key far closer to it, the output is that key's value. The
// inputs' heads are padded to Dp = 6 with zeros, the output's are not.
func TestAttentionFullSeesEveryKey(t *testing.T) {
	d := newTestDevice()
	const T, H, D, Dp = 3, 1, 4, 6
	q := bf16Buf(t, d, []float32{10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	k := bf16Buf(t, d, []float32{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0})
	v := bf16Buf(t, d, []float32{1, 1, 1, 1, 0, 0, 2, 2, 2, 2, 0, 0, 3, 4, 5, 6, 0, 0})
	out := poisonBuf(t, d, 2*T*H*D)
	dispatch(d, "attention_full_bf16", arg(q), arg(k), arg(v), arg(out), backend.Int(T), backend.Int(H), backend.Int(D), backend.Int(Dp), backend.Float(1))
	got := readBF16(t, d, out, T*D)
	for i, want := range []float32{3, 4, 5, 6} {
		if got[i] != want {
			t.Fatalf("query 0 = %v, want the last key's value [3 4 5 6]", got[:4])
		}
	}
	// A query of zeros weighs the three values alike.
	for i, want := range []float64{2, 7.0 / 3, 8.0 / 3, 3} {
		if !bf16Close(got[D+i], want, 0) {
			t.Fatalf("query 1 = %v, want the mean of the values", got[D:2*D])
		}
	}
}
