package engine

import (
	"bagel/ops"
	"bagel/switches"
)

// The kernel plan's switches (ops.Plan): the fused and matrix-unit paths of
// the forward pass. Each is read at model load into the model's plan
// (currentPlan), which the semantic ops consult; off runs the unfused ops,
// which stay as the reference: fused and unfused give the same bits on the
// CPU backend (the engine's tests hold them to it).
const (
	// SwitchFusedAddNorm joins each residual add with the RMSNorm after it
	// (add_rms_norm_bf16): two dispatches fewer per layer.
	SwitchFusedAddNorm = "fused-add-norm"
	// SwitchFusedProjections runs the projections that read the same x as one
	// launch (qmatmul_multi_bf16): GDN qkv/z/b/a, attention q/k/v, the MoE
	// router with the shared expert's gate, up and scalar gate, the dense MLP's
	// gate and up.
	SwitchFusedProjections = "fused-projections"
	// SwitchFusedExpertSwiGLU computes the experts' gate and up projections and
	// SwiGLU in one launch (qmatmul_gather_swiglu_bf16).
	SwitchFusedExpertSwiGLU = "fused-expert-swiglu"
	// SwitchFusedGDNConv runs a decode step's GDN in-projection and its conv
	// in one launch (qmatmul_multi_conv_bf16: the lane of a channel runs the
	// conv step on its projection): one launch fewer per GDN layer. With
	// tiled-gemv, a speculative verify's too (qmatmul_mma_multi_conv_bf16, up
	// to 16 tokens, keeping the projections for a rollback's replay).
	SwitchFusedGDNConv = "fused-gdn-conv"
	// SwitchFusedGDNConvBatch runs a batched step's GDN in-projection and its
	// sequences' convs in one launch (qmatmul_mma_multi_conv_batch_bf16, on
	// the tiled GEMVs a model loaded for several replies takes): one launch
	// fewer per GDN layer and step.
	SwitchFusedGDNConvBatch = "fused-gdn-conv-batch"
	// SwitchFusedMoEDown runs the experts' down projections, their weighted sum,
	// the shared expert's down projection and its gate in one launch (moe_down_bf16).
	SwitchFusedMoEDown = "fused-moe-down"
	// SwitchFusedAttnPrep runs the attention preamble (q/gate split, q and k
	// norms, RoPE, the KV append) in one launch (attn_prep_bf16).
	SwitchFusedAttnPrep = "fused-attention-prep"
	// SwitchSplitKV spreads decode attention over a long context across many
	// threadgroups (attention_split_f32 + attention_merge_bf16).
	SwitchSplitKV = "split-kv-attention"
	// SwitchPrefillGEMM runs the projections of a forward over many tokens (a
	// prompt) as GEMMs on the matrix units (qgemm_bf16) and the experts as
	// grouped GEMMs over the tokens sorted by expert (moe_sort_i32,
	// qgemm_gather_bf16), instead of one GEMV per token, and the GDN rule
	// chunk by chunk (gdn_chunk_bf16) instead of token by token.
	SwitchPrefillGEMM = "prefill-gemm"
	// SwitchPrefillExactWeights has the prompt GEMMs take every weight
	// exactly, as the decode path's GEMVs do (on CUDA each weight as two
	// bf16 parts: twice the matrix products), so a prompt's logits are as
	// close to an exact forward as a decode step's. Off, each weight is
	// rounded to bf16 first, as MLX's quantized GEMM does: faster prompts
	// (H200, 35B-A3B, prefill of 2048: 18.3k against 15.8–16.3k tok/s,
	// docs/benchmarks.md, seventeenth session), and a prompt's first layer
	// 6–10% further from the exact forward than a decode step's
	// (docs/numerics.md).
	SwitchPrefillExactWeights = "prefill-exact-weights"
	// SwitchPrefillMultiGEMM runs a prompt's projections of one input that
	// take GEMMs in one launch (qgemm_multi_bf16): the small ones (the shared
	// expert's gate and up, the attention's k and v) fill the GPU together
	// (H200, 35B-A3B: prefill 2048 GPU 248 against 259 ms).
	SwitchPrefillMultiGEMM = "prefill-multi-gemm"
	// SwitchPrefillSplitAttention runs a prompt's attention (32 tokens and
	// more) on the split-KV kernels, which read each kv-head's keys and values
	// once for all its q-heads, instead of attention_bf16, which reads them once
	// per q-head and query (H200, 35B-A3B shapes: prefill 2048 GPU 263 against
	// 280 ms, 512: 64 against 67).
	SwitchPrefillSplitAttention = "prefill-split-attention"
	// SwitchPrefillFlashAttention runs a prompt's attention (32 tokens and
	// more) as flash attention on the matrix units (attention_flash_bf16:
	// tiles of 64 queries over blocks of 32 keys) where the device has them
	// (CUDA sm_80+; the CPU backend, which runs the reference), before the
	// split-KV kernels, which read the keys again for every query.
	SwitchPrefillFlashAttention = "prefill-flash-attention"
	// SwitchSplitKVTiled runs split-KV decode attention's first half on the
	// matrix units (attention_split_mma_f32: a threadgroup a kv-head and range
	// takes all its q-heads' queries) where the device has them (CUDA sm_80+,
	// and the CPU, which runs the reference), for steps of up to 64 rows a
	// kv-head (decode, short verifies).
	SwitchSplitKVTiled = "split-kv-tiled"
	// SwitchTiledGEMV runs the GEMVs of decode steps and verifies (the
	// projections of each mixer and of the shared expert, the output
	// projections, the logits, and the routed and shared experts' MLPs) on
	// the matrix units (qmatmul_mma_bf16, qmatmul_mma_multi_bf16,
	// moe_up_mma_bf16, moe_down_mma_bf16) where the device has them and the
	// weights are 4-bit in groups of 64 or 128: a verify's tokens share each
	// weight's dequantizing, and an expert's rows are read once for the
	// tokens routed to it.
	// Off by default: it pays with speculative decoding and costs a plain
	// decode step (H200, 35B-A3B, docs/history/benchmarks-2026-12.md, sixteenth session,
	// medians of three rounds: oracle drafts of 4 at 1586 tok/s against 878
	// without it, a verify of 5 tokens 3.12 ms against 5.63; plain decode
	// 404 against 495 tok/s).
	SwitchTiledGEMV = "tiled-gemv"
	// SwitchTiledExperts runs the experts' gate, up and down of decode steps
	// and verifies on the matrix units (moe_up_mma_bf16, moe_down_mma_bf16:
	// an expert's rows read once for the tokens routed to it in a launch),
	// with tiled-gemv or without. Off by default: where a step's tokens route apart, as
	// a real model's replies and a verify's tokens do, each tile of those
	// kernels serves one slot and their plain kernels are faster (H100, the
	// 35B-A3B's shapes, a synthetic checkpoint that routes apart, forty-first
	// and forty-second sessions: 1 / 4 / 8 replies all decoding 449.6 /
	// 1,044.8 / 1,403.5 tok/s against 414.4 / 941.1 / 1,294.4; a lone reply's
	// oracle drafts of 4 830.9 against 732.6; docs/batching.md). A lone
	// reply's short prompt (short-prompt-tiled) keeps the tiled experts: a
	// prompt's tokens share experts.
	SwitchTiledExperts = "tiled-experts"
	// SwitchShortPromptTiled runs a prompt's chunk too short for the prompt
	// path (2 to 31 tokens: a follow-up message, a chunk's tail; up to 71 on
	// a MoE whose experts take the tiled kernels, ops.TiledPromptMinTokens)
	// on the tiled GEMVs where the device has them, though decode steps keep
	// the plain GEMV (engine.promptKernels). The plain GEMV runs every row's dot
	// products on its own, the experts' down projection a launch per token's
	// expert: on an H100 a lone reply's prompt of 31 / 24 / 8 tokens took
	// 26.6 / 21.7 / 10.1 ms to its first token, 11.0 / 10.0 / 6.6 with the
	// switch, decode unchanged (docs/benchmarks.md, twenty-seventh session).
	// A verify keeps the decode step's kernels (its logits must be
	// the steps'); a batched reply's chunk takes a lone reply's kernels.
	// On the CPU, whose tiled kernels are the references of the GPUs' (the
	// paths are tested there), it is off unless chosen: they ran slower than
	// its plain ones (2 cores, the 35B-A3B's shapes with 16 experts: a prompt
	// of 24 / 48 tokens 23.1 / 33.2 s to its first token against 17.9 / 25.3,
	// twenty-eighth session).
	SwitchShortPromptTiled = "short-prompt-tiled"
)

func init() {
	for _, s := range []switches.Switch{
		{Name: SwitchFusedAddNorm, Env: "BAGEL_NO_FUSED_ADD_NORM",
			Description: "Fuse each residual add with the RMSNorm that follows it (applies at the next model load)."},
		{Name: SwitchFusedProjections, Env: "BAGEL_NO_FUSED_PROJECTIONS",
			Description: "Run the projections that read the same input as one launch (applies at the next model load)."},
		{Name: SwitchFusedExpertSwiGLU, Env: "BAGEL_NO_FUSED_EXPERT_SWIGLU",
			Description: "Compute the experts' gate and up projections and SwiGLU in one launch (applies at the next model load)."},
		{Name: SwitchFusedGDNConv, Env: "BAGEL_NO_FUSED_GDN_CONV",
			Description: "Run a decode step's Gated DeltaNet in-projection and conv in one launch, and with tiled-gemv a speculative verify's (applies at the next model load)."},
		{Name: SwitchFusedGDNConvBatch, Env: "BAGEL_NO_FUSED_GDN_CONV_BATCH", Backends: []string{"cuda", "cpu"},
			Description: "Run a batched step's Gated DeltaNet in-projection and every reply's conv in one launch, on the matrix-unit GEMVs (several replies at once; CUDA sm_80+ and CPU; applies at the next model load)."},
		{Name: SwitchFusedMoEDown, Env: "BAGEL_NO_FUSED_MOE_DOWN",
			Description: "Run the experts' down projections with their weighted sum and the shared expert's in one launch (applies at the next model load)."},
		{Name: SwitchFusedAttnPrep, Env: "BAGEL_NO_FUSED_ATTENTION_PREP",
			Description: "Run the attention layers' preamble (query split, norms, rotary embedding, cache append) in one launch (applies at the next model load)."},
		{Name: SwitchSplitKV, Env: "BAGEL_NO_SPLIT_KV_ATTENTION",
			Description: "Split decode attention over a long context (1024 keys and more) across many threadgroups (applies at the next model load)."},
		{Name: SwitchPrefillGEMM, Env: "BAGEL_NO_PREFILL_GEMM",
			Description: "Run prompts of 32 tokens and more (72 on a MoE model whose shorter prompts take the tiled GEMVs) as matrix multiplications on the matrix units, experts grouped by token (applies at the next model load)."},
		{Name: SwitchPrefillExactWeights, Env: "BAGEL_NO_PREFILL_EXACT_WEIGHTS",
			Description: "Run a prompt's matrix multiplications with every weight exact, as decoding does (off: each weight rounded to bf16 first, as MLX does, about 15% faster prompts on an H200; applies at the next model load)."},
		{Name: SwitchPrefillMultiGEMM, Env: "BAGEL_NO_PREFILL_MULTI_GEMM",
			Description: "Run a prompt's projections of one input as one launch of GEMMs (applies at the next model load)."},
		{Name: SwitchPrefillFlashAttention, Env: "BAGEL_NO_PREFILL_FLASH_ATTENTION", Backends: []string{"cuda", "cpu"},
			Description: "Run a prompt's attention as flash attention on the matrix units, tiles of queries over blocks of keys (CUDA sm_80+ and CPU; applies at the next model load)."},
		{Name: SwitchSplitKVTiled, Env: "BAGEL_NO_SPLIT_KV_TILED", Backends: []string{"cuda", "cpu"},
			Description: "Run split decode attention over a long context on the matrix units, a threadgroup for all the query heads of a key-value head (CUDA sm_80+ and CPU; applies at the next model load)."},
		{Name: SwitchTiledGEMV, Env: "BAGEL_TILED_GEMV", Backends: []string{"cuda", "cpu"}, Verifies: true,
			Description: "Run the 4-bit projections, experts and logits of decode steps on the matrix units, each weight dequantized once for all of a speculative verify's tokens: faster speculative decoding, a slower plain decode step (experimental; CUDA sm_80+ and CPU; applies at the next model load)."},
		{Name: SwitchTiledExperts, Env: "BAGEL_TILED_EXPERTS", Backends: []string{"cuda", "cpu"},
			Description: "Run the experts' projections of decode steps and verifies on the matrix units, an expert's rows read once for all the tokens routed to it (off: their plain kernels, the faster where replies route to different experts; CUDA sm_80+ and CPU; applies at the next model load)."},
		{Name: SwitchShortPromptTiled, Env: "BAGEL_NO_SHORT_PROMPT_TILED", Backends: []string{"cuda", "cpu"},
			Description: "Run a prompt of fewer than 32 tokens (a short message, a long prompt's last chunk; fewer than 72 on a MoE model whose experts take them) on the matrix-unit GEMVs of tiled-gemv, though decoding keeps the plain ones (CUDA sm_80+; on the CPU only when chosen, where it runs the slower references; applies at the next model load)."},
		{Name: SwitchPrefillSplitAttention, Env: "BAGEL_NO_PREFILL_SPLIT_ATTENTION",
			Description: "Run a prompt's attention on the split-KV kernels, each kv-head's keys read once for all its query heads (applies at the next model load)."},
	} {
		s.Default = s.Name != SwitchTiledGEMV && s.Name != SwitchTiledExperts
		switches.Register(s)
	}
}

// currentPlan is the kernel plan the switches give now, for a model about to
// load.
func currentPlan() ops.Plan {
	return ops.Plan{
		AddNorm:          switches.On(SwitchFusedAddNorm),
		Projections:      switches.On(SwitchFusedProjections),
		ExpertSwiGLU:     switches.On(SwitchFusedExpertSwiGLU),
		GDNConv:          switches.On(SwitchFusedGDNConv),
		GDNConvBatch:     switches.On(SwitchFusedGDNConvBatch),
		MoEDown:          switches.On(SwitchFusedMoEDown),
		AttnPrep:         switches.On(SwitchFusedAttnPrep),
		SplitKV:          switches.On(SwitchSplitKV),
		PrefillGEMM:      switches.On(SwitchPrefillGEMM),
		PrefillSplit:     switches.On(SwitchPrefillSplitAttention),
		PrefillFlash:     switches.On(SwitchPrefillFlashAttention),
		SplitKVTiled:     switches.On(SwitchSplitKVTiled),
		MultiGEMM:        switches.On(SwitchPrefillMultiGEMM),
		ExactGEMM:        switches.On(SwitchPrefillExactWeights),
		TiledGEMV:        switches.On(SwitchTiledGEMV),
		TiledExperts:     switches.On(SwitchTiledExperts),
		ShortPromptTiled: switches.On(SwitchShortPromptTiled),
	}
}

// TiledGEMV tells whether the loaded model's decode GEMVs run on the matrix
// units: the tiled-gemv switch, or several replies at once on CUDA
// (Options.Replies).
func (e *Engine) TiledGEMV() bool { return e.ctx.Plan.TiledGEMV }
