package ops

// The choice of attention launches (Attend) and the scratch its split paths
// take (SplitPartial, PromptPartial).

// Split-KV attention serves decode (and the few queries of a speculative
// verify) once the context is long enough that one threadgroup per head would
// idle the GPU; below splitKVMinContext keys, and for prefill, the one-kernel
// attention keeps prefill and decode bit-identical. That happens early: at
// the 35B-A3B's shapes (16 q-heads) attention_bf16 took 15 µs a layer at 155
// keys, and with a threshold of 1024 decode after 512 tokens ran at 359.6
// tok/s (GPU 2.77 ms a token) against 472 (2.10) from 128 keys on (H200,
// `bagel bench --long 128,256,512,1000,2000`); 256 left 128–255 keys slow.
// Measured on CUDA only: on a Mac, whose GPU has fewer cores for the 16
// threadgroups to fill, the best threshold may be higher (never run there).
const (
	splitKVMaxQueries = 16
	splitKVMinContext = 128
)

// promptPartialBytes bounds the prompt path's split-KV partials.
const promptPartialBytes = 64 << 20

// prefillSplits is how many ranges a prompt of t tokens cuts each query's keys
// into on the split-KV path: one per 4096 keys of capacity, 1 to 4, and fewer
// where the partials (t·hq·splits·(d+2) floats: 34 MB for a chunk of 512 at the
// 35B-A3B's heads and 4 ranges) would pass promptPartialBytes. A prompt has
// many queries already, so few ranges fill the GPU.
func prefillSplits(capacity, t, hq, d int) int {
	per := max(1, t*hq*(d+2)*4)
	return max(1, min(4, capacity/4096, promptPartialBytes/per))
}

// SplitPartial takes, from a forward's scratch, split-KV decode attention's
// f32 partials [splitKVMaxQueries, hq, splits, d+2] where the plan splits
// decode attention and the forward has at most splitKVMaxQueries tokens (cut
// to t by Attend); a zero Tensor otherwise. It is taken at its full size
// whatever t, so that a verify after decode steps does not grow the buffer
// and move the steps' addresses (the CUDA graph would be captured again).
func SplitPartial(c *Ctx, t, capacity, hq, d int) Tensor {
	if !c.Plan.SplitKV || t > splitKVMaxQueries {
		return Tensor{}
	}
	return c.Scratch.Get("forward.split_partial", F32, splitKVMaxQueries, hq, SplitKVSplits(capacity), d+2)
}

// PromptPartial takes the prompt path's split-KV partials, f32 [t, hq,
// splits, d+2], where the plan runs a prompt's attention on the split-KV
// kernels (not as flash attention); a zero Tensor for any other forward.
func PromptPartial(c *Ctx, t, capacity, hq, d int) Tensor {
	if !c.Plan.PrefillSplit || promptFlash(c, d) || !Prompt(c, t) {
		return Tensor{}
	}
	return c.Scratch.Get("forward.prompt_partial", F32, t, hq, prefillSplits(capacity, t, hq, d), d+2)
}

// promptFlash reports whether a prompt's attention runs as AttentionFlash.
func promptFlash(c *Ctx, d int) bool { return c.Plan.PrefillFlash && FlashAttention(c, d) }

// Attend computes causal attention of q bf16 [T, Hq, D] (at positions kvLen−T..)
// over the cache's first kvLen keys and values [Hkv, capacity, D] into out
// [T, Hq, D], scaled by scale. The plan picks: decode past splitKVMinContext
// keys split across threadgroups (on the matrix units with SplitKVTiled; a
// verify's queries each as its decode step, those of fewer keys unsplit); a
// prompt as flash attention on the matrix units, else on the split-KV kernels
// (each kv-head's keys read once for its q-heads); else one threadgroup a
// head. partial and promptPartial are SplitPartial's and PromptPartial's.
func Attend(c *Ctx, q, keys, values, out Tensor, kvLen int, scale float32, partial, promptPartial Tensor) {
	t, hq, hkv, d := q.Shape[0], q.Shape[1], keys.Shape[0], q.Shape[2]
	split, tiled, splits := decodeSplit(c, partial, hq, hkv, d, keys.Shape[1])
	switch {
	case split && kvLen >= splitKVMinContext:
		if below := splitKVMinContext - (kvLen - t + 1); below > 0 {
			// A verify across the threshold: its queries of fewer keys take
			// the one-kernel attention their decode steps took, so that each
			// keeps its step's bits (AttendBatch splits its rows alike).
			Attention(c, q.Rows(0, below), keys, values, out.Rows(0, below), kvLen-t+below, scale)
			q, out, t = q.Rows(below, t), out.Rows(below, t), t-below
		}
		if !tiled {
			AttentionSplitKV(c, q, keys, values, out, View(partial, 0, F32, []int{t, hq, splits, d + 2}), kvLen, scale, splits)
			return
		}
		// As many queries a launch as the tiled kernel takes (each query's
		// ranges and bits are its own, whatever the launch's others).
		per := hkv * flashRows / hq
		for r := 0; r < t; r += per {
			e := min(t, r+per)
			part := View(partial, 0, F32, []int{e - r, hq, splits, d + 2})
			AttentionSplitKVTiled(c, q.Rows(r, e), keys, values, out.Rows(r, e), part, kvLen-t+e, scale, splits)
		}
	case c.Plan.PrefillFlash && (Prompt(c, t) || wideStep(t, kvLen)) && FlashAttention(c, d):
		// A prompt on the matrix units: a tile of queries reads a key once.
		AttentionFlash(c, q, keys, values, out, kvLen, scale)
	case promptPartial.Buf != nil && SplitKVFits(hq, hkv):
		// A prompt: each kv-head's keys and values are read once for all its
		// q-heads, where attention_bf16 reads them once per q-head and query.
		AttentionSplitKV(c, q, keys, values, out, promptPartial, kvLen, scale, promptPartial.Shape[2])
	default:
		Attention(c, q, keys, values, out, kvLen, scale)
	}
}

// wideStep says whether a forward of t tokens under the prompt path (a
// short prompt's chunk on the step kernels: wider than any verify, which
// keeps the step's attention) runs its attention as a prompt's, flash
// attention, past splitKVMinContext keys: attention_bf16 reads every key
// once per query and head, 71 × 16 times a layer for a follow-up of 71
// tokens (about 19 GB at 32K keys, at the 35B-A3B's heads), where a tile of
// queries reads it once.
func wideStep(t, kvLen int) bool { return t > splitKVMaxQueries && kvLen >= splitKVMinContext }

// decodeSplit says how the plan runs the attention of a decode step's query
// past splitKVMinContext keys, and so each of a verify's few (partial is
// SplitPartial's): split across threadgroups or not, on the matrix units
// (tiled) or not, and into how many ranges of a cache of capacity keys.
// Attend and AttendBatch both ask it, so a verify's and a batched row's
// queries take a lone query's kernel.
func decodeSplit(c *Ctx, partial Tensor, hq, hkv, d, capacity int) (split, tiled bool, splits int) {
	switch {
	case partial.Buf == nil || !SplitKVFits(hq, hkv):
		return false, false, 0
	case c.Plan.SplitKVTiled && SplitKVTiledFits(c, 1, hq, hkv, d):
		return true, true, SplitKVTiledSplits(capacity)
	}
	return true, false, SplitKVSplits(capacity)
}

// AttnPreamble is attention's preamble for T tokens at cache rows pos0..,
// rotated at positions pos0 + shift..: qp bf16 [T, Hq, 2D] split into the
// query (normed by qNorm, rotated) and its gate, k normed by kNorm and
// rotated, and k and v appended to the cache at pos0. One launch where the
// plan fuses it (attn_prep_bf16).
func AttnPreamble(c *Ctx, qp, k, v, qNorm, kNorm, q, gate, keys, values Tensor, rotaryDims, pos0, shift int, theta, eps float32) {
	if c.Plan.AttnPrep && q.Shape[2] <= AttnPrepMaxD {
		AttnPrep(c, qp, k, v, qNorm, kNorm, q, gate, keys, values, rotaryDims, pos0, shift, theta, eps)
		return
	}
	SplitQGate(c, qp, q, gate)
	RMSNorm(c, q, qNorm, q, eps)
	RMSNorm(c, k, kNorm, k, eps)
	RoPE(c, q, rotaryDims, pos0+shift, theta)
	RoPE(c, k, rotaryDims, pos0+shift, theta)
	KVAppend(c, k, v, keys, values, pos0)
}
