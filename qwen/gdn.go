package qwen

import "bagel/ops"

// gatedDeltaNet is a linear-attention layer (MLX_QWEN35.md §3, "Gated DeltaNet").
type gatedDeltaNet struct {
	inProjQKV, inProjZ, inProjB, inProjA, outProj ops.QLinear
	conv                                          ops.Tensor // bf16 [convDim, K]
	aLog                                          ops.Tensor // f32 [Hv]
	dtBias                                        ops.Tensor // bf16 [Hv]
	norm                                          ops.Tensor // bf16 [Dv], not shifted
	shared                                        *stepScratch
	index                                         int // the layer's
}

func (g *gatedDeltaNet) weights(cfg *Config) []weight {
	h, hv, dv := cfg.HiddenSize, cfg.LinearValueHeads, cfg.LinearValueDim
	return []weight{
		linear(&g.inProjQKV, "linear_attn.in_proj_qkv", cfg.GDNConvDim(), h),
		linear(&g.inProjZ, "linear_attn.in_proj_z", hv*dv, h),
		linear(&g.inProjB, "linear_attn.in_proj_b", hv, h),
		linear(&g.inProjA, "linear_attn.in_proj_a", hv, h),
		linear(&g.outProj, "linear_attn.out_proj", h, hv*dv),
		conv(&g.conv, "linear_attn.conv1d.weight", cfg.GDNConvDim(), cfg.ConvKernel),
		plain(&g.aLog, "linear_attn.A_log", ops.F32, hv),
		plain(&g.dtBias, "linear_attn.dt_bias", ops.BF16, hv),
		// Never shifted, in any layout (MLX_QWEN35.md §6.1): plain, not norm.
		plain(&g.norm, "linear_attn.norm.weight", ops.BF16, dv),
	}
}

// forward: x bf16 [T, hidden] (normed) → out bf16 [T, hidden]; advances the conv
// window and recurrent state of each sequence. The position is implicit in
// the state. While a sequence's record is armed (a speculative verify), the
// input projections are written into it, so that the rule can later be
// replayed over a prefix of the tokens (Cache.ReplayGDN).
func (g *gatedDeltaNet) forward(c *ops.Ctx, cfg *Config, seqs []seq, x, out ops.Tensor) {
	if len(seqs) > 1 || g.shared.records != nil { // several sequences, or a batched step's verify alone
		g.forwardBatch(c, cfg, seqs, x, out)
		return
	}
	st, t := seqs[0].st, x.Shape[0]
	shape := g.shape(cfg)
	s := c.Scratch
	var qkv, z, bLogits, aLogits ops.Tensor
	recording := false
	if r := st.record; r != nil && t <= r.qkv.Shape[0] && !ops.Prompt(c, t) {
		qkv, z, bLogits, aLogits = r.qkv.Rows(0, t), r.z.Rows(0, t), r.b.Rows(0, t), r.a.Rows(0, t)
		r.tokens = t
		recording = true
	} else {
		qkv = s.Get("gdn.qkv", ops.BF16, t, shape.ConvDim())
		z = s.Get("gdn.z", ops.BF16, t, shape.Hv, shape.Dv)
		bLogits, aLogits = s.Get("gdn.b", ops.BF16, t, shape.Hv), s.Get("gdn.a", ops.BF16, t, shape.Hv)
	}
	ws := []ops.QLinear{g.inProjQKV, g.inProjZ, g.inProjB, g.inProjA}
	var o ops.Tensor
	if tr := seqs[0].tree; tr != nil {
		// A draft tree: each node from the window and state as they are,
		// along its path; neither moves (the accepted path is replayed).
		ops.Project(c, x, ws, []ops.Tensor{qkv, z, bLogits, aLogits})
		conv := s.Get("gdn.conv", ops.BF16, t, shape.ConvDim())
		o = s.Get("gdn.out", ops.BF16, t, shape.Hv, shape.Dv)
		ops.Conv1dSiLUTree(c, qkv, st.conv, g.conv, tr.parent, conv, cfg.ConvKernel)
		ops.GDNRecurrenceTree(c, conv, aLogits, bLogits, g.aLog, g.dtBias, st.state, tr.parent, o, shape)
		ops.RMSNormGated(c, o, z, g.norm, o, cfg.RMSNormEps)
	} else if ops.ProjectConvFuses(c, ws, t, recording, cfg.ConvKernel) {
		// A decode step (or a verify, on the matrix units): the in-projection
		// and the conv in one launch (qmatmul_multi_conv_bf16), the projection
		// itself kept in qkv (the record while armed).
		conv := s.Get("gdn.conv", ops.BF16, t, shape.ConvDim())
		ops.ProjectConv(c, x, ws, []ops.Tensor{conv, z, bLogits, aLogits}, qkv, st.conv, g.conv, cfg.ConvKernel)
		o = g.ruleOnConv(c, cfg, st, conv, z, aLogits, bLogits)
	} else {
		ops.Project(c, x, ws, []ops.Tensor{qkv, z, bLogits, aLogits})
		o = g.rule(c, cfg, st, qkv, z, aLogits, bLogits)
	}
	ops.Linear(c, o.Reshape(t, shape.Hv*shape.Dv), g.outProj, out)
}

// forwardBatch is forward over several sequences' rows (a batched decode
// step): the projections read the weights once for all rows, then each
// sequence's conv and rule run on its own window and state: one launch
// each for all the sequences whose states share a pool (the first rows: a
// verify's tokens one after the other through its slot's state), a
// sequence's own launches for the others (a draft tree's on the tree
// kernels). While the step carries a verify, the projections' outputs stay
// in the model's batch record, for the verifying sequences' rollback or a
// tree's commit.
func (g *gatedDeltaNet) forwardBatch(c *ops.Ctx, cfg *Config, seqs []seq, x, out ops.Tensor) {
	t, shape, s := x.Shape[0], g.shape(cfg), c.Scratch
	qkv, z, bLogits, aLogits := g.batchInputs(c, t, shape)
	ws := []ops.QLinear{g.inProjQKV, g.inProjZ, g.inProjB, g.inProjA}
	conv := s.Get("gdn.conv", ops.BF16, t, shape.ConvDim())
	o := s.Get("gdn.out", ops.BF16, t, shape.Hv, shape.Dv)
	p, pooled := g.shared.batch, 0
	if p != nil {
		pooled = p.rows()
	}
	fused := p != nil && ops.ProjectConvBatchFuses(c, ws, t, pooled, cfg.ConvKernel)
	if fused { // every row pooled: the projections and each sequence's conv in one launch, qkv kept (the record)
		ops.ProjectConvBatch(c, x, ws, []ops.Tensor{conv, z, bLogits, aLogits}, qkv, p.base.conv, p.runs, p.convStride(), g.conv, cfg.ConvKernel)
	} else {
		ops.Project(c, x, ws, []ops.Tensor{qkv, z, bLogits, aLogits})
	}
	from := 0
	if p != nil { // the sequences' states in one pool: their tokens in one launch
		n, r := p.sequences(), p.rows()
		if !fused {
			ops.Conv1dSiLUBatch(c, qkv.Rows(0, r), p.base.conv, p.runs, p.convStride(), g.conv, conv.Rows(0, r), cfg.ConvKernel)
		}
		ops.GDNRecurrenceBatch(c, conv.Rows(0, r), aLogits.Rows(0, r), bLogits.Rows(0, r), g.aLog, g.dtBias, p.base.state, p.runs, p.stateStride(),
			o.Rows(0, r), shape)
		from, seqs = r, seqs[n:]
	}
	for _, sq := range seqs {
		to := from + sq.rows
		qkvs, convs, as, bs, os := qkv.Rows(from, to), conv.Rows(from, to), aLogits.Rows(from, to), bLogits.Rows(from, to), o.Rows(from, to)
		mark := s.Scope("gdn.seq")    // a prompt's chunked rule takes scratch of its own rows (ForwardPrompts)
		if tr := sq.tree; tr != nil { // a draft tree: its window and state stay as they are (CommitTree)
			ops.Conv1dSiLUTree(c, qkvs, sq.st.conv, g.conv, tr.parent, convs, cfg.ConvKernel)
			ops.GDNRecurrenceTree(c, convs, as, bs, g.aLog, g.dtBias, sq.st.state, tr.parent, os, shape)
		} else {
			ops.Conv1dSiLU(c, qkvs, sq.st.conv, g.conv, convs, cfg.ConvKernel)
			ops.GDNRule(c, convs, as, bs, g.aLog, g.dtBias, sq.st.state, os, shape)
		}
		s.Rewind(mark)
		from = to
	}
	ops.RMSNormGated(c, o, z, g.norm, o, cfg.RMSNormEps)
	ops.Linear(c, o.Reshape(t, shape.Hv*shape.Dv), g.outProj, out)
}

func (g *gatedDeltaNet) shape(cfg *Config) ops.GDNShape {
	return ops.GDNShape{Hk: cfg.LinearKeyHeads, Hv: cfg.LinearValueHeads, Dk: cfg.LinearKeyDim, Dv: cfg.LinearValueDim}
}

// rule runs the conv and the gated delta rule over the in_proj outputs of T
// tokens (qkv [T, ConvDim], z [T, Hv, Dv], the gate logits a, b [T, Hv]),
// advancing st's conv window and state, and returns the gated-norm output
// bf16 [T, Hv, Dv] in scratch.
func (g *gatedDeltaNet) rule(c *ops.Ctx, cfg *Config, st *layerCache, qkv, z, aLogits, bLogits ops.Tensor) ops.Tensor {
	conv := c.Scratch.Get("gdn.conv", ops.BF16, qkv.Shape[0], g.shape(cfg).ConvDim())
	ops.Conv1dSiLU(c, qkv, st.conv, g.conv, conv, cfg.ConvKernel)
	return g.ruleOnConv(c, cfg, st, conv, z, aLogits, bLogits)
}

// ruleOnConv is rule after the conv: conv bf16 [T, ConvDim] holds the
// convolved [q | k | v] rows.
func (g *gatedDeltaNet) ruleOnConv(c *ops.Ctx, cfg *Config, st *layerCache, conv, z, aLogits, bLogits ops.Tensor) ops.Tensor {
	t, shape := conv.Shape[0], g.shape(cfg)
	o := c.Scratch.Get("gdn.out", ops.BF16, t, shape.Hv, shape.Dv)
	ops.GDNRule(c, conv, aLogits, bLogits, g.aLog, g.dtBias, st.state, o, shape)
	ops.RMSNormGated(c, o, z, g.norm, o, cfg.RMSNormEps)
	return o
}
