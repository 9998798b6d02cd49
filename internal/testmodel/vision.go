package testmodel

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"bagel/synth"
)

// VisionSpec is a small model with a small vision tower (64 wide, four heads
// of 16, an MLP of 128, an 8×8 position table, patches of 16 merged 2×2).
// Zero fields take the defaults: two blocks, a vocabulary of 256 (its image
// pad 253, vision start 251, end 252), rotary base 1e6 over a quarter of
// the heads, a processor of 2048 to 9216 pixels.
type VisionSpec struct {
	Depth, Vocab           int
	RopeTheta, PartialRoPE float64
	MaxPixels              int
	// QwenTokens writes Qwen2-VL's image token ids (151655, 151652,
	// 151653: the test tokenizer's) and its <|im_end|> as the end of
	// sequence, for a vocabulary of the test tokenizer's size.
	QwenTokens bool
}

// Vision writes the model of s into a new folder and returns it.
func Vision(t testing.TB, s VisionSpec) string {
	t.Helper()
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&s.Depth, 2)
	def(&s.Vocab, 256)
	def(&s.MaxPixels, 9216)
	if s.RopeTheta == 0 {
		s.RopeTheta = 1e6
	}
	if s.PartialRoPE == 0 {
		s.PartialRoPE = 0.25
	}
	dir := t.TempDir()
	shape := synth.Shape{ModelType: "qwen3_5", Hidden: 64, Layers: 2, Interval: 2, Heads: 2, KVHeads: 1, HeadDim: 32,
		Hk: 2, Hv: 2, Dk: 32, Dv: 32, ConvKernel: 4, Intermediate: 128, Vocab: s.Vocab, Tied: true, RopeTheta: s.RopeTheta,
		PartialRotary: s.PartialRoPE, Vision: &synth.VisionShape{Depth: s.Depth, Hidden: 64, Intermediate: 128, Heads: 4,
			Patch: 16, Temporal: 2, Merge: 2, Positions: 64}}
	if err := synth.Write(dir, synth.Options{Shape: shape, Quant: synth.Quant{Bits: 4, GroupSize: 32}, Workers: 1, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	if s.QwenTokens {
		var cfg map[string]any
		data, _ := os.ReadFile(filepath.Join(dir, "config.json"))
		if err := json.Unmarshal(data, &cfg); err != nil {
			t.Fatal(err)
		}
		cfg["image_token_id"], cfg["vision_start_token_id"], cfg["vision_end_token_id"] = 151655, 151652, 151653
		cfg["eos_token_id"] = 151645 // <|im_end|>
		writeJSON(t, filepath.Join(dir, "config.json"), cfg)
	}
	writeJSON(t, filepath.Join(dir, "preprocessor_config.json"), map[string]any{"patch_size": 16, "temporal_patch_size": 2,
		"merge_size": 2, "size": map[string]int{"shortest_edge": 2048, "longest_edge": s.MaxPixels},
		"image_mean": []float64{0.5, 0.5, 0.5}, "image_std": []float64{0.5, 0.5, 0.5}})
	return dir
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// VisionChat is a small vision model a chat can talk to: the test tokenizer
// (Qwen3's, which has Qwen2-VL's image tokens) and the Qwen3.5 chat
// template, its vocabulary and image tokens the tokenizer's.
func VisionChat(t testing.TB) string {
	t.Helper()
	dir := Vision(t, VisionSpec{Depth: 1, Vocab: 151936, QwenTokens: true})
	tmpl, err := os.ReadFile(filepath.Join(Root(t), "tokenizer", "templates", "qwen35.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), tmpl, 0o644); err != nil {
		t.Fatal(err)
	}
	Tokenizer(t, dir)
	return dir
}
