package qwen

import (
	"fmt"

	"bagel/ops"
)

// Cache is the per-sequence state of every layer: keys and values for attention
// layers; the conv window and the f32 recurrent state for Gated-DeltaNet layers.
// The GDN state cannot be rewound, so reusing a prefix means restoring a snapshot
// taken after exactly that many tokens (MLX_QWEN35.md §4).
type Cache struct {
	Offset   int // tokens processed; the RoPE position of the next token
	Capacity int // tokens the KV cache holds
	layers   []layerCache
	rollback *Snapshot    // SnapshotState's memory, reused
	records  []*gdnRecord // per layer (nil for attention): ArmRecord's buffers
}

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
			n := int64(b.dtype.Size())
			for _, d := range b.shape {
				n *= int64(d)
			}
			total += n
		}
	}
	return total
}

// NewCache allocates the state of one sequence of up to capacity tokens.
func (m *Model) NewCache(c *ops.Ctx, capacity int) (*Cache, error) {
	if capacity <= 0 {
		return nil, fmt.Errorf("context length must be positive, got %d", capacity)
	}
	cfg := m.Cfg
	k := &Cache{Capacity: capacity, layers: make([]layerCache, cfg.NumLayers)}
	for i := range k.layers {
		fields := k.layers[i].buffers(cfg.IsAttention(i))
		for j, b := range cacheLayout(cfg, i, capacity) {
			t, err := ops.Alloc(c, b.dtype, b.shape...)
			if err != nil {
				k.Free(c)
				return nil, fmt.Errorf("cache for %d tokens: %w", capacity, err)
			}
			*fields[j] = t
		}
	}
	return k, nil
}

// Bytes is the device memory the cache holds (a verify record included).
func (k *Cache) Bytes() int64 {
	var n int64
	for _, l := range k.layers {
		for _, t := range []ops.Tensor{l.keys, l.values, l.conv, l.state} {
			if t.Buf != nil {
				n += int64(t.Bytes())
			}
		}
	}
	for _, r := range k.records {
		if r != nil {
			n += int64(r.qkv.Bytes() + r.z.Bytes() + r.a.Bytes() + r.b.Bytes())
		}
	}
	return n
}

// Reset empties the cache for a new sequence (zeroes the GDN states on the
// device; keys past Offset are never read, so they are left as they are).
func (k *Cache) Reset(c *ops.Ctx) error {
	k.Offset = 0
	for _, l := range k.layers {
		for _, t := range []ops.Tensor{l.conv, l.state} {
			switch {
			case t.Buf == nil:
			case t.Bytes()%4 == 0 && t.Off%4 == 0:
				ops.Fill(c, t)
			default:
				if err := ops.Zero(c, t); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Free releases the cache's buffers.
func (k *Cache) Free(c *ops.Ctx) {
	if k.rollback != nil {
		k.rollback.Release(c)
	}
	k.freeRecords(c)
	for _, l := range k.layers {
		for _, t := range []ops.Tensor{l.keys, l.values, l.conv, l.state} {
			ops.Free(c, t)
		}
	}
	k.layers = nil
}
