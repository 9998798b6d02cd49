package reference

import (
	"math"
	"sort"
)

// gatedDeltaNet is the linear-attention mixer (mlx-lm qwen3_5 GatedDeltaNet)
// over x [T][hidden] (normed), updating the layer's conv window and states.
func (f *fwd) gatedDeltaNet(p string, x [][]float64, st *layerState) ([][]float64, error) {
	c := f.m.cfg
	keyDim, valueDim := c.Hk*c.Dk, c.Hv*c.Dv
	convDim := 2*keyDim + valueDim
	qkv, err := f.project(p+"in_proj_qkv", x, convDim)
	if err != nil {
		return nil, err
	}
	z, err := f.project(p+"in_proj_z", x, valueDim)
	if err != nil {
		return nil, err
	}
	b, err := f.project(p+"in_proj_b", x, c.Hv)
	if err != nil {
		return nil, err
	}
	a, err := f.project(p+"in_proj_a", x, c.Hv)
	if err != nil {
		return nil, err
	}
	convW, err := f.m.w.vector(p+"conv1d.weight", convDim*c.ConvK) // [C, K, 1]: W[ch,k]
	if err != nil {
		return nil, err
	}
	aLog, err := f.m.w.vector(p+"A_log", c.Hv)
	if err != nil {
		return nil, err
	}
	dtBias, err := f.m.w.vector(p+"dt_bias", c.Hv)
	if err != nil {
		return nil, err
	}
	normW, err := f.m.w.vector(p+"norm.weight", c.Dv)
	if err != nil {
		return nil, err
	}
	r := c.Hv / c.Hk
	out := make([][]float64, len(x))
	for t := range x {
		// The depthwise causal conv over the window and this token's raw
		// projection (W[ch,K−1] multiplies the current token), then SiLU.
		window := append(append([][]float64(nil), st.conv...), qkv[t])
		conv := make([]float64, convDim)
		for ch := range conv {
			s := 0.0
			for k := range c.ConvK {
				s += window[k][ch] * convW[ch*c.ConvK+k]
			}
			conv[ch] = f.silu(f.rnd(s))
		}
		st.conv = window[1:]
		q, k, v := conv[:keyDim], conv[keyDim:2*keyDim], conv[2*keyDim:]
		// normalize_qk: q = Dk⁻¹·rms_norm(q), k = Dk^-½·rms_norm(k), per k-head.
		qn, kn := make([]float64, keyDim), make([]float64, keyDim)
		invScale := 1 / math.Sqrt(float64(c.Dk))
		for h := range c.Hk {
			qh := f.rmsNorm(q[h*c.Dk:(h+1)*c.Dk], nil, 1e-6)
			kh := f.rmsNorm(k[h*c.Dk:(h+1)*c.Dk], nil, 1e-6)
			for i := range c.Dk {
				qn[h*c.Dk+i] = f.rnd(qh[i] * invScale * invScale)
				kn[h*c.Dk+i] = f.rnd(kh[i] * invScale)
			}
		}
		y := make([]float64, valueDim)
		for h := range c.Hv {
			beta := f.rnd(sigmoid(b[t][h]))
			// g = exp(−exp(A_log)·softplus(a + dt_bias)): the decay itself, in f32 in MLX.
			g := math.Exp(-math.Exp(aLog[h]) * f.rnd(softplus(f.rnd(a[t][h]+dtBias[h]))))
			hk := h / r // repeat-interleave: v-head h reads k-head h/r
			kh, qh := kn[hk*c.Dk:(hk+1)*c.Dk], qn[hk*c.Dk:(hk+1)*c.Dk]
			S := st.rec[h] // [Dv][Dk]
			for dv := range c.Dv {
				row := S[dv*c.Dk : (dv+1)*c.Dk]
				u := 0.0
				for i := range row {
					row[i] *= g
					u += row[i] * kh[i]
				}
				delta := beta * (v[h*c.Dv+dv] - u)
				o := 0.0
				for i := range row {
					row[i] += delta * kh[i]
					o += row[i] * qh[i]
				}
				y[h*c.Dv+dv] = f.rnd(o)
			}
			// The gated norm: rms_norm(y_h, w) · silu(z_h), the product in f32.
			yn := f.rmsNorm(y[h*c.Dv:(h+1)*c.Dv], normW, c.Eps)
			for dv := range c.Dv {
				zv := z[t][h*c.Dv+dv]
				y[h*c.Dv+dv] = f.rnd(yn[dv] * zv * sigmoid(zv))
			}
		}
		out[t] = y
	}
	return f.project(p+"out_proj", out, c.Hidden)
}

func softplus(v float64) float64 { return math.Max(v, 0) + math.Log1p(math.Exp(-math.Abs(v))) }

// attention is the gated full-attention mixer (mlx-lm Qwen3NextAttention):
// per head [query | gate] from q_proj, q and k normed per head, partial NeoX
// RoPE at positions pos0.., causal softmax over the cache and these tokens,
// the output gated by σ(gate).
func (f *fwd) attention(p string, x [][]float64, st *layerState, pos0 int) ([][]float64, error) {
	c := f.m.cfg
	D, Hq, Hkv := c.HeadDim, c.Heads, c.KVHeads
	qp, err := f.project(p+"q_proj", x, Hq*2*D)
	if err != nil {
		return nil, err
	}
	kp, err := f.project(p+"k_proj", x, Hkv*D)
	if err != nil {
		return nil, err
	}
	vp, err := f.project(p+"v_proj", x, Hkv*D)
	if err != nil {
		return nil, err
	}
	qNorm, err := f.m.w.vector(p+"q_norm.weight", D)
	if err != nil {
		return nil, err
	}
	kNorm, err := f.m.w.vector(p+"k_norm.weight", D)
	if err != nil {
		return nil, err
	}
	rot := int(float64(D) * c.Partial)
	queries := make([][][]float64, len(x)) // [T][Hq][D]
	gates := make([][]float64, len(x))     // [T][Hq·D]
	for t := range x {
		pos := [3]int{pos0 + f.shift + t, pos0 + f.shift + t, pos0 + f.shift + t}
		if f.positions != nil {
			pos = f.positions[t]
		}
		queries[t] = make([][]float64, Hq)
		gates[t] = make([]float64, Hq*D)
		for h := range Hq {
			queries[t][h] = f.rope(f.rmsNorm(qp[t][h*2*D:h*2*D+D], qNorm, c.Eps), rot, pos)
			copy(gates[t][h*D:], qp[t][h*2*D+D:(h+1)*2*D])
		}
		key := make([]float64, 0, Hkv*D)
		for h := range Hkv {
			key = append(key, f.rope(f.rmsNorm(kp[t][h*D:(h+1)*D], kNorm, c.Eps), rot, pos)...)
		}
		st.keys = append(st.keys, key)
		st.values = append(st.values, vp[t])
	}
	scale := 1 / math.Sqrt(float64(D))
	group := Hq / Hkv
	out := make([][]float64, len(x))
	for t := range x {
		seen := pos0 + t + 1 // keys 0..pos0+t
		o := make([]float64, Hq*D)
		for h := range Hq {
			kv := h / group
			scores := make([]float64, seen)
			m := math.Inf(-1)
			for j := range seen {
				s := 0.0
				kr := st.keys[j][kv*D : (kv+1)*D]
				for i, qv := range queries[t][h] {
					s += qv * kr[i]
				}
				scores[j] = s * scale
				m = math.Max(m, scores[j])
			}
			sum := 0.0
			for j := range scores {
				scores[j] = math.Exp(scores[j] - m)
				sum += scores[j]
			}
			for i := range D {
				acc := 0.0
				for j := range seen {
					acc += scores[j] * st.values[j][kv*D+i]
				}
				// the output, then gated: o·σ(gate), σ(gate) stored first
				g := gates[t][h*D+i]
				o[h*D+i] = f.rnd(f.rnd(acc/sum) * f.rnd(sigmoid(g)))
			}
		}
		out[t] = o
	}
	return f.project(p+"o_proj", out, c.Hidden)
}

// rope rotates the first rot dims of x at position pos (NeoX halves: x_i with
// x_{i+rot/2}, angle pos·θ^(−2i/rot)); the rest pass unchanged. With
// multimodal positions pos = (time, row, column), frequency i takes the row
// where i % 3 == 1 and i < 3·sections[1], the column where i % 3 == 2 and
// i < 3·sections[2], the time otherwise (text: all three alike).
func (f *fwd) rope(x []float64, rot int, pos [3]int) []float64 {
	half := rot / 2
	out := append([]float64(nil), x...)
	sec := f.m.cfg.Sections
	for i := range half {
		p := pos[0]
		if i%3 == 1 && i < 3*sec[1] {
			p = pos[1]
		} else if i%3 == 2 && i < 3*sec[2] {
			p = pos[2]
		}
		a := float64(p) * math.Pow(f.m.cfg.RopeTheta, -2*float64(i)/float64(rot))
		cos, sin := math.Cos(a), math.Sin(a)
		x1, x2 := x[i], x[i+half]
		out[i] = f.rnd(x1*cos - x2*sin)
		out[i+half] = f.rnd(x1*sin + x2*cos)
	}
	return out
}

// mlp is down(silu(gate(x)) ⊙ up(x)) with the module paths under p
// (p+"gate_proj", ...), inter wide.
func (f *fwd) mlp(p string, x [][]float64, inter int) ([][]float64, error) {
	g, err := f.project(p+"gate_proj", x, inter)
	if err != nil {
		return nil, err
	}
	u, err := f.project(p+"up_proj", x, inter)
	if err != nil {
		return nil, err
	}
	for t := range g {
		for i := range g[t] {
			g[t][i] = f.rnd(f.silu(g[t][i]) * u[t][i])
		}
	}
	return f.project(p+"down_proj", g, len(x[0]))
}

// sparseMoE is mlx-lm's Qwen3NextSparseMoeBlock: the router's softmax (f32,
// stored bf16), the top-k experts by that probability (ties: the lower index),
// their weights renormalised, each expert's SwiGLU MLP, the weighted sum, and
// the shared expert scaled by σ(shared_expert_gate(x)).
func (f *fwd) sparseMoE(p string, x [][]float64) ([][]float64, error) {
	c := f.m.cfg
	H, I := c.Hidden, c.ExpertInter
	logits, err := f.project(p+"gate", x, c.Experts)
	if err != nil {
		return nil, err
	}
	prompt := f.r == MLXPrompt
	gw, err := f.m.w.linear(p+"switch_mlp.gate_proj", c.Experts, I, H, prompt)
	if err != nil {
		return nil, err
	}
	uw, err := f.m.w.linear(p+"switch_mlp.up_proj", c.Experts, I, H, prompt)
	if err != nil {
		return nil, err
	}
	dw, err := f.m.w.linear(p+"switch_mlp.down_proj", c.Experts, H, I, prompt)
	if err != nil {
		return nil, err
	}
	shared, err := f.mlp(p+"shared_expert.", x, c.SharedInter)
	if err != nil {
		return nil, err
	}
	sharedGate, err := f.project(p+"shared_expert_gate", x, 1)
	if err != nil {
		return nil, err
	}
	out := make([][]float64, len(x))
	for t := range x {
		probs := softmax(logits[t])
		f.round(probs)
		order := make([]int, len(probs))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(i, j int) bool { return probs[order[i]] > probs[order[j]] })
		top := order[:c.TopK]
		scores := make([]float64, len(top))
		sum := 0.0
		for s, e := range top {
			scores[s] = probs[e]
			sum += scores[s]
		}
		if c.NormTopK {
			sum = f.rnd(sum)
			for s := range scores {
				scores[s] = f.rnd(scores[s] / sum)
			}
		}
		y := make([]float64, H)
		for s, e := range top {
			g := matvec(x[t], gw, e*I, I)
			u := matvec(x[t], uw, e*I, I)
			h := make([]float64, I)
			for i := range h {
				h[i] = f.rnd(f.silu(f.rnd(g[i])) * f.rnd(u[i]))
			}
			ye := f.round(matvec(h, dw, e*H, H))
			for i := range y {
				y[i] += f.rnd(ye[i] * scores[s]) // (y·scores).sum(-2): products stored, summed in f32
			}
		}
		sg := f.rnd(sigmoid(sharedGate[t][0]))
		o := make([]float64, H)
		for i := range o {
			o[i] = f.rnd(f.rnd(y[i]) + f.rnd(sg*shared[t][i]))
		}
		out[t] = o
	}
	return out, nil
}

// softmax of a row, in float64.
func softmax(x []float64) []float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, v)
	}
	out := make([]float64, len(x))
	sum := 0.0
	for i, v := range x {
		out[i] = math.Exp(v - m)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}
