package cpu

import (
	"math"

	"bagel/backend"
	"bagel/kernels"
)

// The chunked gated delta rule of kernels/gdn.metal (gdn_chunk_prep_f32,
// gdn_chunk_bf16): the same regrouping in Go, so that the CPU backend runs
// what the GPU runs and the kernel tests compare like with like. It equals the
// sequential rule (gdn_recurrence_bf16) up to f32 summation order
// (TestGDNChunkedIsTheSequentialRule).

var (
	gdnChunkLen = kernels.Defines()["GDN_CHUNK"]
	gdnPrepLen  = 2*gdnChunkLen*gdnChunkLen + gdnChunkLen // W, M, L
)

// GDNChunkPrep is gdn_chunk_prep_f32 for the host: for each chunk of
// gdnChunkLen tokens and v-head, [W | M | L] with W = (I + A)⁻¹,
// A[t, j] = β_t e^{L_t−L_j} (k_t·k_j) (j < t), M[t, j] = e^{L_t−L_j} (q_t·k_j)
// (j ≤ t), L the running sum of max(log g, −1e4). conv's q and k are
// normalised; conv is (T, 2·Hk·Dk + Hv·Dv), g and beta (T, Hv).
func GDNChunkPrep(conv []uint16, g, beta []float32, T, Hk, Hv, Dk, Dv int) []float32 {
	C := gdnChunkLen
	chunks := (T + C - 1) / C
	width := 2*Hk*Dk + Hv*Dv
	prep := make([]float32, chunks*Hv*gdnPrepLen)
	A := make([]float32, C*C)
	for c := range chunks {
		c0 := c * C
		n := min(C, T-c0)
		for h := range Hv {
			hk := h / (Hv / Hk)
			out := prep[(c*Hv+h)*gdnPrepLen:]
			W, M, L := out[:C*C], out[C*C:2*C*C], out[2*C*C:gdnPrepLen]
			var acc float32
			for t := range C {
				if t < n {
					acc += max(float32(math.Log(float64(g[(c0+t)*Hv+h]))), -1e4)
				}
				L[t] = acc
			}
			clear(A)
			for t := range n {
				qt := conv[(c0+t)*width+hk*Dk:]
				kt := conv[(c0+t)*width+(Hk+hk)*Dk:]
				for j := 0; j <= t; j++ {
					kj := conv[(c0+j)*width+(Hk+hk)*Dk:]
					var kk, qk float32
					for d := range Dk {
						kk += f32(kt[d]) * f32(kj[d])
						qk += f32(qt[d]) * f32(kj[d])
					}
					ratio := float32(math.Exp(float64(L[t] - L[j])))
					if j < t {
						A[t*C+j] = beta[(c0+t)*Hv+h] * ratio * kk
					}
					M[t*C+j] = ratio * qk
				}
			}
			for j := range C { // W column j by forward substitution
				for t := range C {
					w := float32(0)
					if t == j {
						w = 1
					}
					for i := j; i < t; i++ {
						w -= A[t*C+i] * W[i*C+j]
					}
					if t < j {
						w = 0
					}
					W[t*C+j] = w
				}
			}
		}
	}
	return prep
}

// gdn_chunk_prep_f32: see GDNChunkPrep.
func gdnChunkPrep(a *args) {
	T, Hk, Hv := a.intArg("T"), a.intArg("Hk"), a.intArg("Hv")
	Dk, Dv := a.intArg("Dk"), a.intArg("Dv")
	a.check(Hk > 0 && Hv%Hk == 0, "Hk", "%d does not divide Hv=%d", Hk, Hv)
	width := 2*Hk*Dk + Hv*Dv
	chunks := (T + gdnChunkLen - 1) / gdnChunkLen
	prep := GDNChunkPrep(a.bf16s("conv", T*width), a.f32s("g", T*Hv), a.f32s("beta", T*Hv), T, Hk, Hv, Dk, Dv)
	copy(a.f32s("prep", chunks*Hv*gdnPrepLen), prep)
}

// gdn_chunk_bf16: the rule chunk by chunk from the prep table: per chunk and
// v-head, rhs_t = β_t (v_t − γ_t S·k_t), δ = W·rhs, o_t = γ_t S·q_t + Σ_{j≤t}
// M[t, j] δ_j, then S ← γ_n S + Σ_j e^{L_n−L_j} δ_j k_jᵀ (γ_t = e^{L_t}).
func gdnChunked(a *args) {
	T, Hk, Hv := a.intArg("T"), a.intArg("Hk"), a.intArg("Hv")
	Dk, Dv := a.intArg("Dk"), a.intArg("Dv")
	a.check(Hk > 0 && Hv%Hk == 0, "Hk", "%d does not divide Hv=%d", Hk, Hv)
	C := gdnChunkLen
	chunks := (T + C - 1) / C
	width := 2*Hk*Dk + Hv*Dv
	conv := a.bf16s("conv", T*width)             // (T, 2·Hk·Dk + Hv·Dv)
	beta := a.f32s("beta", T*Hv)                 // (T, Hv)
	prep := a.f32s("prep", chunks*Hv*gdnPrepLen) // (chunks, Hv, 2C²+C)
	state := a.f32s("state", Hv*Dv*Dk)           // (Hv, Dv, Dk)
	out := a.bf16s("out", T*Hv*Dv)               // (T, Hv, Dv)
	a.parallel(Hv, T*Dv*Dk*4, func(lo, hi int) {
		rhs, delta, o0 := make([]float32, C*Dv), make([]float32, C*Dv), make([]float32, C*Dv)
		for h := lo; h < hi; h++ {
			S := state[h*Dv*Dk : (h+1)*Dv*Dk] // (Dv, Dk)
			hk := h / (Hv / Hk)
			for c := range chunks {
				c0 := c * C
				n := min(C, T-c0)
				pp := prep[(c*Hv+h)*gdnPrepLen:]
				W, M, L := pp[:C*C], pp[C*C:2*C*C], pp[2*C*C:gdnPrepLen]
				for t := range n {
					row := conv[(c0+t)*width:]
					q, k := row[hk*Dk:], row[(Hk+hk)*Dk:]
					gam := float32(math.Exp(float64(L[t])))
					for dv := range Dv {
						var pk, pq float32
						for d := range Dk {
							pk += S[dv*Dk+d] * f32(k[d])
							pq += S[dv*Dk+d] * f32(q[d])
						}
						rhs[t*Dv+dv] = beta[(c0+t)*Hv+h] * (f32(row[2*Hk*Dk+h*Dv+dv]) - gam*pk)
						o0[t*Dv+dv] = gam * pq
					}
				}
				for t := range n {
					for dv := range Dv {
						var d float32
						for j := 0; j <= t; j++ {
							d += W[t*C+j] * rhs[j*Dv+dv]
						}
						delta[t*Dv+dv] = d
					}
				}
				for t := range n {
					for dv := range Dv {
						o := o0[t*Dv+dv]
						for j := 0; j <= t; j++ {
							o += M[t*C+j] * delta[j*Dv+dv]
						}
						out[((c0+t)*Hv+h)*Dv+dv] = backend.F32ToBF16(o)
					}
				}
				last := L[n-1]
				decay := float32(math.Exp(float64(last)))
				for i := range S {
					S[i] *= decay
				}
				for j := range n {
					kj := conv[(c0+j)*width+(Hk+hk)*Dk:]
					w := float32(math.Exp(float64(last - L[j])))
					for dv := range Dv {
						wj := w * delta[j*Dv+dv]
						for d := range Dk {
							S[dv*Dk+d] += wj * f32(kj[d])
						}
					}
				}
			}
		}
	})
}
