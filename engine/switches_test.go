package engine

import (
	"math"
	"testing"

	"bagel/internal/testmodel"
	"bagel/qwen"
	"bagel/switches"
)

// TestFusedPathsKeepTheBits loads each test model with every fused path on and
// with them off and compares the teacher-forced logits, prefill and decode:
// a fused kernel is the unfused sequence in one dispatch, bit for bit.
func TestFusedPathsKeepTheBits(t *testing.T) {
	ids := []int32{9707, 11, 1246, 525, 3555, 30, 2585, 374, 279, 6722}
	for _, name := range []string{"tiny-moe", "tiny-dense"} {
		logits := func(on bool) []float32 {
			for _, sw := range fusedSwitches {
				if err := switches.Set(sw, on); err != nil {
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
		switches.Set(sw, true)
	}
}

var fusedSwitches = []string{qwen.SwitchFusedAddNorm, qwen.SwitchFusedProjections, qwen.SwitchFusedExpertSwiGLU, qwen.SwitchFusedMoEDown}

// TestSplitKVAttentionAtLongContext decodes past 1024 tokens of context with
// split-KV attention on and off: the sums run in another order, so logits may
// differ by bf16 noise, no more.
func TestSplitKVAttentionAtLongContext(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	ids := make([]int32, 1030)
	for i := range ids {
		ids[i] = int32((i*7919 + 13) % 150000)
	}
	var dispatches [2]int64
	logits := func(on bool) []float32 {
		if err := switches.Set(qwen.SwitchSplitKV, on); err != nil {
			t.Fatal(err)
		}
		defer switches.Set(qwen.SwitchSplitKV, true)
		e, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 1100})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		out := scoreLogits(t, e, ids, 1020) // the last 10 positions decode one by one
		if on {
			dispatches[1] = e.Counters().Dispatches
		} else {
			dispatches[0] = e.Counters().Dispatches
		}
		return out
	}
	on, off := logits(true), logits(false)
	if dispatches[1] <= dispatches[0] {
		t.Errorf("%d dispatches with split-KV, %d without: the split path did not run", dispatches[1], dispatches[0])
	}
	worst := 0.0
	for i := range on {
		worst = math.Max(worst, math.Abs(float64(on[i]-off[i])))
	}
	if worst > 0.05 {
		t.Errorf("split-KV attention moves a logit by %g", worst)
	}
	t.Logf("largest logit difference, split-KV on vs off: %g", worst)
}
