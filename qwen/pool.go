package qwen

import (
	"fmt"

	"bagel/ops"
)

// CachePool is the caches of up to N sequences of one capacity laid out slot
// by slot in shared buffers: every slot's GDN conv windows and states in one
// buffer (slot s's at s · the slot's bytes, laid out as a cache of its own
// lays them out), each attention layer's keys and values in one buffer
// (slot s's [Hkv, Capacity, D] at s · their bytes rounded up to 256). A
// batched step of sequences of one pool reaches all their states from slot
// 0's (the *_batch kernels): one launch a layer for their GDN conv, rule,
// attention preamble and attention, where each sequence took its own
// (ForwardBatch). A cache of a pool is a cache like any other: a
// snapshot, a restore and a reset touch its slot alone.
type CachePool struct {
	capacity  int
	gdn       ops.Tensor // u32 [slots · slotWords]
	slotWords int        // one slot's GDN memory, in u32 words (a multiple of 64)
	// kv is each attention layer's keys and values, slot s's [Hkv,
	// Capacity, D] at s · kvBytes (their size rounded up to 256 bytes, so
	// that every slot's copies take the 16-byte path).
	kv      [][2]ops.Tensor
	kvBytes int
	// mtpKV is the MTP head's keys and values, laid out as an attention
	// layer's (slot s's at s · mtpBytes), where the model has a head: the
	// head of a batch's sequences runs in one launch of the batch kernels.
	mtpKV    [2]ops.Tensor
	mtpBytes int
	caches   []*Cache
}

// NewCachePool allocates slots caches of capacity tokens in one pool.
func (m *Model) NewCachePool(c *ops.Ctx, slots, capacity int) (*CachePool, error) {
	if capacity <= 0 {
		return nil, fmt.Errorf("context length must be positive, got %d", capacity)
	}
	if slots <= 0 {
		return nil, fmt.Errorf("a cache pool needs at least one slot, got %d", slots)
	}
	cfg := m.Cfg
	p := &CachePool{capacity: capacity, kv: make([][2]ops.Tensor, cfg.NumLayers)}
	slotBytes := 0
	for i := 0; i < cfg.NumLayers; i++ {
		if !cfg.IsAttention(i) {
			for _, b := range cacheLayout(cfg, i, capacity) {
				slotBytes += int(alignPiece(b.bytes()))
			}
		}
	}
	p.slotWords = slotBytes / 4
	if slotBytes > 0 {
		mem, err := ops.Alloc(c, ops.U32, slots*p.slotWords)
		if err != nil {
			return nil, fmt.Errorf("cache for %d tokens: %w", capacity, err)
		}
		p.gdn = mem
	}
	for i := 0; i < cfg.NumLayers; i++ {
		if !cfg.IsAttention(i) {
			continue
		}
		for j, b := range cacheLayout(cfg, i, capacity) { // keys, values
			p.kvBytes = int(alignPiece(b.bytes()))
			t, err := ops.Alloc(c, b.dtype, slots*p.kvBytes/b.dtype.Size())
			if err != nil {
				p.Free(c)
				return nil, fmt.Errorf("cache for %d tokens: %w", capacity, err)
			}
			p.kv[i][j] = t
		}
	}
	if m.mtp != nil {
		if err := p.allocHeads(c, cfg, slots); err != nil {
			p.Free(c)
			return nil, err
		}
	}
	for s := range slots {
		k, err := p.slotCache(c, m, s)
		if err != nil {
			p.Free(c)
			return nil, err
		}
		p.caches = append(p.caches, k)
	}
	return p, nil
}

// allocHeads allocates the MTP head's keys and values of every slot.
func (p *CachePool) allocHeads(c *ops.Ctx, cfg *Config, slots int) error {
	b := mtpLayout(cfg, p.capacity)
	p.mtpBytes = int(alignPiece(b.bytes()))
	for j := range p.mtpKV {
		t, err := ops.Alloc(c, b.dtype, slots*p.mtpBytes/b.dtype.Size())
		if err != nil {
			return fmt.Errorf("MTP cache for %d tokens: %w", p.capacity, err)
		}
		p.mtpKV[j] = t
	}
	return nil
}

// slotCache is slot s's cache: views of the pool's memory (and its own MTP state).
func (p *CachePool) slotCache(c *ops.Ctx, m *Model, s int) (*Cache, error) {
	cfg := m.Cfg
	k := &Cache{Capacity: p.capacity, layers: make([]layerCache, cfg.NumLayers), pool: p, slot: s}
	if p.gdn.Buf != nil {
		k.gdn = ops.View(p.gdn, s*p.slotWords*4, ops.U32, []int{p.slotWords})
	}
	at := 0
	for i := range k.layers {
		attention := cfg.IsAttention(i)
		fields := k.layers[i].buffers(attention)
		for j, b := range cacheLayout(cfg, i, p.capacity) {
			if attention {
				*fields[j] = ops.View(p.kv[i][j], s*p.kvBytes, b.dtype, b.shape)
				continue
			}
			*fields[j] = ops.View(k.gdn, at, b.dtype, b.shape)
			at += int(alignPiece(b.bytes()))
		}
	}
	if m.mtp != nil {
		b := mtpLayout(cfg, p.capacity)
		k.mtp.keys = ops.View(p.mtpKV[0], s*p.mtpBytes, b.dtype, b.shape)
		k.mtp.values = ops.View(p.mtpKV[1], s*p.mtpBytes, b.dtype, b.shape)
		if err := k.allocMTP(c, cfg); err != nil {
			k.freeOwn(c)
			return nil, err
		}
	}
	return k, nil
}

// Pool is the pool the cache's memory is a slot of.
func (k *Cache) Pool() *CachePool { return k.pool }

// Caches are the pool's caches, slot by slot.
func (p *CachePool) Caches() []*Cache { return p.caches }

// Capacity is the tokens each of the pool's caches holds.
func (p *CachePool) Capacity() int { return p.capacity }

// Bytes is the device memory the pool's caches hold.
func (p *CachePool) Bytes() int64 {
	var n int64
	for _, k := range p.caches {
		n += k.Bytes()
	}
	return n
}

// Free releases the pool's memory and what each of its caches holds alone.
func (p *CachePool) Free(c *ops.Ctx) {
	for _, k := range p.caches {
		k.freeOwn(c)
		k.gdn, k.layers = ops.Tensor{}, nil
	}
	p.caches = nil
	ops.Free(c, p.gdn)
	p.gdn = ops.Tensor{}
	for j := range p.mtpKV {
		ops.Free(c, p.mtpKV[j])
		p.mtpKV[j] = ops.Tensor{}
	}
	for i := range p.kv {
		ops.Free(c, p.kv[i][0])
		ops.Free(c, p.kv[i][1])
	}
	p.kv = nil
}

// poolOf is the pool every cache of caches belongs to, nil where they are
// in more than one (or there are none).
func poolOf(caches []*Cache) *CachePool {
	if len(caches) == 0 {
		return nil
	}
	p := caches[0].pool
	for _, k := range caches[1:] {
		if k.pool != p {
			return nil
		}
	}
	return p
}
