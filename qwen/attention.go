package qwen

import (
	"math"

	"bagel/ops"
)

// Split-KV attention serves decode (and the few queries of a speculative
// verify) once the context is long enough that one threadgroup per head would
// idle the GPU; below splitKVMinContext keys, and for prefill, the one-kernel
// attention keeps prefill and decode bit-identical.
const (
	splitKVMaxQueries = 16
	splitKVMinContext = 1024
)

// attention is a gated full-attention layer (MLX_QWEN35.md §3, "Gated full attention").
type attention struct {
	qProj, kProj, vProj, oProj ops.QLinear // q_proj out = heads·2·headDim, per head [q | gate]
	qNorm, kNorm               ops.Tensor  // bf16 [headDim]
	paths                      paths
}

func (a *attention) weights(cfg *Config) []weight {
	h, hd := cfg.HiddenSize, cfg.HeadDim
	return []weight{
		linear(&a.qProj, "self_attn.q_proj", cfg.NumHeads*hd*2, h),
		linear(&a.kProj, "self_attn.k_proj", cfg.NumKVHeads*hd, h),
		linear(&a.vProj, "self_attn.v_proj", cfg.NumKVHeads*hd, h),
		linear(&a.oProj, "self_attn.o_proj", h, cfg.NumHeads*hd),
		norm(&a.qNorm, "self_attn.q_norm.weight", hd),
		norm(&a.kNorm, "self_attn.k_norm.weight", hd),
	}
}

// forward: x bf16 [T, hidden] (normed) at positions pos0.. → out bf16 [T, hidden];
// appends the keys and values to kv.
func (a *attention) forward(c *ops.Ctx, cfg *Config, kv *layerCache, pos0 int, x, out ops.Tensor) {
	t, hq, hkv, d := x.Shape[0], cfg.NumHeads, cfg.NumKVHeads, cfg.HeadDim
	s := c.Scratch
	qp := s.Get(ops.BF16, t, hq, 2*d)
	k, v := s.Get(ops.BF16, t, hkv, d), s.Get(ops.BF16, t, hkv, d)
	a.paths.project(c, x, []ops.QLinear{a.qProj, a.kProj, a.vProj}, []ops.Tensor{qp, k, v})
	q, gate := s.Get(ops.BF16, t, hq, d), s.Get(ops.BF16, t, hq, d)
	ops.SplitQGate(c, qp, q, gate)
	ops.RMSNorm(c, q, a.qNorm, q, cfg.RMSNormEps)
	ops.RMSNorm(c, k, a.kNorm, k, cfg.RMSNormEps)
	theta := float32(cfg.RopeTheta)
	ops.RoPE(c, q, cfg.RotaryDims(), pos0, theta)
	ops.RoPE(c, k, cfg.RotaryDims(), pos0, theta)
	ops.KVAppend(c, k, v, kv.keys, kv.values, pos0)
	attn := s.Get(ops.BF16, t, hq, d)
	scale := float32(1 / math.Sqrt(float64(d)))
	split := false
	if a.paths.splitKV && t <= splitKVMaxQueries {
		// The partials' scratch is taken at every context length, used or not,
		// so that the scratch layout of a step does not change at 1024 keys.
		splits := ops.SplitKVSplits(kv.keys.Shape[1])
		partial := s.Get(ops.F32, t, hq, splits, d+2)
		if split = pos0+t >= splitKVMinContext; split {
			ops.AttentionSplitKV(c, q, kv.keys, kv.values, attn, partial, pos0+t, scale, splits)
		}
	}
	if !split {
		ops.Attention(c, q, kv.keys, kv.values, attn, pos0+t, scale)
	}
	ops.SigmoidMul(c, attn, gate, attn)
	ops.QMatmul(c, attn.Reshape(t, hq*d), a.oProj, out)
}
