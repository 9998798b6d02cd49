package qwen

import (
	"fmt"

	"bagel/ops"
)

// mixer is a decoder layer's token mixer: gated attention or Gated DeltaNet.
type mixer interface {
	// weights declares its tensors, named relative to the layer.
	weights(cfg *Config) []weight
	// forward: x bf16 [T, hidden] (normed) → out bf16 [T, hidden], the rows
	// of one sequence or of several (seqs, in row order), each reading and
	// advancing its own cache of the layer.
	forward(c *ops.Ctx, cfg *Config, seqs []seq, x, out ops.Tensor)
}

// seq is one sequence's rows of a forward: rows consecutive rows of the
// residual stream at positions pos0.., whose state in this layer is st. A
// forward of one sequence has one; a batched decode step one per sequence.
type seq struct {
	st   *layerCache
	pos0 int
	rows int
	// shift is the cache's multimodal RoPE offset: rows rotated at pos0 +
	// shift + t. rot, when set, gives every row's three positions instead,
	// i32 [rows, 3] (a prompt holding an image).
	shift int
	rot   ops.Tensor
	// tree, when set, is the sequence's draft tree: its rows are the tree's
	// nodes, each seeing its own path (ForwardTree, ForwardTrees).
	tree *treeStep
}

// one is the seqs of a forward of one sequence.
func one(st *layerCache, pos0, rows int) []seq { return []seq{{st: st, pos0: pos0, rows: rows}} }

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
}

// newLayer makes layer i of the kinds the config gives it, unbound.
func newLayer(cfg *Config, i int, shared *stepScratch) *layer {
	l := &layer{}
	if cfg.IsAttention(i) {
		l.mixer = &attention{shared: shared}
	} else {
		l.mixer = &gatedDeltaNet{shared: shared, index: i}
	}
	if cfg.IsMoE() {
		l.ffn = &sparseMoE{}
	} else {
		l.ffn = &denseMLP{}
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
// norm). branch is scratch of the same shape.
func (l *layer) forward(c *ops.Ctx, cfg *Config, seqs []seq, x, normed, branch, next ops.Tensor) {
	l.mixer.forward(c, cfg, seqs, normed, branch)
	ops.AddNorm(c, x, branch, l.postNorm, normed, cfg.RMSNormEps)
	l.ffn.forward(c, cfg, normed, branch)
	ops.AddNorm(c, x, branch, next, normed, cfg.RMSNormEps)
}
