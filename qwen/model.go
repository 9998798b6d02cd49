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
	layers    []*layer
	bind      *binder
	progress  func(float64) error
	// WeightBytes is the size of the checkpoint tensors the model uses.
	WeightBytes int64
	// shared is scratch that the layers of one forward take turns using.
	shared stepScratch
	// seqs are the sequences of the forward under way, per layer; single
	// holds a plain forward's one cache (neither allocated per step).
	seqs       []seq
	single     [1]*Cache
	singleRows [1]int
	// trees are the draft trees of the forward under way, a sequence's or
	// nil (ForwardTree, ForwardTrees); nil for a forward without one.
	trees []*treeStep
	// pooled is the slot tables of the ForwardBatch under way when its
	// sequences of one token share a pool, nil otherwise.
	pooled *poolStep
	// batchRecord is every GDN layer's record of a batched step's verify
	// rows (ForwardRows), allocated on the first; recording is set while a
	// batched step writes its GDN inputs there.
	batchRecord []*gdnRecord
	recording   bool
	// prompts is set while ForwardPrompts runs several sequences' prompt
	// chunks: each sequence's attention takes partials for its own rows.
	prompts bool
	// mtp is the multi-token-prediction head (mtp.go), nil when the
	// checkpoint has none usable; MTPProblem says why one that is there is
	// not used. MTPOn keeps its cache in step with every forward (the
	// engine's speculative-mtp switch): a forward costs one layer more.
	mtp        *mtpHead
	MTPProblem string
	MTPOn      bool
	// vision is the vision tower (vision_tower.go), nil when the checkpoint
	// has none usable; VisionProblem says why one that is declared is not used.
	vision        *visionTower
	VisionProblem string
	// mm is the ForwardMultimodal under way (its positions and images), nil otherwise.
	mm *Multimodal
}

// Load binds the checkpoint's weights for cfg (both from Open) on the context's
// device, checking every tensor's presence, dtype and shape against the config.
// progress, when not nil, is called with the fraction of layers bound (uploads
// make this slow on CUDA); an error from it stops the load and is returned (a
// cancelled load).
func Load(c *ops.Ctx, ck *safetensors.Checkpoint, cfg *Config, progress func(float64) error) (*Model, error) {
	b, err := newBinder(c, ck, cfg)
	if err != nil {
		return nil, err
	}
	m := &Model{Cfg: cfg, bind: b, progress: progress}
	if err := m.bindAll(); err != nil {
		b.release()
		return nil, err
	}
	if err := b.checkFinite(); err != nil {
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
		m.freeBatchRecord(m.bind.c)
		m.bind.release()
		m.bind = nil
	}
}

// weights declares the tensors outside the layers.
func (m *Model) weights() []weight {
	cfg := m.Cfg
	ws := []weight{linear(&m.embed, "model.embed_tokens", cfg.VocabSize, cfg.HiddenSize)}
	if !cfg.TieWordEmbeddings { // tied: the embedding is the head (bindAll)
		ws = append(ws, linear(&m.lmHead, "lm_head", cfg.VocabSize, cfg.HiddenSize))
	}
	return append(ws, norm(&m.finalNorm, "model.norm.weight", cfg.HiddenSize))
}

// bindAll binds the model's tensors, then each layer's (reporting progress per layer).
func (m *Model) bindAll() error {
	if err := m.bind.bind(m.weights()); err != nil {
		return err
	}
	if m.Cfg.TieWordEmbeddings {
		m.lmHead = m.embed
	}
	if held := m.bind.layersHeld(); held < m.Cfg.NumLayers {
		return fmt.Errorf("config.json: num_hidden_layers is %d, but the checkpoint holds %d layers (0 to %d)", m.Cfg.NumLayers, held, held-1)
	}
	m.layers = make([]*layer, m.Cfg.NumLayers)
	for i := range m.layers {
		m.layers[i] = newLayer(m.Cfg, i, &m.shared)
		if err := m.bind.bind(m.layers[i].weights(m.Cfg, i)); err != nil {
			return err
		}
		if m.progress != nil {
			if err := m.progress(float64(i+1) / float64(len(m.layers))); err != nil {
				return err
			}
		}
	}
	if err := m.bindMTP(); err != nil {
		return err
	}
	return m.bindVision()
}

// Forward runs tokens through the model at the cache's position, appending them to
// the cache, and returns logits f32 [R, vocab] for the last token (allPositions
// false, R = 1) or for every token (R = len(tokens)). The result lives in scratch
// memory: read it before the next Forward or Arena reset.
func (m *Model) Forward(c *ops.Ctx, cache *Cache, tokens []int32, allPositions bool) (ops.Tensor, error) {
	return m.forward(c, cache, tokens, ops.Tensor{}, allPositions, nil)
}

// ForwardIDs is Forward of the last token's logits for tokens already on the
// device, ids i32 [T] (the previous step's top 1: greedy decode picks on the
// device and feeds the pick back without the host). Nothing checks them
// against the vocabulary: they are the device's picks from the logits.
func (m *Model) ForwardIDs(c *ops.Ctx, cache *Cache, ids ops.Tensor) (ops.Tensor, error) {
	if ids.DType != ops.I32 || ids.Elements() == 0 {
		return ops.Tensor{}, fmt.Errorf("forward: device ids %v, want i32 [T]", ids)
	}
	return m.forward(c, cache, nil, ids, false, nil)
}

// ForwardInspect is Forward for every position that hands the residual stream
// bf16 [T, hidden] to inspect after the embedding (layer −1) and after each
// layer, on the device goroutine (inspect may read it back: a host sync per
// layer, for diagnostics). An error from inspect stops the forward.
func (m *Model) ForwardInspect(c *ops.Ctx, cache *Cache, tokens []int32, inspect func(layer int, residual ops.Tensor) error) (ops.Tensor, error) {
	return m.forward(c, cache, tokens, ops.Tensor{}, true, inspect)
}

// forward runs tokens from the host, or with devIDs set the ids on the device.
func (m *Model) forward(c *ops.Ctx, cache *Cache, tokens []int32, devIDs ops.Tensor, allPositions bool, inspect func(int, ops.Tensor) error) (ops.Tensor, error) {
	t := len(tokens)
	if devIDs.Buf != nil {
		t = devIDs.Elements()
	}
	if t == 0 {
		return ops.Tensor{}, fmt.Errorf("forward: no tokens")
	}
	if cache.Offset+t > cache.Capacity {
		return ops.Tensor{}, fmt.Errorf("context full: %d tokens at position %d exceed the context length %d", t, cache.Offset, cache.Capacity)
	}
	if err := m.checkIDs(tokens); err != nil {
		return ops.Tensor{}, err
	}
	ids, err := m.takeIDs(c, tokens, devIDs)
	if err != nil {
		return ops.Tensor{}, err
	}
	pos0 := cache.Offset
	m.single[0], m.singleRows[0] = cache, t
	normed, err := m.run(c, ids, m.single[:], m.singleRows[:], inspect)
	m.single[0] = nil
	if err != nil {
		return ops.Tensor{}, err
	}
	cache.Offset += t
	cache.Disarm()  // a record is of one forward
	final := normed // rms(x) under the final norm
	if !allPositions {
		final = normed.Rows(t-1, t)
	}
	logits := m.logits(c, final)
	m.keepHead(c, cache, ids, normed, pos0, t)
	return logits, nil
}

// keepHead keeps the MTP head's cache in step with a forward's t rows of
// cache at pos0 (their ids and final hidden rows), where the head drafts;
// otherwise its cache is out of step (stale).
func (m *Model) keepHead(c *ops.Ctx, cache *Cache, ids, normed ops.Tensor, pos0, t int) {
	if m.mtp == nil {
		return
	}
	// The head's rows are rotated at plain positions: after an image it
	// is out of step (drafts resume with the next conversation).
	if m.MTPOn && m.trees == nil && cache.mtp.keys.Buf != nil && m.mm == nil && cache.ropeShift == 0 {
		mark := c.Scratch.Scope("mtp.keep") // a forward of several prompts keeps each one's in turn
		m.mtpUpdate(c, cache, ids, normed, pos0, t)
		c.Scratch.Rewind(mark)
	} else {
		cache.mtpStale = true // a draft tree's rows are no sequence
	}
}

// checkIDs refuses a token outside the vocabulary.
func (m *Model) checkIDs(tokens []int32) error {
	for _, id := range tokens {
		if id < 0 || int(id) >= m.Cfg.VocabSize {
			return fmt.Errorf("token id %d is outside the vocabulary (0..%d)", id, m.Cfg.VocabSize-1)
		}
	}
	return nil
}

// takeIDs opens the forward's scratch and returns its ids i32 [T]: devIDs
// when set, else tokens written to the device.
func (m *Model) takeIDs(c *ops.Ctx, tokens []int32, devIDs ops.Tensor) (ops.Tensor, error) {
	c.Scratch.Scope("forward") // the last forward's tensors are dead: its logits were read
	if devIDs.Buf != nil {
		return devIDs, nil
	}
	ids := c.Scratch.Get("forward.ids", ops.I32, len(tokens))
	return ids, ops.WriteInt32(c, ids, tokens)
}

// run embeds ids i32 [T] and runs every layer over the sequences of caches,
// counts[b] rows of caches[b] at its position, in order (T in all), and returns the final
// hidden rows under the final norm, bf16 [T, hidden]. inspect, when set,
// sees the residual stream after the embedding and each layer
// (ForwardInspect).
func (m *Model) run(c *ops.Ctx, ids ops.Tensor, caches []*Cache, counts []int, inspect func(int, ops.Tensor) error) (ops.Tensor, error) {
	cfg, s, t := m.Cfg, c.Scratch, ids.Elements()
	capacity := 0
	m.seqs = m.seqs[:0]
	for i, k := range caches {
		capacity = max(capacity, k.Capacity)
		m.seqs = append(m.seqs, seq{pos0: k.Offset, rows: counts[i], shift: k.ropeShift, tree: m.treeOf(i)})
	}
	x := s.Get("forward.x", ops.BF16, t, cfg.HiddenSize) // the residual stream
	ops.Embed(c, ids, m.embed, x)
	if m.mm != nil {
		rot, err := m.placeImages(c, x)
		if err != nil {
			return ops.Tensor{}, err
		}
		m.seqs[0].rot = rot
	}
	if inspect != nil {
		if err := inspect(-1, x); err != nil {
			return ops.Tensor{}, err
		}
	}
	normed := s.Get("forward.normed", ops.BF16, t, cfg.HiddenSize)
	branch := s.Get("forward.branch", ops.BF16, t, cfg.HiddenSize)
	m.shared = m.newStepScratch(c, t, capacity)
	ops.RMSNorm(c, x, m.layers[0].inputNorm, normed, cfg.RMSNormEps)
	for i, l := range m.layers {
		layer := s.Scope("layer") // every layer takes the buffers of the one before it
		next := m.finalNorm
		if i+1 < len(m.layers) {
			next = m.layers[i+1].inputNorm
		}
		for j, k := range caches {
			m.seqs[j].st = &k.layers[i]
		}
		if p := m.shared.batch; p != nil {
			p.base = &p.pool.caches[0].layers[i]
		}
		l.forward(c, cfg, m.seqs, x, normed, branch, next)
		s.Rewind(layer)
		if inspect != nil {
			if err := inspect(i, x); err != nil {
				return ops.Tensor{}, err
			}
		}
	}
	return normed, nil
}

// logits is the head over final bf16 [R, hidden]: f32 [R, vocab] in scratch.
func (m *Model) logits(c *ops.Ctx, final ops.Tensor) ops.Tensor {
	logits := c.Scratch.Get("forward.logits", ops.F32, final.Shape[0], m.Cfg.VocabSize)
	ops.LinearStep(c, final, m.lmHead, logits)
	return logits
}
