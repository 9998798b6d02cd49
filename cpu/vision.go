package cpu

import (
	"math"

	"bagel/backend"
)

// The vision tower's kernels (kernels/vision.metal): dense bf16 linears with
// a bias and an activation, LayerNorm, the 2-D rotary with the q/k/v split,
// and attention with no mask.

// linear_bf16's act values (kernels/vision.metal LINEAR_ACT_*).
const (
	actNone     = 0
	actGELUTanh = 1
	actGELU     = 2
)

// linear_bf16: out[t,o] = bf16(act(bf16(Σ_j x[t,j]·w[o,j] + bias[o]))), f32 sums.
func linearBF16(a *args) {
	T, In, Out, act := a.intArg("T"), a.intArg("In"), a.intArg("Out"), a.intArg("act")
	a.check(act <= actGELU, "act", "%d, want 0 (none), 1 (GELU, tanh form) or 2 (GELU)", act)
	x := a.bf16s("x", T*In)      // (T, In)
	w := a.bf16s("w", Out*In)    // (Out, In)
	bias := a.bf16s("bias", Out) // (Out)
	out := a.bf16s("out", T*Out) // (T, Out)
	wf := widen(w)
	a.parallel(T, In*Out, func(lo, hi int) {
		xf := make([]float32, In)
		for t := lo; t < hi; t++ {
			for j := range In {
				xf[j] = f32(x[t*In+j])
			}
			for o := range Out {
				row := wf[o*In : (o+1)*In]
				var s float32
				for j, v := range xf {
					s += v * row[j]
				}
				v := backend.RoundBF16(s + f32(bias[o]))
				out[t*Out+o] = backend.F32ToBF16(activate(v, act))
			}
		}
	})
}

// activate is linear_bf16's activation of v.
func activate(v float32, act int) float32 {
	x := float64(v)
	switch act {
	case actGELUTanh:
		return float32(0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x))))
	case actGELU:
		return float32(0.5 * x * (1 + math.Erf(x/math.Sqrt2)))
	}
	return v
}

// layer_norm_bf16: per row, out = bf16((x − μ)·rsqrt(σ² + eps)·w + b), μ and
// the biased σ² in f32. out may alias x.
func layerNorm(a *args) {
	R, N, eps := a.intArg("R"), a.intArg("N"), a.floatArg("eps")
	x, w, b, out := a.bf16s("x", R*N), a.bf16s("w", N), a.bf16s("b", N), a.bf16s("out", R*N)
	for r := range R {
		xr, or := x[r*N:(r+1)*N], out[r*N:(r+1)*N]
		var s float32
		for _, v := range xr {
			s += f32(v)
		}
		mean := s / float32(N)
		var ss float32
		for _, v := range xr {
			d := f32(v) - mean
			ss += d * d
		}
		inv := rsqrtf(ss/float32(N) + eps)
		for i, v := range xr {
			or[i] = backend.F32ToBF16((f32(v)-mean)*inv*f32(w[i]) + f32(b[i]))
		}
	}
}

// vision_attn_prep_bf16: qkv (T, 3, H, D) into q (T, H, Dp), k and v (H, T, Dp),
// q and k rotated by the 2-D rotary: dim d < D/2 pairs with d + D/2 and turns
// by pos[t,0]·theta^(−2j/(D/2)) for j = d < D/4 (the patch's row) and
// pos[t,1]·theta^(−2j/(D/2)) for j = d − D/4 (its column), in f32; dims
// D..Dp−1 zeros.
func visionAttnPrep(a *args) {
	T, H, D, Dp, theta := a.intArg("T"), a.intArg("H"), a.intArg("D"), a.intArg("Dp"), a.floatArg("theta")
	a.check(D%4 == 0, "D", "%d, want a multiple of 4 (a quarter of the head turns with each axis)", D)
	qkv := a.bf16s("qkv", T*3*H*D) // (T, 3, H, D)
	pos := a.i32s("pos", 2*T)      // (T, 2): row, column
	q := a.bf16s("q", T*H*Dp)      // (T, H, Dp)
	k := a.bf16s("k", H*T*Dp)      // (H, T, Dp)
	v := a.bf16s("v", H*T*Dp)      // (H, T, Dp)
	half, quarter := D/2, D/4
	inv := make([]float32, quarter) // theta^(−2j/half)
	for j := range inv {
		inv[j] = float32(math.Pow(float64(theta), -float64(2*j)/float64(half)))
	}
	cos, sin := make([]float32, half), make([]float32, half)
	turn := func(src, dst []uint16) {
		for d := range half {
			x1, x2 := f32(src[d]), f32(src[d+half])
			dst[d] = backend.F32ToBF16(x1*cos[d] - x2*sin[d])
			dst[d+half] = backend.F32ToBF16(x2*cos[d] + x1*sin[d])
		}
		clear(dst[D:])
	}
	for t := range T {
		for d := range half {
			p, j := pos[2*t], d
			if d >= quarter {
				p, j = pos[2*t+1], d-quarter
			}
			angle := float32(p) * inv[j]
			cos[d], sin[d] = float32(math.Cos(float64(angle))), float32(math.Sin(float64(angle)))
		}
		for h := range H {
			row := qkv[t*3*H*D+h*D:]
			kv := (h*T + t) * Dp
			turn(row[:D], q[(t*H+h)*Dp:(t*H+h+1)*Dp])
			turn(row[H*D:H*D+D], k[kv:kv+Dp])
			copy(v[kv:kv+D], row[2*H*D:2*H*D+D])
			clear(v[kv+D : kv+Dp])
		}
	}
}

// attention_full_bf16: q (T, H, Dp), k and v (H, T, Dp), out (T, H, D): every
// query sees all T keys of its head; scores scale·q·k over the first D dims
// and the softmax in f32 (the padding's zeros would add nothing).
func attentionFull(a *args) {
	T, H, D, Dp, scale := a.intArg("T"), a.intArg("H"), a.intArg("D"), a.intArg("Dp"), a.floatArg("scale")
	q, k, v := a.bf16s("q", T*H*Dp), a.bf16s("k", H*T*Dp), a.bf16s("v", H*T*Dp)
	out := a.bf16s("out", T*H*D) // (T, H, D)
	kf, vf := widen(k), widen(v)
	a.parallel(T*H, 2*T*D, func(lo, hi int) {
		qf, scores, acc := make([]float32, D), make([]float32, T), make([]float32, D)
		for item := lo; item < hi; item++ {
			h := item % H
			for d := range D {
				qf[d] = f32(q[item*Dp+d])
			}
			top := float32(math.Inf(-1))
			for j := range T {
				key := kf[(h*T+j)*Dp : (h*T+j)*Dp+D]
				var s float32
				for d, x := range qf {
					s += x * key[d]
				}
				scores[j] = scale * s
				top = max(top, scores[j])
			}
			var sum float32
			clear(acc)
			for j := range T {
				p := expf(scores[j] - top)
				sum += p
				val := vf[(h*T+j)*Dp : (h*T+j)*Dp+D]
				for d := range D {
					acc[d] += p * val[d]
				}
			}
			for d := range D {
				out[item*D+d] = backend.F32ToBF16(acc[d] / sum)
			}
		}
	})
}
