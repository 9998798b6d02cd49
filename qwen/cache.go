package qwen

import "bagel/ops"

// Cache is the per-sequence state of every layer: keys and values for attention
// layers; the conv window and the f32 recurrent state for Gated-DeltaNet layers.
// The GDN state cannot be rewound, so reusing a prefix means restoring a snapshot
// taken after exactly that many tokens (MLX_QWEN35.md §4).
type Cache struct {
	Offset   int // tokens processed; the RoPE position of the next token
	Capacity int // tokens the KV cache holds
	layers   []layerCache
	// gdn is every GDN layer's conv window and state, back to back in layer
	// order (u32 words; the layers' conv and state are views of it), so that
	// a speculative verify's snapshot, its restore and a reset are one launch
	// each: 60 copies of the 35B-A3B's states took 200 µs of a 6.7 ms verify.
	gdn      ops.Tensor
	rollback *Snapshot    // SnapshotState's memory, reused
	records  []*gdnRecord // per layer (nil for attention): ArmRecord's buffers
	// replay is what ReplayGDN replays, per layer: records (the cache's own
	// verify) or its rows of the model's batch record (a verify riding in a
	// batched step, ForwardRows); nil after a forward that recorded nothing.
	replay      []*gdnRecord
	batchReplay []*gdnRecord // replay's views of the batch record, reused
	// The MTP head's state (mtp.go), when the model has one: its layer's
	// keys and values (positions 0..Offset−2 while in step), the final
	// hidden state of position Offset−1 (bf16 [1, hidden]), the last
	// forward's final hidden rows (bf16 [mtpRows, hidden]), and whether a
	// forward ran without keeping the head in step.
	mtp       layerCache
	mtpHidden ops.Tensor
	mtpKept   ops.Tensor
	mtpStale  bool
	// pool holds the cache's keys, values, conv windows and states (its
	// slot of them): a pool of one for NewCache's.
	pool *CachePool
	slot int
	// ropeShift is the multimodal RoPE offset: 0 until a prompt with an
	// image, after which the next token's rotary position is Offset +
	// ropeShift (transformers' rope_deltas: an image of R×C merged tokens
	// advances the positions by max(R, C), not R·C).
	ropeShift int
}

// RopeShift is the cache's multimodal RoPE offset: the next token is rotated
// at position Offset + RopeShift.
func (k *Cache) RopeShift() int { return k.ropeShift }

type layerCache struct {
	keys, values ops.Tensor // attention: bf16 [Hkv, Capacity, headDim], after k_norm and RoPE
	conv         ops.Tensor // GDN: bf16 [K−1, convDim], raw in_proj_qkv outputs of the last K−1 tokens
	state        ops.Tensor // GDN: f32 [Hv, Dv, Dk]
	record       *gdnRecord // GDN: where the forward writes its in_proj outputs while armed
}

// cacheBuffer is one buffer of a layer's cache.
type cacheBuffer struct {
	dtype ops.DType
	shape []int
}

// cacheLayout is the one statement of the cache's memory layout, used by
// NewCache to allocate and by CacheBytes to estimate: layer i's buffers for
// capacity tokens, in the order of buffers().
func cacheLayout(cfg *Config, i, capacity int) []cacheBuffer {
	if cfg.IsAttention(i) {
		kv := []int{cfg.NumKVHeads, capacity, cfg.HeadDim}
		return []cacheBuffer{{ops.BF16, kv}, {ops.BF16, kv}} // keys, values
	}
	return []cacheBuffer{
		{ops.BF16, []int{cfg.ConvKernel - 1, cfg.GDNConvDim()}},                      // conv window
		{ops.F32, []int{cfg.LinearValueHeads, cfg.LinearValueDim, cfg.LinearKeyDim}}, // recurrent state
	}
}

// buffers are the fields cacheLayout describes, for an attention layer or a GDN layer.
func (l *layerCache) buffers(attention bool) []*ops.Tensor {
	if attention {
		return []*ops.Tensor{&l.keys, &l.values}
	}
	return []*ops.Tensor{&l.conv, &l.state}
}

// CacheBytes is the device memory NewCache takes for capacity tokens, computed
// from the config alone (the app checks that a model fits before loading it).
func CacheBytes(cfg *Config, capacity int) int64 {
	var total int64
	for i := 0; i < cfg.NumLayers; i++ {
		for _, b := range cacheLayout(cfg, i, capacity) {
			if cfg.IsAttention(i) {
				total += b.bytes()
			} else {
				total += alignPiece(b.bytes())
			}
		}
	}
	return total
}

// NewCache allocates the state of one sequence of up to capacity tokens (a
// pool of one slot).
func (m *Model) NewCache(c *ops.Ctx, capacity int) (*Cache, error) {
	p, err := m.NewCachePool(c, 1, capacity)
	if err != nil {
		return nil, err
	}
	return p.caches[0], nil
}

// mtpLayout is the MTP head's keys (and, alike, its values): an attention
// layer's.
func mtpLayout(cfg *Config, capacity int) cacheBuffer {
	return cacheBuffer{ops.BF16, []int{cfg.NumKVHeads, capacity, cfg.HeadDim}}
}

// allocMTP allocates the MTP head's state but its keys and values (the
// pool's).
func (k *Cache) allocMTP(c *ops.Ctx, cfg *Config) error {
	var err error
	if k.mtpHidden, err = ops.Alloc(c, ops.BF16, 1, cfg.HiddenSize); err != nil {
		return err
	}
	k.mtpKept, err = ops.Alloc(c, ops.BF16, mtpRows, cfg.HiddenSize)
	return err
}

// bytes is the buffer's size (a long context's keys may pass 2 GB).
func (b cacheBuffer) bytes() int64 {
	n := int64(b.dtype.Size())
	for _, d := range b.shape {
		n *= int64(d)
	}
	return n
}

// alignPiece rounds n up to 256 bytes, where every piece of the cache's GDN
// memory starts (as a buffer of its own would).
func alignPiece(n int64) int64 { return (n + 255) &^ 255 }

// Bytes is the device memory the cache holds (its verify record and its
// rollback snapshot included).
func (k *Cache) Bytes() int64 {
	var n int64
	for _, l := range append(k.layers, k.mtp) {
		for _, t := range []ops.Tensor{l.keys, l.values, l.conv, l.state} {
			if t.Buf != nil {
				n += int64(t.Bytes())
			}
		}
	}
	if k.rollback != nil {
		n += k.rollback.Bytes()
	}
	return n + recordBytes(k.records)
}

// Reset empties the cache for a new sequence (zeroes the GDN states on the
// device; keys past Offset are never read, so they are left as they are).
func (k *Cache) Reset(c *ops.Ctx) error {
	k.Offset, k.mtpStale, k.ropeShift = 0, false, 0
	if k.gdn.Buf != nil {
		ops.Fill(c, k.gdn)
	}
	return nil
}

// Free releases the cache's buffers: what it holds alone (its MTP head's
// state, its snapshot, its verify records) and, for a cache of its own
// (NewCache's), the pool's memory. A cache of a larger pool keeps its slot's
// memory until CachePool.Free.
func (k *Cache) Free(c *ops.Ctx) {
	if k.pool != nil && len(k.pool.caches) == 1 {
		k.pool.Free(c)
		return
	}
	k.freeOwn(c)
}

// freeOwn releases what the cache holds outside its pool's memory.
func (k *Cache) freeOwn(c *ops.Ctx) {
	if k.rollback != nil {
		k.rollback.Release(c)
		k.rollback = nil
	}
	k.freeRecords(c)
	ops.Free(c, k.mtpHidden)
	ops.Free(c, k.mtpKept)
	k.mtp, k.mtpHidden, k.mtpKept = layerCache{}, ops.Tensor{}, ops.Tensor{}
}
