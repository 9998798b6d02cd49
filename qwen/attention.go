package qwen

import (
	"math"

	"bagel/ops"
)

// Split-KV attention serves decode (and the few queries of a speculative
// verify) once the context is long enough that one threadgroup per head would
// idle the GPU; below splitKVMinContext keys, and for prefill, the one-kernel
// attention keeps prefill and decode bit-identical. That happens early: at
// the 35B-A3B's shapes (16 q-heads) attention_bf16 took 15 µs a layer at 155
// keys, and with a threshold of 1024 decode after 512 tokens ran at 359.6
// tok/s (GPU 2.77 ms a token) against 472 (2.10) from 128 keys on (H200,
// `bagel bench --long 128,256,512,1000,2000`); 256 left 128–255 keys slow.
// Measured on CUDA only: on a Mac, whose GPU has fewer cores for the 16
// threadgroups to fill, the best threshold may be higher (never run there).
const (
	splitKVMaxQueries = 16
	splitKVMinContext = 128
)

// stepScratch is scratch one forward's layers share, one after the other.
type stepScratch struct {
	// tree is the forward's draft tree (ForwardTree), nil for a plain one.
	tree *treeStep
	// partial is split-KV attention's f32 [splitKVMaxQueries, Hq, splits, D+2]
	// (cut to the step's T): taken once per forward at a fixed size whatever
	// T and the context length, so the scratch layout of a step never depends
	// on either (ops.Arena serves requests by their order).
	partial ops.Tensor
	// gdnPrep is the chunked GDN rule's f32 table for the step's chunks
	// (ops.GDNPrepShape), shared by the GDN layers one after another; taken by
	// every forward of a model with GDN layers, used by prompts.
	gdnPrep ops.Tensor
	// promptPartial is the prompt path's split-KV partial, f32 [T, Hq,
	// splits, D+2] (prefillSplits): taken by every forward while the switch
	// prefill-split-attention is on (sized by T, as gdnPrep), used by prompts.
	promptPartial ops.Tensor
}

// prefillSplits is how many ranges a prompt of t tokens cuts each query's keys
// into on the split-KV path: one per 4096 keys of capacity, 1 to 4, and fewer
// where the partials (t·hq·splits·(d+2) floats: 34 MB for a chunk of 512 at the
// 35B-A3B's heads and 4 ranges) would pass promptPartialBytes. A prompt has
// many queries already, so few ranges fill the GPU.
func prefillSplits(capacity, t, hq, d int) int {
	per := max(1, t*hq*(d+2)*4)
	return max(1, min(4, capacity/4096, promptPartialBytes/per))
}

// promptPartialBytes bounds the prompt path's split-KV partials.
const promptPartialBytes = 64 << 20

// newStepScratch takes the shared scratch of a forward of t tokens over a
// cache of capacity tokens.
func (m *Model) newStepScratch(c *ops.Ctx, t, capacity int) stepScratch {
	s := stepScratch{tree: m.tree} // ForwardTree's tree
	cfg := m.Cfg
	if c.Plan.SplitKV && cfg.FullAttentionInterval <= cfg.NumLayers {
		full := c.Scratch.Get(ops.F32, splitKVMaxQueries, cfg.NumHeads, ops.SplitKVSplits(capacity), cfg.HeadDim+2)
		if t <= splitKVMaxQueries {
			s.partial = full
		}
	}
	if cfg.FullAttentionInterval > 1 {
		s.gdnPrep = c.Scratch.Get(ops.F32, ops.GDNPrepShape(t, cfg.LinearValueHeads)...)
	}
	if c.Plan.PrefillSplit && !m.flashPrompt(c) && cfg.FullAttentionInterval <= cfg.NumLayers {
		p := c.Scratch.Get(ops.F32, t, cfg.NumHeads, prefillSplits(capacity, t, cfg.NumHeads, cfg.HeadDim), cfg.HeadDim+2)
		if ops.Prompt(c, t) {
			s.promptPartial = p
		}
	}
	return s
}

// flashPrompt reports whether a prompt's attention takes AttentionFlash (and
// so no split-KV partials).
func (m *Model) flashPrompt(c *ops.Ctx) bool {
	return c.Plan.PrefillFlash && ops.FlashAttention(c, m.Cfg.HeadDim)
}

// attention is a gated full-attention layer (MLX_QWEN35.md §3, "Gated full attention").
type attention struct {
	qProj, kProj, vProj, oProj ops.QLinear // q_proj out = heads·2·headDim, per head [q | gate]
	qNorm, kNorm               ops.Tensor  // bf16 [headDim]
	shared                     *stepScratch
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
	ops.Project(c, x, []ops.QLinear{a.qProj, a.kProj, a.vProj}, []ops.Tensor{qp, k, v})
	q, gate := s.Get(ops.BF16, t, hq, d), s.Get(ops.BF16, t, hq, d)
	theta := float32(cfg.RopeTheta)
	if tr := a.shared.tree; tr != nil {
		// A draft tree (ForwardTree checked the head fits attn_prep).
		ops.AttnPrepTree(c, qp, k, v, a.qNorm, a.kNorm, q, gate, kv.keys, kv.values, tr.pos, cfg.RotaryDims(), pos0, theta, cfg.RMSNormEps)
	} else if c.Plan.AttnPrep && d <= ops.AttnPrepMaxD {
		ops.AttnPrep(c, qp, k, v, a.qNorm, a.kNorm, q, gate, kv.keys, kv.values, cfg.RotaryDims(), pos0, theta, cfg.RMSNormEps)
	} else {
		ops.SplitQGate(c, qp, q, gate)
		ops.RMSNorm(c, q, a.qNorm, q, cfg.RMSNormEps)
		ops.RMSNorm(c, k, a.kNorm, k, cfg.RMSNormEps)
		ops.RoPE(c, q, cfg.RotaryDims(), pos0, theta)
		ops.RoPE(c, k, cfg.RotaryDims(), pos0, theta)
		ops.KVAppend(c, k, v, kv.keys, kv.values, pos0)
	}
	attn := s.Get(ops.BF16, t, hq, d)
	scale := float32(1 / math.Sqrt(float64(d)))
	if tr := a.shared.tree; tr != nil {
		ops.AttentionTree(c, q, kv.keys, kv.values, tr.mask, attn, pos0+t, scale)
	} else if p := a.shared.partial; p.Buf != nil && pos0+t >= splitKVMinContext && ops.SplitKVFits(hq, hkv) {
		if c.Plan.SplitKVTiled && ops.SplitKVTiledFits(c, t, hq, hkv, d) {
			splits := ops.SplitKVTiledSplits(kv.keys.Shape[1])
			partial := ops.View(p, 0, ops.F32, []int{t, hq, splits, d + 2})
			ops.AttentionSplitKVTiled(c, q, kv.keys, kv.values, attn, partial, pos0+t, scale, splits)
		} else {
			splits := ops.SplitKVSplits(kv.keys.Shape[1])
			partial := ops.View(p, 0, ops.F32, []int{t, hq, splits, d + 2})
			ops.AttentionSplitKV(c, q, kv.keys, kv.values, attn, partial, pos0+t, scale, splits)
		}
	} else if c.Plan.PrefillFlash && ops.Prompt(c, t) && ops.FlashAttention(c, d) {
		// A prompt on the matrix units: a tile of queries reads a key once.
		ops.AttentionFlash(c, q, kv.keys, kv.values, attn, pos0+t, scale)
	} else if p := a.shared.promptPartial; p.Buf != nil && ops.SplitKVFits(hq, hkv) {
		// A prompt: each kv-head's keys and values are read once for all
		// its q-heads, where attention_bf16 reads them once per q-head.
		ops.AttentionSplitKV(c, q, kv.keys, kv.values, attn, p, pos0+t, scale, p.Shape[2])
	} else {
		ops.Attention(c, q, kv.keys, kv.values, attn, pos0+t, scale)
	}
	ops.SigmoidMul(c, attn, gate, attn)
	ops.Linear(c, attn.Reshape(t, hq*d), a.oProj, out)
}
