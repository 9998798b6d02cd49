package cpu

import "bagel/backend"

// rms_norm_bf16: per row, out = bf16(w · bf16(x·rsqrt(mean(x²)+eps))).
// The normalised row is rounded to bf16 before the weight multiply, as MLX's
// fast.rms_norm does. out may alias x: each row is read whole before it is written.
func rmsNorm(a *args) {
	R, N, eps := a.intArg("R"), a.intArg("N"), a.floatArg("eps")
	normRowsInto(a.bf16s("x", R*N), a.bf16s("w", N), a.bf16s("out", R*N), R, N, eps)
}

// normRowsInto is rms_norm_bf16 on x, out (R, N) and w (N); out may be x.
func normRowsInto(x, w, out []uint16, R, N int, eps float32) {
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
	R, N := a.intArg("R"), a.intArg("N")
	normGatedInto(a.bf16s("x", R*N), a.bf16s("z", R*N), a.bf16s("w", N), a.bf16s("out", R*N), R, N, a.floatArg("eps"))
}

// normGatedInto is rms_norm_gated_bf16 on slices: x, z, out (R, N), w (N).
func normGatedInto(x, z, w, out []uint16, R, N int, eps float32) {
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

// add_rms_norm_bf16: per row, sum = bf16(a + b), then out = rms_norm(sum) as
// rms_norm_bf16 computes it from the rounded sum: the residual add and the next
// layer's input norm of the decode path in one pass, bit for bit the two
// kernels in sequence. sum may alias a (the residual stream updated in place).
// N is even (the GPU kernel takes element pairs).
func addRMSNorm(a *args) {
	R, N, eps := a.intArg("R"), a.intArg("N"), a.floatArg("eps")
	a.check(N%2 == 0, "N", "%d is odd", N)
	x := a.bf16s("a", R*N)     // (R, N) the residual stream
	y := a.bf16s("b", R*N)     // (R, N) what is added to it
	w := a.bf16s("w", N)       // (N)
	sum := a.bf16s("sum", R*N) // (R, N)
	out := a.bf16s("out", R*N) // (R, N)
	for r := range R {
		sr := sum[r*N : (r+1)*N]
		for i := range N {
			sr[i] = backend.F32ToBF16(f32(x[r*N+i]) + f32(y[r*N+i]))
		}
	}
	normRowsInto(sum, w, out, R, N, eps)
}
