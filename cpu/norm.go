package cpu

import "bagel/backend"

// rms_norm_bf16: per row, out = bf16(w · bf16(x·rsqrt(mean(x²)+eps))).
// The normalised row is rounded to bf16 before the weight multiply, as MLX's
// fast.rms_norm does. out may alias x: each row is read whole before it is written.
func rmsNorm(a *args) {
	R, N, eps := a.intArg("R"), a.intArg("N"), a.floatArg("eps")
	x := a.bf16s("x", R*N)     // (R, N)
	w := a.bf16s("w", N)       // (N)
	out := a.bf16s("out", R*N) // (R, N)
	for r := range R {
		xr, or := x[r*N:(r+1)*N], out[r*N:(r+1)*N]
		inv := rmsInv(xr, eps)
		for i := range N {
			xhat := backend.RoundBF16(f32(xr[i]) * inv)
			or[i] = backend.F32ToBF16(f32(w[i]) * xhat)
		}
	}
}

// rms_norm_gated_bf16: per row, y = bf16(w·bf16(x̂)) as in rms_norm, then
// out = bf16(y·silu(z)) in f32 (the GDN output norm gated by z).
func rmsNormGated(a *args) {
	R, N, eps := a.intArg("R"), a.intArg("N"), a.floatArg("eps")
	x := a.bf16s("x", R*N)     // (R, N)
	z := a.bf16s("z", R*N)     // (R, N)
	w := a.bf16s("w", N)       // (N)
	out := a.bf16s("out", R*N) // (R, N)
	for r := range R {
		xr, zr, or := x[r*N:(r+1)*N], z[r*N:(r+1)*N], out[r*N:(r+1)*N]
		inv := rmsInv(xr, eps)
		for i := range N {
			xhat := backend.RoundBF16(f32(xr[i]) * inv)
			y := backend.RoundBF16(f32(w[i]) * xhat)
			or[i] = backend.F32ToBF16(y * silu(f32(zr[i])))
		}
	}
}

// rmsInv is rsqrt(mean(x²)+eps) of a bf16 row, the sum of squares in f32.
func rmsInv(x []uint16, eps float32) float32 {
	var ss float32
	for _, h := range x {
		v := f32(h)
		ss += v * v
	}
	return rsqrtf(ss/float32(len(x)) + eps)
}
