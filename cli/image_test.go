package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bagel/synth"
)

// tinyVisionModel writes a small model with a small vision tower (two
// blocks of 64) and a processor of 2048 to 9216 pixels: its image pad is
// token 253 (vision start 251, end 252).
func tinyVisionModel(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s := synth.Shape{ModelType: "qwen3_5", Hidden: 64, Layers: 2, Interval: 2, Heads: 2, KVHeads: 1, HeadDim: 32,
		Hk: 2, Hv: 2, Dk: 32, Dv: 32, ConvKernel: 4, Intermediate: 128, Vocab: 256, Tied: true, RopeTheta: 1e6,
		PartialRotary: 0.25, Vision: &synth.VisionShape{Depth: 2, Hidden: 64, Intermediate: 128, Heads: 4,
			Patch: 16, Temporal: 2, Merge: 2, Positions: 64}}
	if err := synth.Write(dir, synth.Options{Shape: s, Quant: synth.Quant{Bits: 4, GroupSize: 32}, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	pre, _ := json.Marshal(map[string]any{"patch_size": 16, "temporal_patch_size": 2, "merge_size": 2,
		"size": map[string]int{"shortest_edge": 2048, "longest_edge": 9216}})
	if err := os.WriteFile(filepath.Join(dir, "preprocessor_config.json"), pre, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestScoreWithAnImage: bagel score expands the ids' image pad into the
// image's six tokens (big.png: 96×64 pixels, 2×3 merged patches) and prints
// a position for each; a missing file, pads that do not match the images
// and an image for a text model are refused by name.
func TestScoreWithAnImage(t *testing.T) {
	dir := tinyVisionModel(t)
	img := filepath.Join("..", "testdata", "vision", "big.png")
	code, out, errOut := runCLI("score", "-m", dir, "--backend", "cpu", "--ids", "5,17,251,253,252,40", "--image", img, "--top", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if lines := strings.Count(out, "\n"); lines != 11 {
		t.Errorf("%d positions printed, want 11 (6 ids, the pad expanded into 6 tokens)", lines)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"score", "-m", dir, "--backend", "cpu", "--ids", "5,17,253,40", "--image", "missing.png"}, "missing.png"},
		{[]string{"score", "-m", dir, "--backend", "cpu", "--ids", "5,17,40", "--image", img}, "0 image pads (token 253) for 1 images"},
		{[]string{"score", "-m", dir, "--backend", "cpu", "--ids", "5,253,253,40", "--image", img}, "2 image pads (token 253) for 1 images"},
		{[]string{"generate", "-m", dir, "--backend", "cpu", "--image", img, "hi"}, "no tokenizer.json"},
	} {
		code, _, errOut := runCLI(c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want an error naming %q", c.args, code, errOut, c.want)
		}
	}
}
