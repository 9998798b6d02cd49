package engine

import (
	"testing"

	"bagel/feature"
	"bagel/internal/testmodel"
	"bagel/qwen"
)

// TestFusedPathsKeepTheBits loads each test model with every fused path on and
// with them off and compares the teacher-forced logits, prefill and decode:
// a fused kernel is the unfused sequence in one dispatch, bit for bit.
func TestFusedPathsKeepTheBits(t *testing.T) {
	ids := []int32{9707, 11, 1246, 525, 3555, 30, 2585, 374, 279, 6722}
	for _, name := range []string{"tiny-moe", "tiny-dense"} {
		logits := func(on bool) []float32 {
			for _, sw := range fusedSwitches {
				if err := feature.Set(sw, on); err != nil {
					t.Fatal(err)
				}
			}
			e, err := Load(testmodel.Weights(t, name), Options{Backend: "cpu", ContextLength: 32})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			return scoreLogits(t, e, ids, 6)
		}
		off := logits(false)
		on := logits(true)
		for i := range on {
			if on[i] != off[i] {
				t.Fatalf("%s: logit %d is %v fused, %v unfused", name, i, on[i], off[i])
			}
		}
	}
	for _, sw := range fusedSwitches {
		feature.Set(sw, true)
	}
}

var fusedSwitches = []string{qwen.SwitchFusedAddNorm, qwen.SwitchFusedProjections, qwen.SwitchFusedExpertSwiGLU}
