package qwen

import (
	"fmt"

	"bagel/ops"
)

// mixer is a decoder layer's token mixer: gated attention or Gated DeltaNet.
type mixer interface {
	// weights declares its tensors, named relative to the layer.
	weights(cfg *Config) []weight
	// forward: x bf16 [T, hidden] (normed) at positions pos0.. → out bf16 [T, hidden],
	// reading and advancing the layer's cache.
	forward(c *ops.Ctx, cfg *Config, st *layerCache, pos0 int, x, out ops.Tensor)
}

// ffn is a decoder layer's feed-forward block: a dense MLP or a sparse MoE.
type ffn interface {
	weights(cfg *Config) []weight
	// forward: x bf16 [T, hidden] (normed) → out bf16 [T, hidden].
	forward(c *ops.Ctx, cfg *Config, x, out ops.Tensor)
}

// layer is one decoder layer (MLX_QWEN35.md §3, "Decoder layer"):
// h = x + mixer(rms(x)); out = h + ffn(rms(h)).
type layer struct {
	inputNorm, postNorm ops.Tensor // bf16 [hidden], 1+w folded in
	mixer               mixer
	ffn                 ffn
	paths               paths
}

// newLayer makes layer i of the kinds the config gives it, unbound.
func newLayer(cfg *Config, i int, p paths, shared *stepScratch) *layer {
	l := &layer{paths: p}
	if cfg.IsAttention(i) {
		l.mixer = &attention{paths: p, shared: shared}
	} else {
		l.mixer = &gatedDeltaNet{paths: p, shared: shared}
	}
	if cfg.IsMoE() {
		l.ffn = &sparseMoE{paths: p, shared: shared}
	} else {
		l.ffn = &denseMLP{paths: p}
	}
	return l
}

// weights declares layer i's tensors under "model.layers.i.".
func (l *layer) weights(cfg *Config, i int) []weight {
	h := cfg.HiddenSize
	ws := []weight{
		norm(&l.inputNorm, "input_layernorm.weight", h),
		norm(&l.postNorm, "post_attention_layernorm.weight", h),
	}
	ws = append(ws, l.mixer.weights(cfg)...)
	ws = append(ws, l.ffn.weights(cfg)...)
	return under(fmt.Sprintf("model.layers.%d.", i), ws)
}

// forward runs the layer on the residual stream x bf16 [T, hidden] in place.
// normed holds the layer's input, rms(x) under inputNorm, and on return the
// next one's: rms(x) under next (the next layer's input norm, or the final
// norm). branch is scratch of the same shape. The fused path joins each
// residual add with the norm after it (one dispatch, same bits).
//
// With the router's GEMV doing the add and norm after the mixer
// (sparseMoE.fusesAddNorm), the sum h = x + branch lands in the first T rows
// of hs, and the layer's last add reads it from there.
func (l *layer) forward(c *ops.Ctx, cfg *Config, st *layerCache, pos0 int, x, normed, branch, next ops.Tensor) {
	// addNorm sets x = h + branch and normed = rms(x) under w.
	addNorm := func(h, w ops.Tensor) {
		if l.paths.addNorm {
			ops.AddRMSNorm(c, h, branch, w, x, normed, cfg.RMSNormEps)
			return
		}
		ops.Add(c, h, branch, x)
		ops.RMSNorm(c, x, w, normed, cfg.RMSNormEps)
	}
	l.mixer.forward(c, cfg, st, pos0, normed, branch)
	t := x.Shape[0]
	moe, fusable := l.ffn.(*sparseMoE)
	fusable = fusable && moe.fusesAddNorm(cfg, 1)
	if fusable {
		// Taken by every forward of a model that fuses (fixed at load), so
		// that its scratch's order stays (ops.Arena), at the size the longest
		// fused step needs, so that a chat's steps of a few tokens more each
		// turn do not grow them.
		slots := ops.AddNormSlots(gemmMinTokens-1, moe.routerWeights())
		hs, ns := c.Scratch.Get(ops.BF16, slots, cfg.HiddenSize), c.Scratch.Get(ops.BF16, slots, cfg.HiddenSize)
		if moe.fusesAddNorm(cfg, t) {
			n := ops.AddNormSlots(t, moe.routerWeights())
			pre := &preNorm{x: x, branch: branch, w: l.postNorm, hs: hs.Rows(0, n), ns: ns.Rows(0, n), eps: cfg.RMSNormEps}
			moe.run(c, cfg, pre, normed, branch)
			addNorm(hs.Rows(0, t), next)
			return
		}
	}
	addNorm(x, l.postNorm)
	l.ffn.forward(c, cfg, normed, branch)
	addNorm(x, next)
}
