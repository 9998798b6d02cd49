package ops

import (
	"bagel/backend"
	"bagel/kernels"
)

// SplitQGate splits the gated q projection, laid out per head as [q_h | gate_h]:
// src bf16 [T, H, 2D] → q, gate bf16 [T, H, D].
func SplitQGate(c *Ctx, src, q, gate Tensor) {
	if len(q.Shape) != 3 {
		fail("split_qgate: q %v", q)
	}
	t, h, d := q.Shape[0], q.Shape[1], q.Shape[2]
	if !(src.Elements() == 2*t*h*d && gate.Elements() == t*h*d) {
		fail("split_qgate: src %v q %v gate %v", src, q, gate)
	}
	c.dispatch("split_qgate_bf16", src.Arg(), q.Arg(), gate.Arg(), backend.Int(t), backend.Int(h), backend.Int(d))
}

// RoPE rotates, in place, the first rotDims dims of every head of x bf16 [T, H, D]
// (NeoX halves), token t at position pos0+t.
func RoPE(c *Ctx, x Tensor, rotDims, pos0 int, theta float32) {
	checkDType("rope x", x, backend.BF16)
	if !(len(x.Shape) == 3 && rotDims%2 == 0 && rotDims <= x.Shape[2]) {
		fail("rope: x %v rotDims %d", x, rotDims)
	}
	c.dispatch("rope_neox_bf16", x.Arg(), backend.Int(x.Shape[0]), backend.Int(x.Shape[1]), backend.Int(x.Shape[2]),
		backend.Int(rotDims), backend.Int(pos0), backend.Float(theta))
}

// AttnPrep is the attention preamble in one dispatch: SplitQGate of qp bf16
// [T, Hq, 2D] into q and gate bf16 [T, Hq, D], RMSNorm of the q heads (qNorm)
// and of the k heads (k bf16 [T, Hkv, D], kNorm), RoPE of both at positions
// pos0 + shift + t, and KVAppend of the normed, rotated k and of v into the
// caches bf16 [Hkv, Cap, D] at rows pos0 + t. k and v are left as they are.
func AttnPrep(c *Ctx, qp, k, v, qNorm, kNorm, q, gate, kCache, vCache Tensor, rotDims, pos0, shift int, theta, eps float32) {
	if pos0+shift < 0 {
		fail("attn_prep: a shift of %d at %d", shift, pos0)
	}
	args := attnPrepArgs(c, qp, k, v, qNorm, kNorm, q, gate, kCache, vCache, rotDims, pos0, theta, eps)
	c.dispatch("attn_prep_bf16", append(args, backend.Int(shift))...)
}

// attnPrepArgs checks AttnPrep's arguments and lays them out: the nine
// buffers, then T, Hq, Hkv, D, rotDims, pos0, Cap, theta, eps.
func attnPrepArgs(c *Ctx, qp, k, v, qNorm, kNorm, q, gate, kCache, vCache Tensor, rotDims, pos0 int, theta, eps float32) []backend.Arg {
	if !(len(q.Shape) == 3 && len(k.Shape) == 3 && len(kCache.Shape) == 3) {
		fail("attn_prep: q %v k %v cache %v", q, k, kCache)
	}
	t, hq, d := q.Shape[0], q.Shape[1], q.Shape[2]
	hkv, capacity := k.Shape[1], kCache.Shape[1]
	if !(qp.Elements() == 2*t*hq*d && gate.Elements() == t*hq*d && k.Shape[0] == t && k.Shape[2] == d &&
		v.Elements() == k.Elements() && kCache.Shape[0] == hkv && kCache.Shape[2] == d && vCache.Elements() == kCache.Elements() &&
		qNorm.Elements() == d && kNorm.Elements() == d) {
		fail("attn_prep: qp %v q %v gate %v k %v v %v cache %v", qp, q, gate, k, v, kCache)
	}
	if !(rotDims%2 == 0 && rotDims <= d && pos0+t <= capacity) {
		fail("attn_prep: rotDims %d, %d tokens at %d in %d", rotDims, t, pos0, capacity)
	}
	return c.args(qp.Arg(), k.Arg(), v.Arg(), qNorm.Arg(), kNorm.Arg(), q.Arg(), gate.Arg(), kCache.Arg(), vCache.Arg(),
		backend.Int(t), backend.Int(hq), backend.Int(hkv), backend.Int(d), backend.Int(rotDims), backend.Int(pos0),
		backend.Int(capacity), backend.Float(theta), backend.Float(eps))
}

// AttnPrepMaxD is the widest head attn_prep_bf16 takes.
var AttnPrepMaxD = kernels.Defines()["ATTN_PREP_THREADS"]

// KVAppend writes k, v bf16 [T, Hkv, D] into the caches bf16 [Hkv, Cap, D] at pos0.
func KVAppend(c *Ctx, k, v, kCache, vCache Tensor, pos0 int) {
	if !(len(k.Shape) == 3 && len(kCache.Shape) == 3) {
		fail("kv_append: k %v cache %v", k, kCache)
	}
	t, h, d := k.Shape[0], k.Shape[1], k.Shape[2]
	capacity := kCache.Shape[1]
	if !(kCache.Shape[0] == h && kCache.Shape[2] == d && v.Elements() == k.Elements()) {
		fail("kv_append: k %v v %v cache %v", k, v, kCache)
	}
	if !(pos0+t <= capacity) {
		fail("kv_append: %d tokens at %d exceed capacity %d", t, pos0, capacity)
	}
	c.dispatch("kv_append_bf16", k.Arg(), v.Arg(), kCache.Arg(), vCache.Arg(),
		backend.Int(t), backend.Int(h), backend.Int(d), backend.Int(capacity), backend.Int(pos0))
}

// Attention is causal scaled dot-product attention of q bf16 [T, Hq, D] over the
// first kvLen cached positions (the last T of which are q's own), GQA by head groups.
func Attention(c *Ctx, q, kCache, vCache, out Tensor, kvLen int, scale float32) {
	c.dispatch("attention_bf16", attentionArgs(c, q, kCache, vCache, out, kvLen, scale)...)
}

// attentionArgs checks the arguments of Attention (and AttentionFlash) and
// lays them out: q, the caches, out, then T, Hq, Hkv, D, Cap, kvLen, scale.
func attentionArgs(c *Ctx, q, kCache, vCache, out Tensor, kvLen int, scale float32) []backend.Arg {
	if !(len(q.Shape) == 3 && len(kCache.Shape) == 3) {
		fail("attention: q %v cache %v", q, kCache)
	}
	t, hq, d := q.Shape[0], q.Shape[1], q.Shape[2]
	hkv, capacity := kCache.Shape[0], kCache.Shape[1]
	if !(hq%hkv == 0 && kCache.Shape[2] == d && out.Elements() == q.Elements()) {
		fail("attention: q %v cache %v out %v", q, kCache, out)
	}
	if !(kvLen >= t && kvLen <= capacity) {
		fail("attention: kvLen %d for %d queries, capacity %d", kvLen, t, capacity)
	}
	return c.args(q.Arg(), kCache.Arg(), vCache.Arg(), out.Arg(),
		backend.Int(t), backend.Int(hq), backend.Int(hkv), backend.Int(d), backend.Int(capacity), backend.Int(kvLen), backend.Float(scale))
}

// AttentionFlash computes what Attention computes for a prompt's many
// queries on the matrix units (attention_flash_bf16): tiles of 64 queries of
// a q-head walk their keys 32 at a time, so a key is read once per tile, not
// once per query. The softmax weights are rounded to bf16 for their product
// with the values, so the result differs from Attention's by bf16 noise. Use it
// where FlashAttention says the device runs its tiles.
func AttentionFlash(c *Ctx, q, kCache, vCache, out Tensor, kvLen int, scale float32) {
	if !(len(q.Shape) == 3 && q.Shape[2] <= flashMaxD) {
		fail("attention: q %v, the tiled kernel takes heads of at most %d", q, flashMaxD)
	}
	c.dispatch("attention_flash_bf16", attentionArgs(c, q, kCache, vCache, out, kvLen, scale)...)
}

// FlashAttention says whether AttentionFlash runs on c's device as tiles on
// its matrix units (backend.MatrixUnits) for heads of d values: a multiple of
// 16, at most FA_MAX_D. Elsewhere the kernel is correct but slow.
func FlashAttention(c *Ctx, d int) bool {
	m, ok := c.Dev.(backend.MatrixUnits)
	return ok && m.MatrixUnits() && d%16 == 0 && d <= flashMaxD
}

var flashMaxD = kernels.Defines()["FA_MAX_D"]

// AttentionSplitKV computes what Attention computes in two dispatches that
// spread each query's keys over splits threadgroups (flash decoding): for a
// few queries over a long cache, where one threadgroup per query head would
// leave most of the GPU idle. The f32 sums run in another order, so the result
// can differ from Attention's in the last bf16 bit. partial is f32 scratch of
// [T, Hq, splits, D+2] (SplitKVScratch).
func AttentionSplitKV(c *Ctx, q, kCache, vCache, out, partial Tensor, kvLen int, scale float32, splits int) {
	hq, hkv, args := splitKVArgs(c, q, kCache, vCache, out, partial, kvLen, scale, splits)
	if !SplitKVFits(hq, hkv) {
		fail("attention: %d q-heads over %d kv-heads, more than %d per kv-head", hq, hkv, attnMaxGroup)
	}
	c.dispatch("attention_split_f32", args...)
	splitKVMerge(c, q, out, partial, splits)
}

// splitKVArgs checks the arguments of a split-KV attention and returns the
// q-heads, the kv-heads and its first half's arguments (q, caches, partial |
// T, Hq, Hkv, D, capacity, kvLen, splits, scale).
func splitKVArgs(c *Ctx, q, kCache, vCache, out, partial Tensor, kvLen int, scale float32, splits int) (hq, hkv int, args []backend.Arg) {
	if !(len(q.Shape) == 3 && len(kCache.Shape) == 3) {
		fail("attention: q %v cache %v", q, kCache)
	}
	t, d := q.Shape[0], q.Shape[2]
	hq, hkv = q.Shape[1], kCache.Shape[0]
	capacity := kCache.Shape[1]
	if !(hq%hkv == 0 && kCache.Shape[2] == d && out.Elements() == q.Elements()) {
		fail("attention: q %v cache %v out %v", q, kCache, out)
	}
	if !(kvLen >= t && kvLen <= capacity && splits >= 1) {
		fail("attention: kvLen %d for %d queries, capacity %d, %d splits", kvLen, t, capacity, splits)
	}
	checkDType("attention partial", partial, backend.F32)
	if partial.Elements() != t*hq*splits*(d+2) {
		fail("attention: partial %v for %d splits", partial, splits)
	}
	return hq, hkv, append(c.args(q.Arg(), kCache.Arg(), vCache.Arg(), partial.Arg()),
		backend.Int(t), backend.Int(hq), backend.Int(hkv), backend.Int(d), backend.Int(capacity), backend.Int(kvLen),
		backend.Int(splits), backend.Float(scale))
}

// splitKVMerge is a split-KV attention's second half: the ranges' partial
// sums of each query and head into out.
func splitKVMerge(c *Ctx, q, out, partial Tensor, splits int) {
	c.dispatch("attention_merge_bf16", partial.Arg(), out.Arg(), backend.Int(q.Shape[0]), backend.Int(q.Shape[1]), backend.Int(q.Shape[2]), backend.Int(splits))
}

// AttentionSplitKVTiled is AttentionSplitKV with its first half on the
// matrix units (attention_split_mma_f32: a threadgroup a kv-head and range
// runs all the queries of the kv-head's q-heads), each query's keys cut into
// ranges of ⌈n/splits⌉ rounded up to whole blocks of the kernel's 32 keys (n
// its own keys): a query's bits do not depend on the launch's other queries.
// Use it where SplitKVTiledFits says.
func AttentionSplitKVTiled(c *Ctx, q, kCache, vCache, out, partial Tensor, kvLen int, scale float32, splits int) {
	hq, hkv, args := splitKVArgs(c, q, kCache, vCache, out, partial, kvLen, scale, splits)
	t, d := q.Shape[0], q.Shape[2]
	if !(t*hq <= hkv*flashRows && d <= flashMaxD) {
		fail("attention: %d queries × %d q-heads over %d kv-heads of %d: more than the tiled kernel takes", t, hq, hkv, d)
	}
	c.dispatch("attention_split_mma_f32", args...)
	splitKVMerge(c, q, out, partial, splits)
}

// SplitKVTiledFits says whether AttentionSplitKVTiled runs t queries of hq
// q-heads over hkv kv-heads of d values as tiles on c's device: FlashAttention
// holds, and a kv-head's rows (t · hq/hkv) fit one threadgroup's FA_BQ.
func SplitKVTiledFits(c *Ctx, t, hq, hkv, d int) bool {
	return hkv > 0 && hq%hkv == 0 && t*hq <= hkv*flashRows && FlashAttention(c, d)
}

var flashRows = kernels.Defines()["FA_BQ"]

// SplitKVSplits is how many ranges AttentionSplitKV cuts a cache of capacity
// keys into: about one per 64 keys of capacity, 2 to ATTN_MAX_SPLITS, 128 (a threadgroup per
// range and kv-head, serving all its q-heads: at 32K, 128 ranges of 256 keys
// for each of Qwen3.5-35B-A3B's two kv-heads). It depends on the capacity only,
// so a decode step launches the same grid at every length (a CUDA graph
// replays it); the range length grows with the context instead.
func SplitKVSplits(capacity int) int { return min(attnMaxSplits, max(2, capacity/64)) }

var attnMaxSplits = kernels.Defines()["ATTN_MAX_SPLITS"]

// SplitKVTiledSplits is how many ranges AttentionSplitKVTiled cuts a cache of
// capacity keys into: SplitKVSplits, at most splitKVTiledMaxSplits.
func SplitKVTiledSplits(capacity int) int { return min(splitKVTiledMaxSplits, SplitKVSplits(capacity)) }

// splitKVTiledMaxSplits bounds the tiled kernel's ranges lower than
// ATTN_MAX_SPLITS: a threadgroup of attention_split_mma_f32 loads all its
// kv-head's queries before its first key, so its ranges pay with more keys.
// H200, 35B-A3B shapes (two kv-heads), decode after 8K / 32K of context: 64
// ranges 2.27 / 2.61 GPU ms a token, 128: 2.35 / 2.70, 256: – / 2.92, 32: 2.33 /
// 3.02.
const splitKVTiledMaxSplits = 64

// SplitKVFits says whether AttentionSplitKV takes hq q-heads over hkv kv-heads:
// at most ATTN_MAX_GROUP q-heads per kv-head.
func SplitKVFits(hq, hkv int) bool { return hkv > 0 && hq%hkv == 0 && hq <= hkv*attnMaxGroup }

var attnMaxGroup = kernels.Defines()["ATTN_MAX_GROUP"]
