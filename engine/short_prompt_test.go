package engine

import (
	"math"
	"testing"

	"bagel/internal/testmodel"
	"bagel/ops"
)

// TestVerifyWideSlicesOfAShortPrompt: a prompt too short for the prompt
// path and longer than a verify (17 to ops.PromptMinTokens−1 tokens, the
// step kernels) gives every position the logits its verify-wide slices of
// 16 tokens give, run one after the other, bit for bit, on the CPU and each
// GPU backend, the tiled GEMVs on and off. With them on, the experts' down
// projection takes such a prompt 16 tokens at a time (moe_down_mma_bf16,
// each slice its own rows) instead of a launch per token's expert
// (moe_down_bf16, which the CPU's references sum in the same order).
func TestVerifyWideSlicesOfAShortPrompt(t *testing.T) {
	n := ops.PromptMinTokens - 1
	if n <= ops.MoEDownTiledTokens {
		t.Skipf("no prompt between a verify's %d tokens and the prompt path's %d", ops.MoEDownTiledTokens, ops.PromptMinTokens)
	}
	dirs := map[string]string{"wide-moe": t.TempDir(), "tiny-moe": testmodel.Weights(t, "tiny-moe")}
	testmodel.WriteRandom(t, dirs["wide-moe"], wideMoE)
	for _, backendName := range append([]string{"cpu"}, gpuBackends()...) {
		for name, dir := range dirs {
			withTiledGEMV(t, backendName+"/"+name, func(t *testing.T) {
				e := loadGPU(t, dir, backendName, 64) // loads "cpu" as well; 64 keys: attention never splits
				ids := make([]int32, n)
				for i := range ids {
					ids[i] = int32((37*i + 11) % e.Config.VocabSize)
				}
				whole, err := e.forward(ids, true)
				if err != nil {
					t.Fatal(err)
				}
				if err := e.resetCache(); err != nil {
					t.Fatal(err)
				}
				var sliced []float32
				for r := 0; r < n; r += ops.MoEDownTiledTokens {
					part, err := e.forward(ids[r:min(n, r+ops.MoEDownTiledTokens)], true)
					if err != nil {
						t.Fatal(err)
					}
					sliced = append(sliced, part...)
				}
				differ, first := 0, -1
				for i := range whole {
					if math.Float32bits(whole[i]) != math.Float32bits(sliced[i]) {
						if differ++; first < 0 {
							first = i
						}
					}
				}
				if differ > 0 {
					vocab := e.Config.VocabSize
					t.Errorf("%d of %d logits differ from the slices' (first: position %d, id %d: %g against %g)",
						differ, len(whole), first/vocab, first%vocab, whole[first], sliced[first])
				}
			})
		}
	}
}
