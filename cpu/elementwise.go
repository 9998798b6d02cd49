package cpu

import (
	"math"

	"bagel/backend"
)

// sigmoid_mul_bf16: out = bf16(x·σ(gate)), f32 math.
func sigmoidMul(a *args) {
	N := a.intArg("N")
	x, gate, out := a.bf16s("x", N), a.bf16s("gate", N), a.bf16s("out", N) // (N) each
	for i := range N {
		out[i] = backend.F32ToBF16(f32(x[i]) * sigmoid(f32(gate[i])))
	}
}

// add_bf16: out = bf16(a + b); out may alias a.
func add(a *args) {
	N := a.intArg("N")
	x, y, out := a.bf16s("a", N), a.bf16s("b", N), a.bf16s("out", N) // (N) each
	for i := range N {
		out[i] = backend.F32ToBF16(f32(x[i]) + f32(y[i]))
	}
}

// swiglu_bf16: out = bf16(silu(gate)·up), f32 math.
func swiglu(a *args) {
	N := a.intArg("N")
	gate, up, out := a.bf16s("gate", N), a.bf16s("up", N), a.bf16s("out", N) // (N) each
	for i := range N {
		out[i] = backend.F32ToBF16(silu(f32(gate[i])) * f32(up[i]))
	}
}

// add_sigmoid_scaled_bf16: out[t,:] = bf16(x[t,:] + σ(gate[t])·y[t,:]), f32 math
// (the shared expert added to the routed experts under its scalar gate).
func addSigmoidScaled(a *args) {
	T, H := a.intArg("T"), a.intArg("H")
	x := a.bf16s("x", T*H)     // (T, H)
	y := a.bf16s("y", T*H)     // (T, H)
	gate := a.bf16s("gate", T) // (T)
	out := a.bf16s("out", T*H) // (T, H)
	for t := range T {
		g := sigmoid(f32(gate[t]))
		for i := t * H; i < (t+1)*H; i++ {
			out[i] = backend.F32ToBF16(f32(x[i]) + g*f32(y[i]))
		}
	}
}

// f32 widens a bf16 bit pattern.
func f32(h uint16) float32 { return backend.BF16ToF32(h) }

// widen is a bf16 slice as f32.
func widen(h []uint16) []float32 {
	out := make([]float32, len(h))
	for i, v := range h {
		out[i] = f32(v)
	}
	return out
}

// expf is e^x rounded to f32.
func expf(x float32) float32 { return float32(math.Exp(float64(x))) }

// rsqrtf is 1/√x rounded to f32.
func rsqrtf(x float32) float32 { return float32(1 / math.Sqrt(float64(x))) }

// sigmoid is 1/(1+e^−x) in f32; ±Inf inputs give 0 and 1.
func sigmoid(x float32) float32 { return float32(1 / (1 + math.Exp(-float64(x)))) }

// silu is x·σ(x) in f32.
func silu(x float32) float32 { return x * sigmoid(x) }

// softplus is log(1+e^x) in f32, computed as MLX's logaddexp(x, 0) is:
// max(x,0) + log1p(e^−|x|), which neither overflows nor loses small values.
func softplus(x float32) float32 {
	v := float64(x)
	return float32(math.Max(v, 0) + math.Log1p(math.Exp(-math.Abs(v))))
}

// copy_u32: dst = src, N words.
func copyU32(a *args) {
	N := a.intArg("N")
	copy(a.u32s("dst", N), a.u32s("src", N))
}

// fill_u32: dst = value, N words.
func fillU32(a *args) {
	N, v := a.intArg("N"), uint32(a.intArg("value"))
	dst := a.u32s("dst", N)
	for i := range dst {
		dst[i] = v
	}
}
