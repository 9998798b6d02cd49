// Package reference is an independent forward pass of Qwen3.5 / Qwen3.6 MLX
// checkpoints (model_type qwen3_5 and qwen3_5_moe): the yardstick every path
// of the engine is measured against.
//
// It is written from the checkpoint format and the model's math (the MLX
// layout and forward of docs MLX_QWEN35.md, mlx-lm's qwen3_5.py and
// qwen3_next.py), not from Bagel's kernels: plain loops in float64, its own
// dequantizing, its own config reading. It never imports ops, a backend or
// the qwen package, so that a semantic choice shared by the kernels and the
// CPU oracle (a rounding, an order, a wrong group) cannot hide in it. It is
// slow on purpose: a few seconds for a tiny model's prompt.
//
// Rounding says where values are rounded to bfloat16:
//
//   - Exact: nowhere. Every value is a float64; weights are dequantized
//     exactly (scale·q + bias from the stored bf16 scales and biases).
//   - MLX: where MLX stores a bf16 array when it runs the model in bf16 (see
//     Rounding's constants): every op's output, the softmax of the router,
//     the recurrence's output, and not the f32 values MLX keeps (the GDN
//     state and decay, the attention's scores, accumulators).
//   - MLXPrompt: MLX, and each dequantized weight of a quantized matmul
//     rounded to bf16 before the product, as MLX's quantized GEMMs (qmm and
//     gather_qmm, which it runs for prompts) dequantize into bf16 tiles.
//
// The logits are never rounded (MLX's are bf16; Bagel's are f32, so the
// reference keeps them exact to compare top-1 choices without bf16 ties).
package reference
