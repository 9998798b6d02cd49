package qwen

import (
	"fmt"

	"bagel/ops"
	"bagel/safetensors"
)

// Model is a loaded Qwen3.5 text model bound to device tensors.
type Model struct {
	Cfg       *Config
	embed     ops.QLinear // [vocab, hidden]
	lmHead    ops.QLinear // the embedding when tied
	finalNorm ops.Tensor  // bf16 [hidden]
	layers    []layer
	bind      *binder
	progress  func(float64)
	// WeightBytes is the size of the checkpoint tensors the model uses.
	WeightBytes int64
}

// Load binds the checkpoint's weights for cfg (both from Open) on the context's device, checking
// every tensor's presence, dtype and shape against the config. progress, when not
// nil, is called with the fraction of layers bound (uploads make this slow on CUDA).
func Load(c *ops.Ctx, ck *safetensors.Checkpoint, cfg *Config, progress func(float64)) (*Model, error) {
	b, err := newBinder(c, ck, cfg.Quant)
	if err != nil {
		return nil, err
	}
	m := &Model{Cfg: cfg, bind: b, progress: progress}
	if err := m.bindAll(); err != nil {
		b.release()
		return nil, err
	}
	for _, f := range ck.Files {
		m.WeightBytes += int64(len(f.Data))
	}
	return m, nil
}

// Close releases the model's device buffers (not the checkpoint mapping).
func (m *Model) Close() {
	if m.bind != nil {
		m.bind.release()
		m.bind = nil
	}
}

func (m *Model) bindAll() error {
	cfg, b := m.Cfg, m.bind
	p := b.prefix
	var err error
	h := cfg.HiddenSize
	if m.embed, err = b.linear(p+"embed_tokens", cfg.VocabSize, h, 0); err != nil {
		return err
	}
	if cfg.TieWordEmbeddings {
		m.lmHead = m.embed
	} else if m.lmHead, err = b.linear(b.head, cfg.VocabSize, h, 0); err != nil {
		return err
	}
	// The raw HF layout (conv1d [C, 1, K], K > 1) keeps norms unshifted.
	if t, ok := b.ck.Tensor(p + firstGDNLayer(cfg) + ".linear_attn.conv1d.weight"); ok && len(t.Shape) == 3 && t.Shape[1] == 1 && t.Shape[2] > 1 {
		b.rawHF = true
	}
	if m.finalNorm, err = b.norm(p+"norm.weight", h, true); err != nil {
		return err
	}
	m.layers = make([]layer, cfg.NumLayers)
	for i := range m.layers {
		if err := m.bindLayer(i); err != nil {
			return err
		}
		if m.progress != nil {
			m.progress(float64(i+1) / float64(len(m.layers)))
		}
	}
	return nil
}

func firstGDNLayer(cfg *Config) string {
	for i := 0; i < cfg.NumLayers; i++ {
		if !cfg.IsAttention(i) {
			return fmt.Sprintf("layers.%d", i)
		}
	}
	return "layers.0"
}

func (m *Model) bindLayer(i int) error {
	cfg, b := m.Cfg, m.bind
	p := fmt.Sprintf("%slayers.%d.", b.prefix, i)
	h := cfg.HiddenSize
	l := &m.layers[i]
	var err error
	if l.inputNorm, err = b.norm(p+"input_layernorm.weight", h, true); err != nil {
		return err
	}
	if l.postNorm, err = b.norm(p+"post_attention_layernorm.weight", h, true); err != nil {
		return err
	}
	if cfg.IsAttention(i) {
		a := &attention{}
		hd := cfg.HeadDim
		if a.qProj, err = b.linear(p+"self_attn.q_proj", cfg.NumHeads*hd*2, h, 0); err != nil {
			return err
		}
		if a.kProj, err = b.linear(p+"self_attn.k_proj", cfg.NumKVHeads*hd, h, 0); err != nil {
			return err
		}
		if a.vProj, err = b.linear(p+"self_attn.v_proj", cfg.NumKVHeads*hd, h, 0); err != nil {
			return err
		}
		if a.oProj, err = b.linear(p+"self_attn.o_proj", h, cfg.NumHeads*hd, 0); err != nil {
			return err
		}
		if a.qNorm, err = b.norm(p+"self_attn.q_norm.weight", hd, true); err != nil {
			return err
		}
		if a.kNorm, err = b.norm(p+"self_attn.k_norm.weight", hd, true); err != nil {
			return err
		}
		l.attn = a
	} else {
		g := &gatedDeltaNet{}
		hv, dv := cfg.LinearValueHeads, cfg.LinearValueDim
		la := p + "linear_attn."
		if g.inProjQKV, err = b.linear(la+"in_proj_qkv", cfg.GDNConvDim(), h, 0); err != nil {
			return err
		}
		if g.inProjZ, err = b.linear(la+"in_proj_z", hv*dv, h, 0); err != nil {
			return err
		}
		if g.inProjB, err = b.linear(la+"in_proj_b", hv, h, 0); err != nil {
			return err
		}
		if g.inProjA, err = b.linear(la+"in_proj_a", hv, h, 0); err != nil {
			return err
		}
		if g.outProj, err = b.linear(la+"out_proj", h, hv*dv, 0); err != nil {
			return err
		}
		if g.conv, err = b.conv(la+"conv1d.weight", cfg.GDNConvDim(), cfg.ConvKernel); err != nil {
			return err
		}
		if g.aLog, err = b.tensor(la+"A_log", &dtF32, hv); err != nil {
			return err
		}
		if g.dtBias, err = b.tensor(la+"dt_bias", &dtBF16, hv); err != nil {
			return err
		}
		if g.norm, err = b.norm(la+"norm.weight", dv, false); err != nil {
			return err
		}
		l.gdn = g
	}
	if cfg.IsMoE() {
		e := &sparseMoE{}
		ne, mi, si := cfg.NumExperts, cfg.MoEIntermediateSize, cfg.SharedIntermediate
		mp := p + "mlp."
		if e.router, err = b.linear(mp+"gate", ne, h, 0); err != nil {
			return err
		}
		if e.gate, err = b.linear(mp+"switch_mlp.gate_proj", mi, h, ne); err != nil {
			return err
		}
		if e.up, err = b.linear(mp+"switch_mlp.up_proj", mi, h, ne); err != nil {
			return err
		}
		if e.down, err = b.linear(mp+"switch_mlp.down_proj", h, mi, ne); err != nil {
			return err
		}
		if e.sharedGate, err = b.linear(mp+"shared_expert.gate_proj", si, h, 0); err != nil {
			return err
		}
		if e.sharedUp, err = b.linear(mp+"shared_expert.up_proj", si, h, 0); err != nil {
			return err
		}
		if e.sharedDown, err = b.linear(mp+"shared_expert.down_proj", h, si, 0); err != nil {
			return err
		}
		if e.sharedExpertGate, err = b.linear(mp+"shared_expert_gate", 1, h, 0); err != nil {
			return err
		}
		l.moe = e
	} else {
		d := &denseMLP{}
		mp := p + "mlp."
		if d.gate, err = b.linear(mp+"gate_proj", cfg.IntermediateSize, h, 0); err != nil {
			return err
		}
		if d.up, err = b.linear(mp+"up_proj", cfg.IntermediateSize, h, 0); err != nil {
			return err
		}
		if d.down, err = b.linear(mp+"down_proj", h, cfg.IntermediateSize, 0); err != nil {
			return err
		}
		l.mlp = d
	}
	return nil
}

// Forward runs tokens through the model at the cache's position, appending them to
// the cache, and returns logits f32 [R, vocab] for the last token (allPositions
// false, R = 1) or for every token (R = len(tokens)). The result lives in scratch
// memory: read it before the next Forward or Arena reset.
func (m *Model) Forward(c *ops.Ctx, cache *Cache, tokens []int32, allPositions bool) (ops.Tensor, error) {
	t := len(tokens)
	if t == 0 {
		return ops.Tensor{}, fmt.Errorf("forward: no tokens")
	}
	if cache.Offset+t > cache.Capacity {
		return ops.Tensor{}, fmt.Errorf("context full: %d tokens at position %d exceed the context length %d", t, cache.Offset, cache.Capacity)
	}
	for _, id := range tokens {
		if id < 0 || int(id) >= m.Cfg.VocabSize {
			return ops.Tensor{}, fmt.Errorf("token id %d is outside the vocabulary (0..%d)", id, m.Cfg.VocabSize-1)
		}
	}
	cfg, s := m.Cfg, c.Scratch
	ids := s.Get(ops.I32, t)
	if err := ops.WriteInt32(c, ids, tokens); err != nil {
		return ops.Tensor{}, err
	}
	x := s.Get(ops.BF16, t, cfg.HiddenSize) // the residual stream
	ops.Embed(c, ids, m.embed, x)
	normed := s.Get(ops.BF16, t, cfg.HiddenSize)
	branch := s.Get(ops.BF16, t, cfg.HiddenSize)
	for i := range m.layers {
		l, lc := &m.layers[i], &cache.layers[i]
		ops.RMSNorm(c, x, l.inputNorm, normed, cfg.RMSNormEps)
		if l.attn != nil {
			m.forwardAttention(c, l.attn, lc, cache.Offset, normed, branch)
		} else {
			m.forwardGDN(c, l.gdn, lc, normed, branch)
		}
		ops.Add(c, x, branch, x)
		ops.RMSNorm(c, x, l.postNorm, normed, cfg.RMSNormEps)
		if l.moe != nil {
			m.forwardMoE(c, l.moe, normed, branch)
		} else {
			m.forwardDense(c, l.mlp, normed, branch)
		}
		ops.Add(c, x, branch, x)
	}
	cache.Offset += t
	rows := x
	if !allPositions {
		rows = x.Rows(t-1, t)
	}
	r := rows.Shape[0]
	final := s.Get(ops.BF16, r, cfg.HiddenSize)
	ops.RMSNorm(c, rows, m.finalNorm, final, cfg.RMSNormEps)
	logits := s.Get(ops.F32, r, cfg.VocabSize)
	ops.QMatmul(c, final, m.lmHead, logits)
	return logits, nil
}
