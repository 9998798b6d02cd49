package qwen

import (
	"math"

	"bagel/ops"
)

// stepScratch is scratch one forward's layers share, one after the other.
type stepScratch struct {
	// batch is the slot tables of a batched step whose sequences (but its
	// draft trees) share a pool (ForwardBatch, ForwardRows), nil for any
	// other forward.
	batch *poolStep
	// records is the model's batch record, per layer, while a batched step
	// carries a verify (ForwardRows): the GDN layers' inputs go there.
	records []*gdnRecord
	// partial and promptPartial are attention's split paths' f32 partials
	// (ops.SplitPartial, ops.PromptPartial), zero where a forward takes none.
	partial, promptPartial ops.Tensor
	// promptSeqs: the forward runs several sequences' prompt chunks
	// (ForwardPrompts), and each sequence's attention takes the prompt
	// partials its own chunk would (their splits depend on its rows).
	promptSeqs bool
}

// newStepScratch takes the shared scratch of a forward of t tokens over a
// cache of capacity tokens: what its path uses, nothing else.
func (m *Model) newStepScratch(c *ops.Ctx, t, capacity int) stepScratch {
	s := stepScratch{batch: m.pooled} // ForwardBatch's tables
	if m.recording {
		s.records = m.batchRecord
	}
	cfg := m.Cfg
	if cfg.FullAttentionInterval <= cfg.NumLayers { // attention layers
		s.partial = ops.SplitPartial(c, t, capacity, cfg.NumHeads, cfg.HeadDim)
		if m.prompts {
			s.promptSeqs = true
		} else {
			s.promptPartial = ops.PromptPartial(c, t, capacity, cfg.NumHeads, cfg.HeadDim)
		}
	}
	return s
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

// forward: x bf16 [T, hidden] (normed) → out bf16 [T, hidden]; each
// sequence's rows attend over its own cache, to which they append their
// keys and values. The projections read the weights once for every row.
func (a *attention) forward(c *ops.Ctx, cfg *Config, seqs []seq, x, out ops.Tensor) {
	t, hq, hkv, d := x.Shape[0], cfg.NumHeads, cfg.NumKVHeads, cfg.HeadDim
	s := c.Scratch
	qp := s.Get("attn.qp", ops.BF16, t, hq, 2*d)
	k, v := s.Get("attn.k", ops.BF16, t, hkv, d), s.Get("attn.v", ops.BF16, t, hkv, d)
	ops.Project(c, x, []ops.QLinear{a.qProj, a.kProj, a.vProj}, []ops.Tensor{qp, k, v})
	q, gate := s.Get("attn.q", ops.BF16, t, hq, d), s.Get("attn.gate", ops.BF16, t, hq, d)
	attn := s.Get("attn.out", ops.BF16, t, hq, d)
	from := 0
	if p := a.shared.batch; p != nil && ops.AttnPrepBatchFits(c, d) { // the sequences in one pool: the first rows
		n, r := p.sequences(), p.rows()
		a.attendPooled(c, cfg, p, seqs[:n], qp.Rows(0, r), k.Rows(0, r), v.Rows(0, r), q.Rows(0, r), gate.Rows(0, r), attn.Rows(0, r))
		from, seqs = r, seqs[n:]
	}
	for _, sq := range seqs { // a draft tree, or every sequence where none shares a pool
		to := from + sq.rows
		a.attend(c, cfg, sq, qp.Rows(from, to), k.Rows(from, to), v.Rows(from, to), q.Rows(from, to), gate.Rows(from, to), attn.Rows(from, to))
		from = to
	}
	ops.SigmoidMul(c, attn, gate, attn)
	ops.Linear(c, attn.Reshape(t, hq*d), a.oProj, out)
}

// attendPooled is the attention of a batched step whose sequences' caches
// are in one pool: every row's preamble in one launch, their attention in
// one to three (the rows of short and of long caches apart, as Attend would
// pick for each), a verify's rows each over its own keys as their decode
// steps would be.
func (a *attention) attendPooled(c *ops.Ctx, cfg *Config, p *poolStep, seqs []seq, qp, k, v, q, gate, attn ops.Tensor) {
	theta, eps := float32(cfg.RopeTheta), float32(cfg.RMSNormEps)
	ops.AttnPrepBatch(c, qp, k, v, a.qNorm, a.kNorm, q, gate, p.base.keys, p.base.values, p.seqs, p.kvStride(), cfg.RotaryDims(), theta, eps)
	var kvLens []int
	for _, sq := range seqs {
		for j := range sq.rows {
			kvLens = append(kvLens, sq.pos0+j+1)
		}
	}
	ops.AttendBatch(c, q, p.base.keys, p.base.values, p.seqs, p.kvStride(), kvLens, attn, a.scale(cfg), a.shared.partial)
}

// attend is one sequence's attention: its rows' preamble (the query and its
// gate split, the norms, RoPE, the keys and values appended to its cache),
// then its queries over its cache's keys into attn.
func (a *attention) attend(c *ops.Ctx, cfg *Config, sq seq, qp, k, v, q, gate, attn ops.Tensor) {
	kv, pos0, t := sq.st, sq.pos0, sq.rows
	theta, scale := float32(cfg.RopeTheta), a.scale(cfg)
	switch tr := sq.tree; {
	case tr != nil: // a draft tree (ForwardTree checked the head fits attn_prep)
		ops.AttnPrepTree(c, qp, k, v, a.qNorm, a.kNorm, q, gate, kv.keys, kv.values, tr.pos, cfg.RotaryDims(), pos0, theta, cfg.RMSNormEps)
		ops.AttentionTree(c, q, kv.keys, kv.values, tr.mask, attn, pos0+t, scale)
		return
	case sq.rot.Buf != nil: // a prompt with an image: each row's (time, row, column)
		ops.AttnPrepMRoPE(c, qp, k, v, a.qNorm, a.kNorm, q, gate, kv.keys, kv.values, sq.rot, cfg.Vision.Sections,
			cfg.RotaryDims(), pos0, theta, cfg.RMSNormEps)
	default:
		ops.AttnPreamble(c, qp, k, v, a.qNorm, a.kNorm, q, gate, kv.keys, kv.values, cfg.RotaryDims(), pos0, sq.shift, theta, cfg.RMSNormEps)
	}
	promptPartial := a.shared.promptPartial
	if a.shared.promptSeqs { // this sequence's chunk's own (ForwardPrompts)
		mark := c.Scratch.Scope("attn.seq_partial")
		defer c.Scratch.Rewind(mark)
		promptPartial = ops.PromptPartial(c, t, kv.keys.Shape[1], cfg.NumHeads, cfg.HeadDim)
	}
	ops.Attend(c, q, kv.keys, kv.values, attn, pos0+t, scale, a.shared.partial, promptPartial)
}

// scale is the attention scores' factor, 1/√headDim.
func (a *attention) scale(cfg *Config) float32 { return float32(1 / math.Sqrt(float64(cfg.HeadDim))) }
