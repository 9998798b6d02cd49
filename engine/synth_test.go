package engine

import (
	"math"
	"path/filepath"
	"testing"

	"bagel/synth"
)

// TestSynthCheckpointLoads loads a sharded synthetic checkpoint (bagel synth's
// output: several shards and model.safetensors.index.json) like a real one and
// checks its logits are finite and not flat.
func TestSynthCheckpointLoads(t *testing.T) {
	shape := synth.Shape{
		ModelType: "qwen3_5_moe", Hidden: 128, Layers: 4, Interval: 4, Heads: 2, KVHeads: 1, HeadDim: 64,
		Hk: 2, Hv: 4, Dk: 32, Dv: 32, ConvKernel: 4, Experts: 8, TopK: 2, MoEInter: 64, SharedInter: 64,
		Vocab: 512, RopeTheta: 1e7, PartialRotary: 0.25, MaxPosition: 4096,
	}
	dir := t.TempDir()
	if err := synth.Write(dir, synth.Options{Shape: shape, Quant: synth.DefaultQuant, ShardBytes: 256 << 10, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "model-*-of-*.safetensors")); len(m) < 2 {
		t.Fatalf("%d shards, want several", len(m))
	}
	e, err := Load(dir, Options{Backend: "cpu", ContextLength: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	logits := scoreLogits(t, e, []int32{1, 2, 3, 500}, 4)
	var spread float64
	for i, v := range logits {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("logit %d is %v", i, v)
		}
		spread = math.Max(spread, math.Abs(float64(v-logits[0])))
	}
	if spread < 1e-3 {
		t.Fatalf("logits are flat (spread %g)", spread)
	}
}
