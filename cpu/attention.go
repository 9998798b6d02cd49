package cpu

import (
	"math"

	"bagel/backend"
	"bagel/kernels"
)

// split_qgate_bf16: the gated q projection is laid out per head [q_h | gate_h];
// the first D values of each head go to q, the last D to gate.
func splitQGate(a *args) {
	T, H, D := a.intArg("T"), a.intArg("H"), a.intArg("D")
	src := a.bf16s("src", T*H*2*D) // (T, H, 2D)
	q := a.bf16s("q", T*H*D)       // (T, H, D)
	gate := a.bf16s("gate", T*H*D) // (T, H, D)
	for th := range T * H {
		copy(q[th*D:(th+1)*D], src[th*2*D:th*2*D+D])
		copy(gate[th*D:(th+1)*D], src[th*2*D+D:(th+1)*2*D])
	}
}

// rope_neox_bf16: in place, token t at position p = pos0+t, for i < h = rotDims/2:
// a = p·theta^(−2i/rotDims), (x_i, x_{i+h}) → (x_i cos a − x_{i+h} sin a,
// x_i sin a + x_{i+h} cos a). Dims ≥ rotDims are untouched.
//
// The angle is formed in f32 as MLX does (inverse frequency rounded to f32, then
// times the position in f32), so at long positions it carries the same f32
// error as the GPU kernels; cos and sin of that f32 angle are then exact.
func ropeNeox(a *args) {
	T, H, D := a.intArg("T"), a.intArg("H"), a.intArg("D")
	rotDims, pos0, theta := a.intArg("rotDims"), a.intArg("pos0"), a.floatArg("theta")
	a.check(rotDims%2 == 0 && rotDims <= D, "rotDims", "%d, want even and ≤ D=%d", rotDims, D)
	ropeInto(a.bf16s("x", T*H*D), T, H, D, rotDims, func(t, _ int) int { return pos0 + t }, theta)
}

// ropeInto is rope_neox_bf16 on x (T, H, D), in place, frequency i of token
// t at position pos(t, i).
func ropeInto(x []uint16, T, H, D, rotDims int, pos func(t, i int) int, theta float32) {
	half := rotDims / 2
	invFreq := make([]float32, half) // theta^(−2i/rotDims)
	for i := range half {
		invFreq[i] = float32(math.Pow(float64(theta), -float64(2*i)/float64(rotDims)))
	}
	cos, sin := make([]float32, half), make([]float32, half)
	for t := range T {
		for i := range half {
			angle := float32(pos(t, i)) * invFreq[i]
			cos[i] = float32(math.Cos(float64(angle)))
			sin[i] = float32(math.Sin(float64(angle)))
		}
		for h := range H {
			head := x[(t*H+h)*D : (t*H+h+1)*D]
			for i := range half {
				x1, x2 := f32(head[i]), f32(head[i+half])
				head[i] = backend.F32ToBF16(x1*cos[i] - x2*sin[i])
				head[i+half] = backend.F32ToBF16(x1*sin[i] + x2*cos[i])
			}
		}
	}
}

// attn_prep_bf16: split_qgate_bf16, rms_norm_bf16 of the q heads (q_norm) and
// of the k heads (k_norm), rope_neox_bf16 of both at position pos0 + shift +
// t and kv_append_bf16 of the normed, rotated k and of v at row pos0 + t, in
// one dispatch; k and v are read only.
func attnPrep(a *args) {
	p0 := a.intArg("pos0") + int(a.list[a.index("shift")].Int) // a shift may be negative
	attnPrepAt(a, func(t, _ int) int { return p0 + t })
}

// attn_prep_tree_bf16: attn_prep_bf16 over a draft tree, token t rotated at
// position pos[t] (its depth past pos0), its key and value still appended at
// pos0 + t.
func attnPrepTree(a *args) {
	pos := a.i32s("pos", a.intArg("T"))
	attnPrepAt(a, func(t, _ int) int { return int(pos[t]) })
}

// attn_prep_mrope_bf16: attn_prep_bf16 with Qwen3.5's interleaved multimodal
// RoPE: token t has positions pos[t] = (t, h, w), and frequency i turns by h
// where i % 3 == 1 and i < 3·sh, by w where i % 3 == 2 and i < 3·sw, by t
// otherwise; keys and values appended at pos0 + t.
func attnPrepMRoPE(a *args) {
	T, sh, sw := a.intArg("T"), a.intArg("sh"), a.intArg("sw")
	pos := a.i32s("pos", 3*T) // (T, 3)
	attnPrepAt(a, func(t, i int) int {
		switch {
		case i%3 == 1 && i < 3*sh:
			return int(pos[3*t+1])
		case i%3 == 2 && i < 3*sw:
			return int(pos[3*t+2])
		}
		return int(pos[3*t])
	})
}

// attnPrepAt is attn_prep_bf16 with frequency i of token t rotated at
// position rope(t, i).
func attnPrepAt(a *args, rope func(t, i int) int) {
	T, Hq, Hkv, D := a.intArg("T"), a.intArg("Hq"), a.intArg("Hkv"), a.intArg("D")
	rotDims, pos0, Cap := a.intArg("rotDims"), a.intArg("pos0"), a.intArg("Cap")
	a.check(rotDims%2 == 0 && rotDims <= D, "rotDims", "%d, want even and ≤ D=%d", rotDims, D)
	a.check(pos0+T <= Cap, "pos0", "%d tokens at %d exceed Cap=%d", T, pos0, Cap)
	prep := attnPrepShape{T: T, Hq: Hq, Hkv: Hkv, D: D, rotDims: rotDims, Cap: Cap, theta: a.floatArg("theta"), eps: a.floatArg("eps")}
	prep.run(a.bf16s("qp", T*Hq*2*D), a.bf16s("k", T*Hkv*D), a.bf16s("v", T*Hkv*D), a.bf16s("q_norm", D), a.bf16s("k_norm", D),
		a.bf16s("q", T*Hq*D), a.bf16s("gate", T*Hq*D), a.bf16s("kcache", Hkv*Cap*D), a.bf16s("vcache", Hkv*Cap*D), pos0, rope)
}

// attnPrepShape is the geometry of an attention preamble.
type attnPrepShape struct {
	T, Hq, Hkv, D, rotDims, Cap int
	theta, eps                  float32
}

// run is attn_prep_bf16 on slices: qp (T, Hq, 2D), k and v (T, Hkv, D),
// the norms (D), q and gate (T, Hq, D) out, the caches (Hkv, Cap, D) written
// at rows pos0.., frequency i of token t rotated at position rope(t, i).
func (p attnPrepShape) run(qp, k, v, qNorm, kNorm, q, gate, kcache, vcache []uint16, pos0 int, rope func(t, i int) int) {
	T, Hq, Hkv, D := p.T, p.Hq, p.Hkv, p.D
	for th := range T * Hq {
		copy(q[th*D:(th+1)*D], qp[th*2*D:th*2*D+D])
		copy(gate[th*D:(th+1)*D], qp[th*2*D+D:(th+1)*2*D])
	}
	normRowsInto(q, qNorm, q, T*Hq, D, p.eps)
	ropeInto(q, T, Hq, D, p.rotDims, rope, p.theta)
	kn := make([]uint16, len(k))
	normRowsInto(k, kNorm, kn, T*Hkv, D, p.eps)
	ropeInto(kn, T, Hkv, D, p.rotDims, rope, p.theta)
	for t := range T {
		for h := range Hkv {
			src, dst := (t*Hkv+h)*D, (h*p.Cap+pos0+t)*D
			copy(kcache[dst:dst+D], kn[src:src+D])
			copy(vcache[dst:dst+D], v[src:src+D])
		}
	}
}

// kv_append_bf16: kcache[h,pos0+t,:] = k[t,h,:], vcache likewise.
func kvAppend(a *args) {
	T, Hkv, D := a.intArg("T"), a.intArg("Hkv"), a.intArg("D")
	Cap, pos0 := a.intArg("Cap"), a.intArg("pos0")
	a.check(pos0+T <= Cap, "pos0", "%d tokens at %d exceed Cap=%d", T, pos0, Cap)
	k := a.bf16s("k", T*Hkv*D)             // (T, Hkv, D)
	v := a.bf16s("v", T*Hkv*D)             // (T, Hkv, D)
	kcache := a.bf16s("kcache", Hkv*Cap*D) // (Hkv, Cap, D)
	vcache := a.bf16s("vcache", Hkv*Cap*D) // (Hkv, Cap, D)
	for t := range T {
		for h := range Hkv {
			src, dst := (t*Hkv+h)*D, (h*Cap+pos0+t)*D
			copy(kcache[dst:dst+D], k[src:src+D])
			copy(vcache[dst:dst+D], v[src:src+D])
		}
	}
}

// attention_bf16: causal attention over the first kvLen cached positions, whose
// last T are the queries' own. Query t is at position kvLen−T+t and sees keys
// 0..kvLen−T+t; q-head h reads kv-head h/(Hq/Hkv). Scores scale·q·k, softmax and
// Σ p·v all in f32; out rounded once.
func attention(a *args) {
	T, kvLen := a.intArg("T"), a.intArg("kvLen")
	attend(a, func(t, j int) bool { return j <= kvLen-T+t })
}

// attention_tree_bf16: attention_bf16 over a draft tree of T nodes, the last
// T of the kvLen keys: query t sees the keys before the tree and tree node j
// where bit j of mask[t] is set (its ancestors and itself).
func attentionTree(a *args) {
	T, kvLen := a.intArg("T"), a.intArg("kvLen")
	a.check(T <= 32, "T", "%d nodes, at most 32 (a u32 mask a node)", T)
	mask := a.i32s("mask", T)
	attend(a, func(t, j int) bool { return j < kvLen-T || uint32(mask[t])>>(j-(kvLen-T))&1 != 0 })
}

// attend is attention_bf16 with query t seeing key j where sees(t, j).
func attend(a *args, sees func(t, j int) bool) {
	T, Hq, Hkv, D := a.intArg("T"), a.intArg("Hq"), a.intArg("Hkv"), a.intArg("D")
	Cap, kvLen, scale := a.intArg("Cap"), a.intArg("kvLen"), a.floatArg("scale")
	a.check(Hkv > 0 && Hq%Hkv == 0, "Hkv", "%d does not divide Hq=%d", Hkv, Hq)
	a.check(T <= kvLen && kvLen <= Cap, "kvLen", "%d, want T=%d ≤ kvLen ≤ Cap=%d", kvLen, T, Cap)
	q := a.bf16s("q", T*Hq*D)              // (T, Hq, D)
	kcache := a.bf16s("kcache", Hkv*Cap*D) // (Hkv, Cap, D)
	vcache := a.bf16s("vcache", Hkv*Cap*D) // (Hkv, Cap, D)
	out := a.bf16s("out", T*Hq*D)          // (T, Hq, D)
	group := Hq / Hkv

	// One work item is one (token, q-head) pair.
	a.parallel(T*Hq, 2*kvLen*D, func(lo, hi int) {
		qf := make([]float32, D)         // this query, widened
		scores := make([]float32, kvLen) // scale·q·k, then softmax weights
		acc := make([]float32, D)        // Σ p·v
		for item := lo; item < hi; item++ {
			t, h := item/Hq, item%Hq
			kvh := h / group
			last := kvLen - T + t // the newest key this query sees
			for d := range D {
				qf[d] = f32(q[item*D+d])
			}
			maxScore := float32(math.Inf(-1))
			for j := 0; j <= last; j++ {
				if !sees(t, j) {
					continue
				}
				key := kcache[(kvh*Cap+j)*D : (kvh*Cap+j+1)*D]
				var s float32
				for d := range D {
					s += qf[d] * f32(key[d])
				}
				scores[j] = scale * s
				maxScore = max(maxScore, scores[j])
			}
			var sum float32
			for j := 0; j <= last; j++ {
				if !sees(t, j) {
					continue
				}
				scores[j] = expf(scores[j] - maxScore)
				sum += scores[j]
			}
			clear(acc)
			for j := 0; j <= last; j++ {
				if !sees(t, j) {
					continue
				}
				val := vcache[(kvh*Cap+j)*D : (kvh*Cap+j+1)*D]
				for d := range D {
					acc[d] += scores[j] * f32(val[d])
				}
			}
			for d := range D {
				out[item*D+d] = backend.F32ToBF16(acc[d] / sum)
			}
		}
	})
}

// attention_split_f32: the keys query (t, h) sees (n = kvLen−T+t+1 of them) cut
// into S ranges of c = ⌈n/S⌉; for range s, with m its largest score (−3e38 when
// empty): partial[t,h,s,:] = [Σ e^(score−m)·v (D values) | m | Σ e^(score−m)].
func attentionSplit(a *args) { splitPartials(a, false) }

// attention_split_mma_f32: as attention_split_f32, but each range whole
// blocks of the tiled kernel's FA_BK keys (c = ⌈⌈n/S⌉/FA_BK⌉·FA_BK): a query's
// ranges are its own, whatever the launch's other queries.
func attentionSplitMMA(a *args) { splitPartials(a, true) }

// faBK is the tiled split kernel's block of keys (kernels' FA_BK).
var faBK = kernels.Defines()["FA_BK"]

// splitPartials is attention_split_f32 (blocks false) and
// attention_split_mma_f32 (true).
func splitPartials(a *args, blocks bool) {
	T, Hq, Hkv, D := a.intArg("T"), a.intArg("Hq"), a.intArg("Hkv"), a.intArg("D")
	Cap, kvLen, S, scale := a.intArg("Cap"), a.intArg("kvLen"), a.intArg("S"), a.floatArg("scale")
	a.check(Hkv > 0 && Hq%Hkv == 0, "Hkv", "%d does not divide Hq=%d", Hkv, Hq)
	a.check(T <= kvLen && kvLen <= Cap, "kvLen", "%d, want T=%d ≤ kvLen ≤ Cap=%d", kvLen, T, Cap)
	a.check(S >= 1, "S", "%d splits", S)
	q := a.bf16s("q", T*Hq*D)                  // (T, Hq, D)
	kcache := a.bf16s("kcache", Hkv*Cap*D)     // (Hkv, Cap, D)
	vcache := a.bf16s("vcache", Hkv*Cap*D)     // (Hkv, Cap, D)
	partial := a.f32s("partial", T*Hq*S*(D+2)) // (T, Hq, S, D+2)
	const empty = -3.0e38
	a.parallel(T*Hq*S, 2*kvLen*D/S+1, func(lo, hi int) {
		qf := make([]float32, D)
		for work := lo; work < hi; work++ {
			item, s := work/S, work%S
			t, h := item/Hq, item%Hq
			kvh := h / (Hq / Hkv)
			n := kvLen - T + t + 1
			c := (n + S - 1) / S
			if blocks {
				c = (c + faBK - 1) / faBK * faBK
			}
			first, end := min(n, s*c), min(n, s*c+c)
			for d := range D {
				qf[d] = f32(q[item*D+d])
			}
			dst := partial[work*(D+2) : (work+1)*(D+2)]
			clear(dst)
			m := float32(empty)
			scores := make([]float32, max(0, end-first))
			for j := first; j < end; j++ {
				key := kcache[(kvh*Cap+j)*D : (kvh*Cap+j+1)*D]
				var sc float32
				for d := range D {
					sc += qf[d] * f32(key[d])
				}
				scores[j-first] = scale * sc
				m = max(m, scores[j-first])
			}
			var l float32
			for j := first; j < end; j++ {
				p := expf(scores[j-first] - m)
				l += p
				val := vcache[(kvh*Cap+j)*D : (kvh*Cap+j+1)*D]
				for d := range D {
					dst[d] += p * f32(val[d])
				}
			}
			dst[D], dst[D+1] = m, l
		}
	})
}

// attention_merge_bf16: out[t,h,:] = bf16(Σ_s o_s·e^(m_s−M) / Σ_s l_s·e^(m_s−M))
// over the S partials of attention_split_f32, M the largest m_s.
func attentionMerge(a *args) {
	T, Hq, D, S := a.intArg("T"), a.intArg("Hq"), a.intArg("D"), a.intArg("S")
	partial := a.f32s("partial", T*Hq*S*(D+2)) // (T, Hq, S, D+2)
	out := a.bf16s("out", T*Hq*D)              // (T, Hq, D)
	for item := range T * Hq {
		p := partial[item*S*(D+2) : (item+1)*S*(D+2)]
		mAll := float32(-3.0e38)
		for s := range S {
			mAll = max(mAll, p[s*(D+2)+D])
		}
		var lAll float32
		for s := range S {
			lAll += p[s*(D+2)+D+1] * expf(p[s*(D+2)+D]-mAll)
		}
		for d := range D {
			var acc float32
			for s := range S {
				acc += p[s*(D+2)+d] * expf(p[s*(D+2)+D]-mAll)
			}
			out[item*D+d] = backend.F32ToBF16(acc / lAll)
		}
	}
}
