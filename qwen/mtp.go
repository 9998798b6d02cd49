package qwen

import (
	"fmt"
	"strings"

	"bagel/ops"
	"bagel/safetensors"
)

// The multi-token-prediction (MTP) head of Qwen3.5 / 3.6 and Qwen3-Next: one
// more full-attention decoder layer sharing the embedding and the output head
// (vLLM's qwen3_next_mtp). At position p it reads the model's final hidden
// state h_p (after the final norm) and the embedding of token p+1, each under
// its own norm, concatenated [embedding | hidden] and projected back to the
// width by fc; the layer and its norm follow, and the model's head gives
// logits for token p+2. Chained on its own output, it drafts several tokens
// for a speculative verify (MTPDraft).
//
// Its cache stays in step with the model's while MTPOn: every forward of
// tokens x_a..x_{b−1} also runs the head over positions a−1..b−2 (hidden
// h_{a−1}, kept from the forward before, and this forward's rows; the
// forward's own tokens as the next tokens), so that the head's keys cover
// positions 0..b−2 and Cache.mtpHidden holds h_{b−1}, which pairs with the
// token sampled next. A draft writes keys at b−1 onwards from guesses; the
// next forward writes those positions again from the model's own states
// before anything reads them (attention reads keys below its position only).
//
// Checkpoints: the tensors mtp.* (transformers' names) in the model's files,
// or in mtp.safetensors beside them (Qwen's releases ship it; mlx-lm
// conversions drop the head). Bagel takes them quantized, with the norms'
// +1 folded in and a MoE layer's experts as switch_mlp, as in the rest of an
// MLX checkpoint (the demo model's form, and bagel synth --mtp's), or in
// Qwen's release form: bf16 linears, quantized at load to 8 bits
// (quantize.go), zero-centred norms, a MoE layer's experts as
// experts.gate_up_proj and experts.down_proj or one module per expert
// (written from transformers' and vLLM's names; no released file has been
// read here).

// mtpHead is the bound MTP head.
type mtpHead struct {
	embedNorm, hiddenNorm, norm ops.Tensor // bf16 [hidden], 1+w folded in
	// fc [hidden, 2·hidden] cut along its input at load: the embedding's
	// half and the hidden state's (two products and an add, where one
	// product of the concatenation would need a concat kernel).
	fcEmbed, fcHidden ops.QLinear
	layer             *layer
	shared            stepScratch // its own: no split-KV partials
}

// mtpRows is how many of a forward's final hidden rows the cache keeps for
// RewindMTP: a verify's, 1 + up to 15 guesses.
const mtpRows = 16

// HasMTP reports whether the model's MTP head is loaded.
func (m *Model) HasMTP() bool { return m.mtp != nil }

// bindMTP binds the MTP head when the checkpoint holds one (mtp.fc), or
// records in MTPProblem why a head that is there cannot be used (a broken
// head does not stop the model from loading).
func (m *Model) bindMTP() error {
	cfg, b := m.Cfg, m.bind
	w, ok := b.ck.Tensor("mtp.fc.weight")
	if !ok {
		return nil
	}
	switch w.DType {
	case "U32":
	case "BF16": // Qwen's release form: quantized here, norms shifted
		b.rawMTP = true
		defer func() { b.rawMTP = false }()
	default:
		m.MTPProblem = fmt.Sprintf("the checkpoint's MTP head is %s, which Bagel does not read (quantized or bf16 only)", w.DType)
		return nil
	}
	h := &mtpHead{}
	h.layer = &layer{mixer: &attention{shared: &h.shared}, ffn: &denseMLP{}}
	if cfg.IsMoE() { // the model's experts block, under mtp.layers.0.mlp (MLX names: switch_mlp)
		h.layer.ffn = &sparseMoE{}
	}
	hid := cfg.HiddenSize
	ws := []weight{
		norm(&h.embedNorm, "mtp.pre_fc_norm_embedding.weight", hid),
		norm(&h.hiddenNorm, "mtp.pre_fc_norm_hidden.weight", hid),
		norm(&h.norm, "mtp.norm.weight", hid),
	}
	layer := []weight{
		norm(&h.layer.inputNorm, "input_layernorm.weight", hid),
		norm(&h.layer.postNorm, "post_attention_layernorm.weight", hid),
	}
	layer = append(layer, h.layer.mixer.weights(cfg)...)
	layer = append(layer, h.layer.ffn.weights(cfg)...)
	if err := b.bind(append(ws, under("mtp.layers.0.", layer)...)); err != nil {
		m.MTPProblem = "the checkpoint's MTP head cannot be read: " + err.Error()
		return nil // the model itself is fine: it decodes without drafts
	}
	var err error
	if b.rawMTP {
		h.fcEmbed, h.fcHidden, err = b.splitInputBF16("mtp.fc", hid, 2*hid)
	} else {
		h.fcEmbed, h.fcHidden, err = b.splitInput("mtp.fc", hid, 2*hid)
	}
	if err != nil {
		m.MTPProblem = "the checkpoint's MTP head cannot be read: " + err.Error()
		return nil // the model itself is fine: it decodes without drafts
	}
	m.mtp = h
	return nil
}

// splitInput binds the quantized linear at path, [out, in], as two linears
// [out, in/2]: its first and second halves of the input. Each row's codes,
// scales and biases are cut on the host and uploaded (a group never straddles
// the cut: in/2 must be a multiple of the group size).
func (b *binder) splitInput(path string, out, in int) (lo, hi ops.QLinear, err error) {
	q, err := b.ck.Linear(b.quant, path, out, in, 0)
	if err != nil {
		return lo, hi, err
	}
	half := in / 2
	if in%2 != 0 || half%q.GroupSize != 0 || half*q.Bits%32 != 0 {
		return lo, hi, fmt.Errorf("%s: an input of %d does not cut in two whole halves of groups of %d", path, in, q.GroupSize)
	}
	b.checked(q.Scales)
	b.checked(q.Biases)
	cut := func(t *safetensors.Tensor, rowBytes int, dtype ops.DType, cols int) (ops.Tensor, ops.Tensor, error) {
		first, second := halveRows(t.Data, out, rowBytes)
		a, err := b.upload(dtype, []int{out, cols}, first)
		if err != nil {
			return a, a, err
		}
		c, err := b.upload(dtype, []int{out, cols}, second)
		return a, c, err
	}
	mk := func() ops.QLinear {
		return ops.QLinear{Name: path, Bits: q.Bits, GroupSize: q.GroupSize, Out: out, In: half}
	}
	lo, hi = mk(), mk()
	words := half * q.Bits / 32
	if lo.W, hi.W, err = cut(q.Weight, 8*words, ops.U32, words); err != nil {
		return lo, hi, err
	}
	groups := half / q.GroupSize
	if lo.Scales, hi.Scales, err = cut(q.Scales, 4*groups, ops.BF16, groups); err != nil {
		return lo, hi, err
	}
	lo.Bias, hi.Bias, err = cut(q.Biases, 4*groups, ops.BF16, groups)
	return lo, hi, err
}

// mtpForward runs the head over n positions pos0.. of its cache: hidden bf16
// [n, hidden] (the model's final hidden state at each), ids i32 [n] (each
// position's next token). It returns the head's output, bf16 [n, hidden]
// under its norm: what its logits come from, and the hidden state a chained
// draft continues from.
func (m *Model) mtpForward(c *ops.Ctx, cache *Cache, hidden, ids ops.Tensor, pos0 int) ops.Tensor {
	return m.mtpForwardSeqs(c, one(&cache.mtp, pos0, ids.Elements()), nil, hidden, ids)
}

// mtpForwardSeqs is mtpForward over the rows of several sequences (seqs,
// in row order, each over its own head cache): the head's projections read
// its weights once for all rows; its attention runs once for all of them
// where their caches share a pool (pooled, headStep's), else a sequence at a
// time.
func (m *Model) mtpForwardSeqs(c *ops.Ctx, seqs []seq, pooled *poolStep, hidden, ids ops.Tensor) ops.Tensor {
	cfg, h, s := m.Cfg, m.mtp, c.Scratch
	n, hid := ids.Elements(), cfg.HiddenSize
	s.Scope("mtp") // the head's last run is dead: its output was read
	emb := s.Get("mtp.emb", ops.BF16, n, hid)
	ops.Embed(c, ids, m.embed, emb)
	en, hn := s.Get("mtp.embed_normed", ops.BF16, n, hid), s.Get("mtp.hidden_normed", ops.BF16, n, hid)
	ops.RMSNorm(c, emb, h.embedNorm, en, cfg.RMSNormEps)
	ops.RMSNorm(c, hidden, h.hiddenNorm, hn, cfg.RMSNormEps)
	x, other := s.Get("mtp.x", ops.BF16, n, hid), s.Get("mtp.fc_hidden", ops.BF16, n, hid)
	ops.Linear(c, en, h.fcEmbed, x)
	ops.Linear(c, hn, h.fcHidden, other)
	ops.Add(c, x, other, x)
	// normed may be the hidden state this run started from (MTPDraft's
	// chain): hn read it above, in stream order before this overwrites it.
	normed, branch := s.Get("mtp.normed", ops.BF16, n, hid), s.Get("mtp.branch", ops.BF16, n, hid)
	ops.RMSNorm(c, x, h.layer.inputNorm, normed, cfg.RMSNormEps)
	layer := s.Scope("layer")
	h.shared.batch = pooled
	h.layer.forward(c, cfg, seqs, x, normed, branch, h.norm)
	h.shared.batch = nil
	s.Rewind(layer)
	return normed
}

// mtpUpdate keeps the head's cache in step after a forward of t tokens at
// positions pos0.. (ids i32 [t], final the forward's final hidden rows bf16
// [t, hidden]): the head runs over positions pos0−1..pos0+t−2 (the first
// pairs the kept h_{pos0−1} with ids[0]; at pos0 0 there is none), then
// keeps h_{pos0+t−1} and, for a verify's few rows, all t rows (RewindMTP).
func (m *Model) mtpUpdate(c *ops.Ctx, cache *Cache, ids, final ops.Tensor, pos0, t int) {
	s, hid := c.Scratch, m.Cfg.HiddenSize
	switch {
	case pos0 == 0 && t > 1:
		m.mtpForward(c, cache, final.Rows(0, t-1), ops.View(ids, 4, ops.I32, []int{t - 1}), 0)
	case pos0 > 0:
		rows := s.Get("mtp.rows", ops.BF16, t, hid)
		ops.Copy(c, cache.mtpHidden, rows.Rows(0, 1))
		if t > 1 {
			ops.Copy(c, final.Rows(0, t-1), rows.Rows(1, t))
		}
		m.mtpForward(c, cache, rows, ids, pos0-1)
	}
	ops.Copy(c, final.Rows(t-1, t), cache.mtpHidden)
	if t <= mtpRows {
		ops.Copy(c, final, cache.mtpKept.Rows(0, t))
	}
}

// MTPReady reports whether the head can draft after the cache's last forward:
// it is loaded, its cache is in step, and a token has been processed.
func (m *Model) MTPReady(cache *Cache) bool {
	return m.mtp != nil && !cache.mtpStale && cache.Offset > 0 && cache.mtp.keys.Buf != nil
}

// MTPDraft drafts up to k tokens after last, the token sampled after the
// cache's last position (not in the cache yet): the head runs on h_{Offset−1}
// and last, then on its own output and each guess; pick chooses a guess from
// its logits f32 [1, vocab] (the device's argmax). Call it only when
// MTPReady; the drafts stop at the cache's capacity.
func (m *Model) MTPDraft(c *ops.Ctx, cache *Cache, last int32, k int, pick func(logits ops.Tensor) (int32, error)) ([]int32, error) {
	if !m.MTPReady(cache) {
		return nil, fmt.Errorf("MTP draft: the head's cache is not in step")
	}
	s := c.Scratch
	hidden, id := cache.mtpHidden, last
	var drafts []int32
	for i := 0; i < k && cache.Offset+i+1 < cache.Capacity; i++ {
		if id < 0 || int(id) >= m.Cfg.VocabSize {
			return drafts, nil
		}
		s.Scope("mtp.draft") // the last guess's tensors are dead: it was picked
		ids := s.Get("mtp.ids", ops.I32, 1)
		if err := ops.WriteInt32(c, ids, []int32{id}); err != nil {
			return nil, err
		}
		out := m.mtpForward(c, cache, hidden, ids, cache.Offset-1+i)
		logits := s.Get("mtp.logits", ops.F32, 1, m.Cfg.VocabSize)
		ops.LinearStep(c, out, m.lmHead, logits)
		next, err := pick(logits)
		if err != nil {
			return nil, err
		}
		drafts = append(drafts, next)
		hidden, id = out, next
	}
	return drafts, nil
}

// RewindMTP makes row of the last forward's kept rows (a verify's) the
// head's pending hidden state: after a verify whose guesses were kept up to
// that row's token, the cache (rolled back) ends at that position.
func (m *Model) RewindMTP(c *ops.Ctx, cache *Cache, row int) {
	if m.mtp == nil || cache.mtpKept.Buf == nil || row < 0 || row >= mtpRows {
		return
	}
	ops.Copy(c, cache.mtpKept.Rows(row, row+1), cache.mtpHidden)
}

// linearBF16 binds the bf16 linear at path, [out, in] (or experts stacked
// [experts, out, in]), quantized to 8 bits at load (quantize8). A MoE
// layer's experts, declared under MLX's switch_mlp names, are read from the
// release form: experts.gate_up_proj [E, 2·out, in] (gate first, then up),
// experts.down_proj [E, out, in], or one module per expert
// (experts.{e}.gate_proj.weight, ...).
func (b *binder) linearBF16(path string, out, in, experts int) (ops.QLinear, error) {
	if in%64 != 0 {
		return ops.QLinear{}, fmt.Errorf("%s: an input of %d is not a whole number of groups of 64", path, in)
	}
	data, err := b.bf16Rows(path, out, in, experts)
	if err != nil {
		return ops.QLinear{}, err
	}
	return b.uploadQuantized(path, data, out, in, experts)
}

// bf16Rows reads the bf16 weight of path as max(experts, 1)·out rows of in.
func (b *binder) bf16Rows(path string, out, in, experts int) ([]byte, error) {
	if experts == 0 {
		return b.bf16Tensor(path+".weight", out*in)
	}
	base, proj, ok := strings.Cut(path, ".switch_mlp.")
	if !ok {
		return nil, fmt.Errorf("%s: stacked experts outside a MoE block", path)
	}
	rows := make([]byte, 0, 2*experts*out*in)
	fused, half := base+".experts.gate_up_proj", 0
	switch proj {
	case "gate_proj":
	case "up_proj":
		half = 1
	case "down_proj":
		fused = base + ".experts.down_proj"
	default:
		return nil, fmt.Errorf("%s: no expert projection of that name", path)
	}
	if _, ok := b.ck.Tensor(fused); ok {
		values := experts * out * in
		if proj != "down_proj" {
			values *= 2 // gate and up, one after the other for each expert
		}
		all, err := b.bf16Tensor(fused, values)
		if err != nil {
			return nil, err
		}
		per := len(all) / experts
		for e := range experts {
			part := all[e*per : (e+1)*per]
			if proj != "down_proj" {
				part = part[half*per/2 : (half+1)*per/2]
			}
			rows = append(rows, part...)
		}
		return rows, nil
	}
	for e := range experts {
		one, err := b.bf16Tensor(fmt.Sprintf("%s.experts.%d.%s.weight", base, e, proj), out*in)
		if err != nil {
			return nil, err
		}
		rows = append(rows, one...)
	}
	return rows, nil
}

// bf16Tensor is the bytes of the bf16 tensor name, which must hold n values.
func (b *binder) bf16Tensor(name string, n int) ([]byte, error) {
	t, ok := b.ck.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("missing tensor %s", name)
	}
	if t.DType != "BF16" || t.Elements() != n {
		return nil, fmt.Errorf("tensor %s (%s): %s %v, want bf16 of %d values", name, baseName(t.File), t.DType, t.Shape, n)
	}
	b.checked(t)
	return t.Data, nil
}

// uploadQuantized quantizes rows (bf16, max(experts, 1)·out rows of in) to 8
// bits and uploads them as the linear of path.
func (b *binder) uploadQuantized(path string, rows []byte, out, in, experts int) (ops.QLinear, error) {
	codes, scales, biases := quantize8(rows, max(experts, 1)*out, in)
	l := ops.QLinear{Name: path, Bits: 8, GroupSize: 64, Out: out, In: in, Experts: experts}
	lead := []int{out}
	if experts > 0 {
		lead = []int{experts, out}
	}
	var err error
	for _, p := range []struct {
		dst   *ops.Tensor
		dtype ops.DType
		cols  int
		data  []byte
	}{{&l.W, ops.U32, in / 4, codes}, {&l.Scales, ops.BF16, in / 64, scales}, {&l.Bias, ops.BF16, in / 64, biases}} {
		if *p.dst, err = b.upload(p.dtype, append(append([]int{}, lead...), p.cols), p.data); err != nil {
			return l, err
		}
	}
	return l, nil
}

// splitInputBF16 is splitInput for a bf16 linear: each half of its input
// quantized as a linear of its own.
func (b *binder) splitInputBF16(path string, out, in int) (lo, hi ops.QLinear, err error) {
	data, err := b.bf16Tensor(path+".weight", out*in)
	if err != nil {
		return lo, hi, err
	}
	half := in / 2
	if in%2 != 0 || half%64 != 0 {
		return lo, hi, fmt.Errorf("%s: an input of %d does not cut in two whole halves of groups of 64", path, in)
	}
	first, second := halveRows(data, out, 2*in)
	if lo, err = b.uploadQuantized(path, first, out, half, 0); err != nil {
		return lo, hi, err
	}
	hi, err = b.uploadQuantized(path, second, out, half, 0)
	return lo, hi, err
}

// halveRows cuts each of rows rows of rowBytes bytes in two halves: the
// first halves in order, and the second.
func halveRows(data []byte, rows, rowBytes int) (first, second []byte) {
	first, second = make([]byte, 0, len(data)/2), make([]byte, 0, len(data)/2)
	for r := range rows {
		row := data[r*rowBytes : (r+1)*rowBytes]
		first, second = append(first, row[:rowBytes/2]...), append(second, row[rowBytes/2:]...)
	}
	return first, second
}

// upload makes a device tensor of host bytes, owned by the binder (freed
// with the model).
func (b *binder) upload(dtype ops.DType, shape []int, data []byte) (ops.Tensor, error) {
	t, err := ops.Upload(b.c, dtype, shape, data)
	if err == nil {
		b.owned = append(b.owned, t)
	}
	return t, err
}
