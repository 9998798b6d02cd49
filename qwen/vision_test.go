package qwen

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bagel/synth"
)

// tinyVisionShape is a small model with a small tower (two blocks of 64).
func tinyVisionShape() synth.Shape {
	return synth.Shape{ModelType: "qwen3_5", Hidden: 64, Layers: 2, Interval: 2, Heads: 2, KVHeads: 1, HeadDim: 32,
		Hk: 2, Hv: 2, Dk: 32, Dv: 32, ConvKernel: 4, Intermediate: 128, Vocab: 256, Tied: true, RopeTheta: 1e6,
		PartialRotary: 0.25, Vision: &synth.VisionShape{Depth: 2, Hidden: 64, Intermediate: 128, Heads: 4,
			Patch: 16, Temporal: 2, Merge: 2, Positions: 64}}
}

// TestVisionStatus: a checkpoint with a tower that fits its vision_config is
// said to have one; a text-only conversion that keeps the config, a tower
// whose width does not meet the text model's, and a tower missing a tensor
// are each said so; a model with neither is text only. The text model loads
// in every case.
func TestVisionStatus(t *testing.T) {
	write := func(s synth.Shape, edit func(dir string, cfg map[string]any)) string {
		dir := t.TempDir()
		if err := synth.Write(dir, synth.Options{Shape: s, Quant: synth.Quant{Bits: 4, GroupSize: 32}, Workers: 1}); err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			data, _ := os.ReadFile(filepath.Join(dir, "config.json"))
			var cfg map[string]any
			json.Unmarshal(data, &cfg)
			edit(dir, cfg)
			data, _ = json.Marshal(cfg)
			os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644)
		}
		return dir
	}
	textOnly := tinyVisionShape()
	textOnly.Vision = nil
	declared := func(dir string, cfg map[string]any) {
		cfg["vision_config"] = map[string]any{"depth": 2, "hidden_size": 64, "intermediate_size": 128, "num_heads": 4,
			"patch_size": 16, "temporal_patch_size": 2, "spatial_merge_size": 2, "num_position_embeddings": 64}
	}
	for _, c := range []struct {
		name    string
		dir     string
		present bool
		want    string
	}{
		{"tower", write(tinyVisionShape(), nil), true, "a vision tower of 2 blocks, 64 wide"},
		{"text only", write(textOnly, nil), false, "no vision tower"},
		{"config kept, tower dropped", write(textOnly, declared), false, "holds none of its tensors"},
		{"wrong width", write(tinyVisionShape(), func(_ string, cfg map[string]any) {
			cfg["vision_config"].(map[string]any)["out_hidden_size"] = 128
		}), false, "out_hidden_size 128, but the text model is 64 wide"},
		{"deeper than its tensors", write(tinyVisionShape(), func(_ string, cfg map[string]any) {
			cfg["vision_config"].(map[string]any)["depth"] = 3
		}), false, "lacks vision_tower.blocks.2.norm1.weight"},
		{"image token past the vocabulary", write(tinyVisionShape(), func(_ string, cfg map[string]any) {
			delete(cfg, "image_token_id") // Qwen3.5's 248056, past this model's 256
		}), false, "image_token_id 248056 is outside the vocabulary"},
		{"broken mrope_section", write(tinyVisionShape(), func(_ string, cfg map[string]any) {
			cfg["text_config"].(map[string]any)["rope_parameters"].(map[string]any)["mrope_section"] = []int{11, 11}
		}), false, "mrope_section is [11 11], want three numbers"},
	} {
		cfg, ck, err := Open(c.dir)
		if err != nil {
			t.Fatalf("%s: the text model does not open: %v", c.name, err)
		}
		present, status := VisionStatus(cfg, ck)
		if present != c.present || !strings.Contains(status, c.want) {
			t.Errorf("%s: %v %q, want %v %q", c.name, present, status, c.present, c.want)
		}
		ck.Close()
	}
}
