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
}

type layerCache struct {
	keys, values ops.Tensor // attention: bf16 [Hkv, Capacity, headDim], after k_norm and RoPE
	conv         ops.Tensor // GDN: bf16 [K−1, convDim], raw in_proj_qkv outputs of the last K−1 tokens
	state        ops.Tensor // GDN: f32 [Hv, Dv, Dk]
}

// NewCache allocates the state of one sequence of up to capacity tokens.
func (m *Model) NewCache(c *ops.Ctx, capacity int) (*Cache, error) {
	if capacity <= 0 {
		return nil, fmt.Errorf("context length must be positive, got %d", capacity)
	}
	cfg := m.Cfg
	k := &Cache{Capacity: capacity, layers: make([]layerCache, cfg.NumLayers)}
	for i := range k.layers {
		l := &k.layers[i]
		var err error
		if cfg.IsAttention(i) {
			if l.keys, err = ops.Alloc(c, ops.BF16, cfg.NumKVHeads, capacity, cfg.HeadDim); err == nil {
				l.values, err = ops.Alloc(c, ops.BF16, cfg.NumKVHeads, capacity, cfg.HeadDim)
			}
		} else {
			if l.conv, err = ops.Alloc(c, ops.BF16, cfg.ConvKernel-1, cfg.GDNConvDim()); err == nil {
				l.state, err = ops.Alloc(c, ops.F32, cfg.LinearValueHeads, cfg.LinearValueDim, cfg.LinearKeyDim)
			}
		}
		if err != nil {
			k.Free(c)
			return nil, fmt.Errorf("cache for %d tokens: %w", capacity, err)
		}
	}
	return k, nil
}

// Bytes is the device memory the cache holds.
func (k *Cache) Bytes() int64 {
	var n int64
	for _, l := range k.layers {
		for _, t := range []ops.Tensor{l.keys, l.values, l.conv, l.state} {
			if t.Buf != nil {
				n += int64(t.Bytes())
			}
		}
	}
	return n
}

// Reset empties the cache for a new sequence (zeroes the GDN states; keys past
// Offset are never read, so they are left as they are).
func (k *Cache) Reset(c *ops.Ctx) error {
	k.Offset = 0
	for _, l := range k.layers {
		if l.conv.Buf != nil {
			if err := ops.Zero(c, l.conv); err != nil {
				return err
			}
			if err := ops.Zero(c, l.state); err != nil {
				return err
			}
		}
	}
	return nil
}

// Free releases the cache's buffers.
func (k *Cache) Free(c *ops.Ctx) {
	for _, l := range k.layers {
		for _, t := range []ops.Tensor{l.keys, l.values, l.conv, l.state} {
			ops.Free(c, t)
		}
	}
	k.layers = nil
}
