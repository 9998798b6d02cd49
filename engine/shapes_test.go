package engine

import (
	"context"
	"math"
	"testing"

	"bagel/internal/testmodel"
)

// TestOtherShapesAndQuantizations loads random checkpoints whose dimensions and
// quantization differ from the committed test models' (no GQA, GDN without
// key-head sharing, Dk ≠ Dv, a conv kernel of 3, head_dim 128 and 64, 8-bit / gs
// 32, 3-bit / gs 128 with a 6-bit router, 16 experts top-3, a small vocabulary).
// Without a reference it checks what must hold for any checkpoint: the load
// succeeds from config.json alone, logits are finite and not flat, and prefill and
// token-by-token decode give the same logits.
func TestOtherShapesAndQuantizations(t *testing.T) {
	for name, spec := range otherSpecs {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			testmodel.WriteRandom(t, dir, spec)
			e, err := Load(dir, Options{Backend: "cpu", ContextLength: 64})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			all := scoreLogits(t, e, otherIDs, len(otherIDs))
			split := scoreLogits(t, e, otherIDs, 3)
			var spread float64
			for i := range all {
				if math.IsNaN(float64(all[i])) || math.IsInf(float64(all[i]), 0) {
					t.Fatalf("logit %d is %v", i, all[i])
				}
				if all[i] != split[i] {
					t.Fatalf("logit %d: %v in one prefill, %v with decode steps", i, all[i], split[i])
				}
				spread = math.Max(spread, math.Abs(float64(all[i]-all[0])))
			}
			if spread < 1e-3 {
				t.Fatalf("logits are flat (spread %g)", spread)
			}
			got, _, done := collect(t, e.Generate(context.Background(), Request{PromptIDs: otherIDs, MaxTokens: 4}))
			if len(got) == 0 || done.Reason == "" {
				t.Fatalf("generate: %v, reason %q", got, done.Reason)
			}
		})
	}
}

var otherIDs = []int32{5, 17, 3, 99, 42, 7, 7, 300, 1, 64, 250, 11}

var otherSpecs = map[string]testmodel.Spec{
	"dense-8bit-gs32": {ModelType: "qwen3_5", Hidden: 96, Layers: 3, Interval: 3, Heads: 3, KVHeads: 3, HeadDim: 128,
		Hk: 2, Hv: 2, Dk: 128, Dv: 32, ConvKernel: 3, Intermediate: 160, Vocab: 1000, Bits: 8, GroupSize: 32, Tied: true},
	"moe-3bit-gs128": {ModelType: "qwen3_5_moe", Hidden: 128, Layers: 2, Interval: 2, Heads: 4, KVHeads: 1, HeadDim: 64,
		Hk: 1, Hv: 4, Dk: 64, Dv: 64, ConvKernel: 4, Experts: 16, TopK: 3, MoEInter: 128, Share: 128, Vocab: 512,
		Bits: 3, GroupSize: 128, RouterBits: 6},
}
