package cpu

import "bagel/backend"

// conv1d_silu_bf16: depthwise causal convolution with a carried state.
// ci = concat(state, x) by rows (K−1+T, C); out[t,c] = bf16(silu(Σ_k ci[t+k,c]·w[c,k]))
// in f32, so w[c,K−1] multiplies the current token; afterwards state = the last
// K−1 rows of ci (raw inputs, not outputs).
func conv1dSilu(a *args) {
	T, C, K := a.intArg("T"), a.intArg("C"), a.intArg("K")
	a.check(K >= 1, "K", "%d, want ≥ 1", K)
	convInto(a.bf16s("x", T*C), a.bf16s("state", (K-1)*C), a.bf16s("w", C*K), a.bf16s("out", T*C), T, C, K)
}

// convInto is conv1d_silu_bf16 on slices: x (T, C), state (K−1, C) in/out,
// w (C, K), out (T, C).
func convInto(x, state, w, out []uint16, T, C, K int) {
	ci := make([]uint16, 0, (K-1+T)*C) // (K−1+T, C)
	ci = append(ci, state...)
	ci = append(ci, x...)
	for t := range T {
		for c := range C {
			var s float32
			for k := range K {
				s += f32(ci[(t+k)*C+c]) * f32(w[c*K+k])
			}
			out[t*C+c] = backend.F32ToBF16(silu(s))
		}
	}
	copy(state, ci[T*C:])
}

// gdn_gates_bf16: the Gated DeltaNet's per-token, per-v-head gates.
// beta = bf16(σ(b)); g = exp(−exp(aLog)·bf16(softplus(bf16(a+dtBias)))), the
// decay itself (not its log). Both are stored as f32.
func gdnGates(a *args) {
	T, Hv := a.intArg("T"), a.intArg("Hv")
	gatesInto(a.bf16s("a", T*Hv), a.bf16s("b", T*Hv), a.f32s("aLog", Hv), a.bf16s("dtBias", Hv),
		a.f32s("g", T*Hv), a.f32s("beta", T*Hv), T, Hv)
}

// gatesInto is gdn_gates_bf16 on slices: alpha, b (T, Hv), aLog, dtBias (Hv),
// g, beta (T, Hv).
func gatesInto(alpha, b []uint16, aLog []float32, dtBias []uint16, g, beta []float32, T, Hv int) {
	for t := range T {
		for h := range Hv {
			i := t*Hv + h
			beta[i] = backend.RoundBF16(sigmoid(f32(b[i])))
			sp := backend.RoundBF16(softplus(backend.RoundBF16(f32(alpha[i]) + f32(dtBias[h]))))
			g[i] = expf(-expf(aLog[h]) * sp)
		}
	}
}

// gdn_recurrence_bf16: the gated delta rule, sequential over tokens.
//
//	conv   bf16 (T, 2·Hk·Dk + Hv·Dv)  per token [q (Hk,Dk) | k (Hk,Dk) | v (Hv,Dv)]
//	a, b   bf16 (T, Hv)               gate logits: g and beta as gdn_gates_bf16
//	aLog   f32  (Hv)
//	dtBias bf16 (Hv)
//	state  f32  (Hv, Dv, Dk)          in/out, S[dv,dk] per v-head
//	out    bf16 (T, Hv, Dv)
//
// Per token and k-head, q and k are rms-normalised without weight (eps 1e-6)
// and scaled, with the bf16 roundings MLX makes:
// q = bf16(bf16(q̂)·(1/Dk)), k = bf16(bf16(k̂)·Dk^−½).
// Per v-head h reading k-head h/(Hv/Hk): S ← g·S; u = S·k; δ = beta·(v−u);
// S ← S + δ⊗k; out = bf16(S·q), all in f32.
func gdnRecurrence(a *args) { gdnSequential(a, a.intArg("normed") != 0) }

// gdnSequential is the gated delta rule token by token; normed: q and k in conv
// are already normalised.
func gdnSequential(a *args, normedQK bool) {
	T, Hk, Hv := a.intArg("T"), a.intArg("Hk"), a.intArg("Hv")
	Dk, Dv := a.intArg("Dk"), a.intArg("Dv")
	a.check(Hk > 0 && Hv%Hk == 0, "Hk", "%d does not divide Hv=%d", Hk, Hv)
	width := 2*Hk*Dk + Hv*Dv
	conv := a.bf16s("conv", T*width)   // (T, 2·Hk·Dk + Hv·Dv)
	state := a.f32s("state", Hv*Dv*Dk) // (Hv, Dv, Dk)
	out := a.bf16s("out", T*Hv*Dv)     // (T, Hv, Dv)
	g, beta := make([]float32, T*Hv), make([]float32, T*Hv)
	gatesInto(a.bf16s("a", T*Hv), a.bf16s("b", T*Hv), a.f32s("aLog", Hv), a.bf16s("dtBias", Hv), g, beta, T, Hv)
	gdnRun(a, conv, g, beta, state, out, T, Hk, Hv, Dk, Dv, normedQK)
}

// gdnRun is the gated delta rule on slices (shapes as gdn_recurrence_bf16).
func gdnRun(a *args, conv []uint16, g, beta, state []float32, out []uint16, T, Hk, Hv, Dk, Dv int, normedQK bool) {
	width := 2*Hk*Dk + Hv*Dv

	// Normalised q and k of every token and k-head, bf16 values held as f32;
	// with normed ≠ 0 conv holds them already (gdn_qk_norm_bf16).
	qn := make([]float32, T*Hk*Dk) // (T, Hk, Dk)
	kn := make([]float32, T*Hk*Dk) // (T, Hk, Dk)
	for t := range T {
		row := conv[t*width : (t+1)*width]
		for h := range Hk {
			q, k := row[h*Dk:(h+1)*Dk], row[(Hk+h)*Dk:(Hk+h+1)*Dk]
			if normedQK {
				copy(qn[(t*Hk+h)*Dk:], widen(q))
				copy(kn[(t*Hk+h)*Dk:], widen(k))
				continue
			}
			normScaled(q, qkScale(Dk, true), qn[(t*Hk+h)*Dk:])
			normScaled(k, qkScale(Dk, false), kn[(t*Hk+h)*Dk:])
		}
	}

	// The v-heads are independent: one work item is one head over all tokens.
	r := Hv / Hk
	a.parallel(Hv, T*Dv*Dk*4, func(lo, hi int) {
		for h := lo; h < hi; h++ {
			S := state[h*Dv*Dk : (h+1)*Dv*Dk] // (Dv, Dk)
			hk := h / r
			for t := range T {
				k := kn[(t*Hk+hk)*Dk : (t*Hk+hk+1)*Dk] // (Dk)
				q := qn[(t*Hk+hk)*Dk : (t*Hk+hk+1)*Dk] // (Dk)
				v := conv[t*width+2*Hk*Dk+h*Dv:]       // (Dv)
				gt, bt := g[t*Hv+h], beta[t*Hv+h]
				for dv := range Dv {
					Srow := S[dv*Dk : (dv+1)*Dk]
					var u float32 // (S·k)[dv] after the decay
					for dk := range Dk {
						Srow[dk] *= gt
						u += Srow[dk] * k[dk]
					}
					delta := bt * (f32(v[dv]) - u)
					var o float32 // (S·q)[dv] after the update
					for dk := range Dk {
						Srow[dk] += delta * k[dk]
						o += Srow[dk] * q[dk]
					}
					out[(t*Hv+h)*Dv+dv] = backend.F32ToBF16(o)
				}
			}
		}
	})
}

// qkScale is the factor after q's (1/Dk) or k's (Dk^−½) normalisation. The
// scales are f32, as kernels/README.md writes them. MLX multiplies by a Python
// float, which it casts to the array's dtype: bf16(Dk^−½) for Dk = 128 is
// 0.08837890625, not 0.0883883476, and can move k by one bf16 ulp.
func qkScale(dk int, q bool) float32 {
	if q {
		return 1 / float32(dk)
	}
	return rsqrtf(float32(dk))
}

// gdn_qk_norm_bf16: conv's q and k heads of every token normalised and scaled
// in place, bf16, as gdn_recurrence_bf16 normalises them.
func gdnQKNorm(a *args) {
	T, Hk, Hv := a.intArg("T"), a.intArg("Hk"), a.intArg("Hv")
	Dk, Dv := a.intArg("Dk"), a.intArg("Dv")
	width := 2*Hk*Dk + Hv*Dv
	conv := a.bf16s("conv", T*width) // (T, 2·Hk·Dk + Hv·Dv)
	out := make([]float32, Dk)
	for t := range T {
		for j := range 2 * Hk {
			head := conv[t*width+j*Dk : t*width+(j+1)*Dk]
			normScaled(head, qkScale(Dk, j < Hk), out)
			for i, v := range out {
				head[i] = backend.F32ToBF16(v)
			}
		}
	}
}

// normScaled writes bf16(bf16(x·rsqrt(mean(x²)+1e-6))·scale) of the bf16 row x
// into out[:len(x)], the values held as f32.
func normScaled(x []uint16, scale float32, out []float32) {
	inv := rmsInv(x, 1e-6)
	for i, h := range x {
		out[i] = backend.RoundBF16(backend.RoundBF16(f32(h)*inv) * scale)
	}
}
