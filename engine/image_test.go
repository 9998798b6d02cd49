package engine

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"bagel/backend"
	"bagel/internal/testmodel"
	"bagel/reference"
	"bagel/synth"
	"bagel/vision"
)

// visionModel writes a small model with a small tower (two blocks of 64,
// four heads of 16, a position table of 8×8) and a processor that keeps
// images small (2048 to 9216 pixels), so that the float64 reference runs
// in a moment.
func visionModel(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s := synth.Shape{ModelType: "qwen3_5", Hidden: 64, Layers: 2, Interval: 2, Heads: 2, KVHeads: 1, HeadDim: 32,
		Hk: 2, Hv: 2, Dk: 32, Dv: 32, ConvKernel: 4, Intermediate: 128, Vocab: 256, Tied: true, RopeTheta: 1e6,
		PartialRotary: 0.25, Vision: &synth.VisionShape{Depth: 2, Hidden: 64, Intermediate: 128, Heads: 4,
			Patch: 16, Temporal: 2, Merge: 2, Positions: 64}}
	if err := synth.Write(dir, synth.Options{Shape: s, Quant: synth.Quant{Bits: 4, GroupSize: 32}, Workers: 1, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	pre, _ := json.Marshal(map[string]any{"patch_size": 16, "temporal_patch_size": 2, "merge_size": 2,
		"size": map[string]int{"shortest_edge": 2048, "longest_edge": 9216}, "image_mean": []float64{0.5, 0.5, 0.5},
		"image_std": []float64{0.5, 0.5, 0.5}})
	if err := os.WriteFile(filepath.Join(dir, "preprocessor_config.json"), pre, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestImageEncodesAsTheReference: the tower on the kernels (CPU backend)
// against the float64 reference of package reference, on two images whose
// patch grids (4×6 and 4×2) resample the 8×8 position table differently.
// The band is the reference's own bf16 error, as for the text model
// (reference_band_test.go): the reference with bf16 roundings where
// PyTorch's bf16 tower stores a tensor, measured against the exact one; the
// engine's error against the exact one must stay within 1.3 times it, as a
// median over tokens of each token's relative error and over all values'
// largest.
func TestImageEncodesAsTheReference(t *testing.T) {
	dir := visionModel(t)
	e, err := Load(dir, Options{Backend: "cpu", ContextLength: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if present, status := e.VisionStatus(); !present {
		t.Fatalf("VisionStatus = %q", status)
	}
	opts, err := vision.LoadOptions(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"big.png", "tall.png"} {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "vision", file))
		if err != nil {
			t.Fatal(err)
		}
		img, err := e.EncodeImage(data)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		decoded, _ := vision.Decode(data)
		p, err := opts.Preprocess(decoded)
		if err != nil {
			t.Fatal(err)
		}
		if img.Grid.Rows != p.GridH || img.Grid.Cols != p.GridW || img.Tokens != p.Tokens() {
			t.Fatalf("%s: grid %+v, %d tokens; the processor's %d×%d, %d", file, img.Grid, img.Tokens, p.GridH, p.GridW, p.Tokens())
		}
		row := len(p.Data) / (p.GridH * p.GridW)
		pixels := make([][]float64, p.GridH*p.GridW)
		for i := range pixels {
			for _, v := range p.Data[i*row : (i+1)*row] {
				pixels[i] = append(pixels[i], float64(v))
			}
		}
		exact, err := reference.EncodeImage(dir, pixels, p.GridH, p.GridW, reference.Exact)
		if err != nil {
			t.Fatal(err)
		}
		bf16, err := reference.EncodeImage(dir, pixels, p.GridH, p.GridW, reference.MLX)
		if err != nil {
			t.Fatal(err)
		}
		got := make([][]float64, img.Tokens)
		width := len(img.embeds) / img.Tokens
		if width != 64 || len(got) != len(exact) {
			t.Fatalf("%s: %d tokens of %d, the reference's %d of 64", file, len(got), width, len(exact))
		}
		for i := range got {
			for _, h := range img.embeds[i*width : (i+1)*width] {
				got[i] = append(got[i], float64(backend.BF16ToF32(h)))
			}
		}
		refMed, refMax := tokenErrors(bf16, exact)
		med, worst := tokenErrors(got, exact)
		t.Logf("%s (%d tokens): engine median %.2e largest %.2e; bf16 reference %.2e %.2e", file, len(got), med, worst, refMed, refMax)
		if med > 1.3*refMed || worst > 1.3*refMax {
			t.Errorf("%s: the engine's error (median %.2e, largest %.2e) is outside 1.3× the bf16 reference's (%.2e, %.2e)",
				file, med, worst, refMed, refMax)
		}
	}
}

// tokenErrors is the median over tokens of ‖got − want‖/‖want‖ and the
// largest |got − want| over all values.
func tokenErrors(got, want [][]float64) (median, largest float64) {
	rel := make([]float64, len(want))
	for i := range want {
		var d2, w2 float64
		for j, w := range want[i] {
			d := got[i][j] - w
			d2, w2 = d2+d*d, w2+w*w
			largest = math.Max(largest, math.Abs(d))
		}
		rel[i] = math.Sqrt(d2 / w2)
	}
	slices.Sort(rel)
	return rel[len(rel)/2], largest
}

// TestImageRefusedWithoutATower: a text model says why it cannot read an
// image, and a file that is not an image is named as such.
func TestImageRefusedWithoutATower(t *testing.T) {
	e, err := Load(visionModel(t), Options{Backend: "cpu", ContextLength: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.EncodeImage([]byte("not an image at all")); err == nil {
		t.Error("a text file was encoded as an image")
	}
	text, err := Load(testmodel.Weights(t, "tiny-dense"), Options{Backend: "cpu", ContextLength: 32})
	if err != nil {
		t.Fatal(err)
	}
	defer text.Close()
	data, _ := os.ReadFile(filepath.Join("..", "testdata", "vision", "big.png"))
	if _, err := text.EncodeImage(data); err == nil || !strings.Contains(err.Error(), "cannot read images: no vision tower") {
		t.Errorf("a text model's error = %v", err)
	}
}
