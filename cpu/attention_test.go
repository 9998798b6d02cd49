package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"bagel/backend"
)

func TestSplitQGate(t *testing.T) {
	d := newTestDevice()
	const T, H, D = 2, 3, 4
	src := make([]float32, T*H*2*D)
	for i := range src {
		src[i] = float32(i)
	}
	q, gate := poisonBuf(t, d, 2*T*H*D), poisonBuf(t, d, 2*T*H*D)
	dispatch(d, "split_qgate_bf16", arg(bf16Buf(t, d, src)), arg(q), arg(gate), backend.Int(T), backend.Int(H), backend.Int(D))
	gq, gg := readBF16(t, d, q, T*H*D), readBF16(t, d, gate, T*H*D)
	for th := range T * H {
		for i := range D {
			if want := float32(th*2*D + i); gq[th*D+i] != want {
				t.Fatalf("q[%d,%d] = %v, want %v", th, i, gq[th*D+i], want)
			}
			if want := float32(th*2*D + D + i); gg[th*D+i] != want {
				t.Fatalf("gate[%d,%d] = %v, want %v", th, i, gg[th*D+i], want)
			}
		}
	}
}

func TestRoPE(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	d := newTestDevice()
	const T, H, D, rotDims, half = 3, 2, 16, 8, 4
	const theta = 10000
	x := randBF16(rng, T*H*D, 1)
	for _, pos0 := range []int{0, 1000} {
		buf := bf16Buf(t, d, x)
		dispatch(d, "rope_neox_bf16", arg(buf), backend.Int(T), backend.Int(H), backend.Int(D),
			backend.Int(rotDims), backend.Int(pos0), backend.Float(theta))
		got := readBF16(t, d, buf, T*H*D)
		for tok := range T {
			p := float64(pos0 + tok)
			for h := range H {
				base := (tok*H + h) * D
				for i := rotDims; i < D; i++ {
					if got[base+i] != x[base+i] {
						t.Fatalf("pos0=%d: dim %d ≥ rotDims changed: %v → %v", pos0, i, x[base+i], got[base+i])
					}
				}
				for i := range half {
					x1, x2 := float64(x[base+i]), float64(x[base+i+half])
					g1, g2 := float64(got[base+i]), float64(got[base+i+half])
					if p == 0 && (g1 != x1 || g2 != x2) {
						t.Fatalf("position 0 is not the identity: (%v, %v) → (%v, %v)", x1, x2, g1, g2)
					}
					n0, n1 := math.Hypot(x1, x2), math.Hypot(g1, g2)
					if math.Abs(n1-n0) > n0/128 {
						t.Fatalf("pos %v pair %d: norm %v → %v", p, i, n0, n1)
					}
					a := p * math.Pow(theta, -2*float64(i)/rotDims)
					w1 := x1*math.Cos(a) - x2*math.Sin(a)
					w2 := x1*math.Sin(a) + x2*math.Cos(a)
					// The f32 angle is off by up to p·2^−24 rad; bf16 rounds each output.
					tol := n0 * (1.0/128 + p*1e-7)
					if math.Abs(g1-w1) > tol || math.Abs(g2-w2) > tol {
						t.Fatalf("pos %v pair %d: (%v, %v), want (%v, %v)", p, i, g1, g2, w1, w2)
					}
				}
			}
		}
	}
	mustPanic(t, func() {
		dispatch(d, "rope_neox_bf16", arg(bf16Buf(t, d, x)), backend.Int(T), backend.Int(H), backend.Int(D),
			backend.Int(D+2), backend.Int(0), backend.Float(theta))
	}, "rope_neox_bf16", "rotDims")
}

func TestKVAppend(t *testing.T) {
	d := newTestDevice()
	const T, Hkv, D, Cap, pos0 = 2, 2, 3, 5, 2
	k, v := make([]float32, T*Hkv*D), make([]float32, T*Hkv*D)
	for i := range k {
		k[i], v[i] = float32(i+1), float32(-i-1)
	}
	kc, vc := bf16Buf(t, d, make([]float32, Hkv*Cap*D)), bf16Buf(t, d, make([]float32, Hkv*Cap*D))
	dispatch(d, "kv_append_bf16", arg(bf16Buf(t, d, k)), arg(bf16Buf(t, d, v)), arg(kc), arg(vc),
		backend.Int(T), backend.Int(Hkv), backend.Int(D), backend.Int(Cap), backend.Int(pos0))
	gk, gv := readBF16(t, d, kc, Hkv*Cap*D), readBF16(t, d, vc, Hkv*Cap*D)
	for h := range Hkv {
		for p := range Cap {
			for i := range D {
				var wk, wv float32 // untouched positions stay zero
				if tok := p - pos0; tok >= 0 && tok < T {
					wk, wv = k[(tok*Hkv+h)*D+i], v[(tok*Hkv+h)*D+i]
				}
				if c := (h*Cap+p)*D + i; gk[c] != wk || gv[c] != wv {
					t.Fatalf("cache[%d,%d,%d] = (%v, %v), want (%v, %v)", h, p, i, gk[c], gv[c], wk, wv)
				}
			}
		}
	}
	mustPanic(t, func() {
		dispatch(d, "kv_append_bf16", arg(bf16Buf(t, d, k)), arg(bf16Buf(t, d, v)), arg(kc), arg(vc),
			backend.Int(T), backend.Int(Hkv), backend.Int(D), backend.Int(Cap), backend.Int(Cap-1))
	}, "kv_append_bf16", "pos0")
}

// attnCase is a filled KV cache and queries for attention_bf16.
type attnCase struct {
	T, Hq, Hkv, D, Cap, kvLen int
	scale                     float32
	q, k, v                   []float32 // q (T, Hq, D); k, v (Hkv, Cap, D)
}

func (c attnCase) run(t *testing.T, d *Device) []float32 {
	out := poisonBuf(t, d, 2*c.T*c.Hq*c.D)
	dispatch(d, "attention_bf16", arg(bf16Buf(t, d, c.q)), arg(bf16Buf(t, d, c.k)), arg(bf16Buf(t, d, c.v)), arg(out),
		backend.Int(c.T), backend.Int(c.Hq), backend.Int(c.Hkv), backend.Int(c.D), backend.Int(c.Cap), backend.Int(c.kvLen), backend.Float(c.scale))
	return readBF16(t, d, out, c.T*c.Hq*c.D)
}

// reference is causal GQA attention in float64, q-head h on kv-head h/(Hq/Hkv).
func (c attnCase) reference() []float64 {
	out := make([]float64, c.T*c.Hq*c.D)
	for tok := range c.T {
		last := c.kvLen - c.T + tok
		for h := range c.Hq {
			kvh := h / (c.Hq / c.Hkv)
			q := c.q[(tok*c.Hq+h)*c.D:]
			scores := make([]float64, last+1)
			m := math.Inf(-1)
			for j := range scores {
				var s float64
				for i := range c.D {
					s += float64(q[i]) * float64(c.k[(kvh*c.Cap+j)*c.D+i])
				}
				scores[j] = float64(c.scale) * s
				m = max(m, scores[j])
			}
			var sum float64
			for j := range scores {
				scores[j] = math.Exp(scores[j] - m)
				sum += scores[j]
			}
			for i := range c.D {
				var acc float64
				for j := range scores {
					acc += scores[j] * float64(c.v[(kvh*c.Cap+j)*c.D+i])
				}
				out[(tok*c.Hq+h)*c.D+i] = acc / sum
			}
		}
	}
	return out
}

func newAttnCase(rng *rand.Rand, T, Hq, Hkv, D, Cap, kvLen int) attnCase {
	return attnCase{T: T, Hq: Hq, Hkv: Hkv, D: D, Cap: Cap, kvLen: kvLen, scale: float32(1 / math.Sqrt(float64(D))),
		q: randBF16(rng, T*Hq*D, 1), k: randBF16(rng, Hkv*Cap*D, 1), v: randBF16(rng, Hkv*Cap*D, 1)}
}

func TestAttentionSingleKeyReturnsV(t *testing.T) {
	c := newAttnCase(rand.New(rand.NewPCG(15, 16)), 1, 2, 1, 8, 4, 1)
	got := c.run(t, newTestDevice())
	for h := range c.Hq {
		for i := range c.D {
			if got[h*c.D+i] != c.v[i] {
				t.Fatalf("head %d: out = %v, want v = %v", h, got[h*c.D:(h+1)*c.D], c.v[:c.D])
			}
		}
	}
}

// TestAttentionGQA checks a prefill chunk after two cached tokens against float64,
// with four q-heads on two kv-heads (h/2 and h%2 differ, so a wrong map fails).
func TestAttentionGQA(t *testing.T) {
	c := newAttnCase(rand.New(rand.NewPCG(17, 18)), 3, 4, 2, 8, 8, 5)
	got, want := c.run(t, newTestDevice()), c.reference()
	for i := range want {
		if !bf16Close(got[i], want[i], 1e-5) {
			t.Fatalf("out[%d,%d,%d] = %v, want %v", i/(c.Hq*c.D), i/c.D%c.Hq, i%c.D, got[i], want[i])
		}
	}
}

// TestAttentionCausal changes the newest key and value: only the last query,
// the one whose position it is, may see the change.
func TestAttentionCausal(t *testing.T) {
	d := newTestDevice()
	c := newAttnCase(rand.New(rand.NewPCG(19, 20)), 3, 2, 1, 8, 6, 5)
	before := c.run(t, d)
	last := c.kvLen - 1
	for i := range c.D {
		c.k[last*c.D+i] += 3
		c.v[last*c.D+i] -= 2
	}
	after := c.run(t, d)
	perToken := c.Hq * c.D
	for i := range before {
		tok := i / perToken
		if tok < c.T-1 && after[i] != before[i] {
			t.Fatalf("query %d saw a later key: out[%d] %v → %v", tok, i, before[i], after[i])
		}
	}
	changed := false
	for i := (c.T - 1) * perToken; i < c.T*perToken; i++ {
		changed = changed || after[i] != before[i]
	}
	if !changed {
		t.Fatal("the last query did not see its own key")
	}
}
