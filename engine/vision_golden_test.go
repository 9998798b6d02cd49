package engine

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"bagel/backend"
	"bagel/internal/testmodel"
	"bagel/qwen"
	"bagel/reference"
	"bagel/vision"
)

// visionGolden is transformers' Qwen3_5ForConditionalGeneration (float32,
// eager) on testdata/models/tiny-vision, written by
// tools/goldens/make_vision_goldens.py: each image's grid and tower output,
// and one prompt holding both images, teacher-forced.
type visionGolden struct {
	Meta   map[string]string `json:"meta"`
	Images []struct {
		File   string      `json:"file"`
		Grid   [3]int      `json:"grid"` // frames, rows, columns of patches
		Embeds [][]float64 `json:"embeds"`
		// Stages are one image's intermediate tensors (the processor's
		// pixels, the first block's input and output, the last block's
		// output): little-endian float32, base64.
		Stages map[string]struct {
			Shape []int  `json:"shape"`
			F32   string `json:"f32"`
		} `json:"stages"`
	} `json:"images"`
	Prompt struct {
		IDs           []int32          `json:"ids"` // one pad an image
		Expanded      []int32          `json:"expanded"`
		RopePositions [][3]int         `json:"rope_positions"`
		Positions     []goldenPosition `json:"positions"`
	} `json:"prompt"`
}

// TestImagesMatchTransformers holds the engine (CPU backend) to
// transformers on a tiny random Qwen3.5 with a vision tower: the processor's
// pixels, the grids, the tower's output rows, get_rope_index's positions,
// and the logits of a prompt holding two images. The bands are measured,
// not assumed: package reference's tower and forward with MLX's bf16
// roundings, which share no code with the engine, are held to transformers
// the same way, and the engine may stray at most 1.3× as far (as the text
// model's bands, reference_band_test.go).
func TestImagesMatchTransformers(t *testing.T) {
	dir, g := tinyVision(t)
	e, err := Load(dir, Options{Backend: "cpu", ContextLength: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	checkGolden(t, e, dir, g)
}

// TestGPUImagesMatchTransformers holds each GPU backend (CUDA; Metal, and
// its simulator in make test) to transformers the same way, with the same
// bands: the tower's kernels (linear_bf16, attention_full_bf16, ...) and a
// prompt holding images on the device.
func TestGPUImagesMatchTransformers(t *testing.T) {
	dir, g := tinyVision(t)
	for _, name := range gpuBackends() {
		t.Run(name, func(t *testing.T) {
			checkGolden(t, loadGPU(t, dir, name, 128), dir, g)
		})
	}
}

// tinyVision is the tiny-vision checkpoint's folder and its golden.
func tinyVision(t *testing.T) (string, *visionGolden) {
	t.Helper()
	root := testmodel.Root(t)
	var g visionGolden
	if err := json.Unmarshal(mustRead(t, filepath.Join(root, "testdata", "goldens", "tiny-vision.json")), &g); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "testdata", "models", "tiny-vision"), &g
}

// checkGolden holds e (the model in dir) to the golden g: the tower on the
// processor's pixels, each image's rows, the prompt's logits.
func checkGolden(t *testing.T, e *Engine, dir string, g *visionGolden) {
	t.Helper()
	checkGoldenTower(t, e, dir, g)
	images, exactRows, bf16Rows := checkGoldenImages(t, e, dir, g)
	checkGoldenPrompt(t, e, dir, g, images, exactRows, bf16Rows)
}

// checkGoldenTower runs the staged image's pixels as transformers' processor
// made them through the engine's tower and the references': the exact
// reference must agree with transformers to float32's precision (which
// checks the golden and the reference both), the engine stay within 1.3×
// the bf16 reference's distance. Bagel's own pixels for the image may differ
// from the processor's by one level (1/127.5 after normalizing) where
// Pillow's bicubic and transformers' resize round a half differently, at
// no more than 1% of the values.
func checkGoldenTower(t *testing.T, e *Engine, dir string, g *visionGolden) {
	t.Helper()
	for _, img := range g.Images {
		st, ok := img.Stages["pixels"]
		if !ok {
			continue
		}
		hf := f32Stage(t, st.F32)
		opts, err := vision.LoadOptions(dir)
		if err != nil {
			t.Fatal(err)
		}
		mine := patchRows(t, opts, mustRead(t, filepath.Join(testmodel.Root(t), "testdata", "vision", img.File)))
		row := st.Shape[1]
		off, worst := 0, 0.0
		pixels := make([][]float64, st.Shape[0])
		for i := range pixels {
			for j := range row {
				v := float64(hf[i*row+j])
				pixels[i] = append(pixels[i], v)
				if d := math.Abs(mine[i][j] - v); d > 1e-6 {
					off, worst = off+1, math.Max(worst, d)
				}
			}
		}
		t.Logf("%s: the processor's pixels and Bagel's differ at %d of %d values, by at most %.4g", img.File, off, len(hf), worst)
		if worst > 1/127.5+1e-6 || off*100 > len(hf) {
			t.Errorf("%s: Bagel's pixels differ from transformers' at %d of %d values, by up to %.4g (want one level, at ≤ 1%%)", img.File, off, len(hf), worst)
		}
		grid := qwen.ImageGrid{Frames: img.Grid[0], Rows: img.Grid[1], Cols: img.Grid[2]}
		var bits []uint16
		if err := e.loop.do(func() error {
			var err error
			bits, err = e.model.EncodeImage(e.ctx, hf, grid, nil)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		exact, bf16 := referenceTowers(t, dir, pixels, grid)
		compareTowers(t, img.File+", transformers' pixels", embedRows(bits, len(img.Embeds)), exact, bf16, img.Embeds, 1e-5)
	}
}

// checkGoldenImages encodes each golden image from its file: the grid must
// be transformers', the tower's rows within 1.3× the bf16 reference's
// distance from transformers' (both from Bagel's pixels). It returns the
// images and the references' tower rows at their prompt positions.
func checkGoldenImages(t *testing.T, e *Engine, dir string, g *visionGolden) (images []*Image, exactRows, bf16Rows map[int][]float64) {
	t.Helper()
	opts, err := vision.LoadOptions(dir)
	if err != nil {
		t.Fatal(err)
	}
	exactRows, bf16Rows = map[int][]float64{}, map[int][]float64{}
	at := 0
	for _, want := range g.Images {
		data := mustRead(t, filepath.Join(testmodel.Root(t), "testdata", "vision", want.File))
		img, err := e.EncodeImage(data)
		if err != nil {
			t.Fatalf("%s: %v", want.File, err)
		}
		if got := [3]int{img.Grid.Frames, img.Grid.Rows, img.Grid.Cols}; got != want.Grid {
			t.Fatalf("%s: grid %v, transformers' processor %v", want.File, got, want.Grid)
		}
		images = append(images, img)
		exact, bf16 := referenceTowers(t, dir, patchRows(t, opts, data), img.Grid)
		// Against transformers the exact reference carries the pixels'
		// difference (checkGoldenTower): a tolerance for it, not float32's.
		compareTowers(t, want.File, embedRows(img.embeds, img.Tokens), exact, bf16, want.Embeds, 2e-3)
		for at < len(g.Prompt.Expanded) && g.Prompt.Expanded[at] != e.Config.Vision.ImageToken {
			at++
		}
		for i := range bf16 {
			exactRows[at+i], bf16Rows[at+i] = exact[i], bf16[i]
		}
		at += len(bf16)
	}
	return images, exactRows, bf16Rows
}

// referenceTowers is package reference's tower on pixels (one row a patch),
// exact and with MLX's bf16 roundings.
func referenceTowers(t *testing.T, dir string, pixels [][]float64, grid qwen.ImageGrid) (exact, bf16 [][]float64) {
	t.Helper()
	exact, err := reference.EncodeImage(dir, pixels, grid.Rows, grid.Cols, reference.Exact)
	if err != nil {
		t.Fatal(err)
	}
	bf16, err = reference.EncodeImage(dir, pixels, grid.Rows, grid.Cols, reference.MLX)
	if err != nil {
		t.Fatal(err)
	}
	return exact, bf16
}

// compareTowers holds the engine's tower rows and the references' to
// transformers' (want): the exact reference within exactTol (median token
// error), the engine within 1.3× the bf16 reference's median and largest.
func compareTowers(t *testing.T, name string, engine, exact, bf16, want [][]float64, exactTol float64) {
	t.Helper()
	exactMed, exactMax := tokenErrors(exact, want)
	refMed, refMax := tokenErrors(bf16, want)
	med, worst := tokenErrors(engine, want)
	t.Logf("%s (%d tokens) against transformers: engine median %.2e largest %.2e; bf16 reference %.2e %.2e; exact reference %.1e %.1e",
		name, len(want), med, worst, refMed, refMax, exactMed, exactMax)
	if exactMed > exactTol {
		t.Errorf("%s: the exact reference's tower is %.2e (median) from transformers', want ≤ %.0e", name, exactMed, exactTol)
	}
	if med > 1.3*refMed || worst > 1.3*refMax {
		t.Errorf("%s: the engine's tower (median %.2e, largest %.2e) is outside 1.3× the bf16 reference's (%.2e, %.2e)",
			name, med, worst, refMed, refMax)
	}
}

// embedRows widens a tower's bf16 output [tokens, width] into rows.
func embedRows(bits []uint16, tokens int) [][]float64 {
	width := len(bits) / tokens
	rows := make([][]float64, tokens)
	for i := range rows {
		for _, h := range bits[i*width : (i+1)*width] {
			rows[i] = append(rows[i], float64(backend.BF16ToF32(h)))
		}
	}
	return rows
}

// f32Stage decodes a golden stage (little-endian float32, base64).
func f32Stage(t *testing.T, b64 string) []float32 {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(raw)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

// checkGoldenPrompt scores the golden prompt with the images: the expanded
// ids and rotary positions must be transformers', the logits (at each
// position's reference top 20) within 1.3× the bf16 reference forward's
// distance, the exact reference's within the pixels' share (see
// checkGoldenImages), and the top-1 as often right as the bf16 reference's.
func checkGoldenPrompt(t *testing.T, e *Engine, dir string, g *visionGolden, images []*Image, exactRows, bf16Rows map[int][]float64) {
	t.Helper()
	laid, err := e.layImages(g.Prompt.IDs, images, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(laid.ids, g.Prompt.Expanded) {
		t.Fatalf("expanded ids %v, transformers' %v", laid.ids, g.Prompt.Expanded)
	}
	positions := make([][3]int, len(laid.positions))
	for i, p := range laid.positions {
		positions[i] = [3]int{int(p[0]), int(p[1]), int(p[2])}
		if positions[i] != g.Prompt.RopePositions[i] {
			t.Fatalf("position %d: rotary positions %v, get_rope_index's %v", i, positions[i], g.Prompt.RopePositions[i])
		}
	}
	vocab := e.Config.VocabSize
	scored, err := e.Score(g.Prompt.IDs, ScoreOptions{Top: vocab, Images: images, Prefill: 30})
	if err != nil {
		t.Fatal(err)
	}
	engine := make([][]float64, len(scored))
	for i, p := range scored {
		engine[i] = make([]float64, vocab)
		for j, id := range p.TopIDs {
			engine[i][id] = float64(p.TopLogits[j])
		}
	}
	ref, err := reference.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	exact, err := ref.ForwardMultimodal(ref.NewState(), laid.ids, exactRows, positions, reference.Exact)
	if err != nil {
		t.Fatal(err)
	}
	bf16, err := ref.ForwardMultimodal(ref.NewState(), laid.ids, bf16Rows, positions, reference.MLX)
	if err != nil {
		t.Fatal(err)
	}
	es, agree, clear := goldenLogitErrors(g, engine)
	rs, refAgree, _ := goldenLogitErrors(g, bf16)
	xs, _, _ := goldenLogitErrors(g, exact)
	t.Logf("logits against transformers (%d positions, top 20): engine median %.3g p90 %.3g lse %.3g, top-1 at %d of %d clear; "+
		"bf16 reference %.3g %.3g %.3g, %d of %d; exact reference %.2g %.2g %.2g",
		len(g.Prompt.Positions), es.median, es.p90, es.lse, agree, clear, rs.median, rs.p90, rs.lse, refAgree, clear, xs.median, xs.p90, xs.lse)
	if xs.p90 > 0.01 || xs.lse > 0.01 {
		t.Errorf("the exact reference's logits are %.2g (p90), %.2g (logsumexp) from transformers', want ≤ 0.01 (the pixels' share)", xs.p90, xs.lse)
	}
	if es.median > 1.3*rs.median || es.p90 > 1.3*rs.p90 || es.lse > 1.3*rs.lse {
		t.Errorf("the engine's logits (median %.3g, p90 %.3g, logsumexp %.3g) are outside 1.3× the bf16 reference's (%.3g, %.3g, %.3g)",
			es.median, es.p90, es.lse, rs.median, rs.p90, rs.lse)
	}
	if clear < 20 || agree < refAgree {
		t.Errorf("top-1 agrees with transformers at %d of %d clear positions, the bf16 reference at %d", agree, clear, refAgree)
	}
}

// goldenStats are |Δlogit| over the golden's top 20 ids of every position
// (median, 90th percentile) and the largest |Δ logsumexp|.
type goldenStats struct{ median, p90, lse float64 }

// goldenLogitErrors compares logits [position][vocab] with the golden
// prompt's, and counts the clear positions (margin > clearMargin) and those
// whose top-1 agrees.
func goldenLogitErrors(g *visionGolden, logits [][]float64) (s goldenStats, agree, clear int) {
	var d []float64
	for i, p := range g.Prompt.Positions {
		for j, id := range p.TopIDs {
			d = append(d, math.Abs(logits[i][id]-p.TopLogits[j]))
		}
		s.lse = math.Max(s.lse, math.Abs(logSumExp64(logits[i])-p.LogSumExp))
		if p.Margin > clearMargin {
			clear++
			if slices.Index(logits[i], slices.Max(logits[i])) == p.TopIDs[0] {
				agree++
			}
		}
	}
	slices.Sort(d)
	s.median, s.p90 = d[len(d)/2], d[len(d)*9/10]
	return s, agree, clear
}

// patchRows is the processor's patches of an image file as the reference
// takes them: one row of pixel values per patch.
func patchRows(t *testing.T, opts vision.Options, data []byte) [][]float64 {
	t.Helper()
	img, err := vision.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.Preprocess(img)
	if err != nil {
		t.Fatal(err)
	}
	row := len(p.Data) / (p.GridH * p.GridW)
	out := make([][]float64, p.GridH*p.GridW)
	for i := range out {
		for _, v := range p.Data[i*row : (i+1)*row] {
			out[i] = append(out[i], float64(v))
		}
	}
	return out
}

// mustRead is os.ReadFile that fails the test.
func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// logSumExp64 is log Σ e^x in float64.
func logSumExp64(x []float64) float64 {
	top := slices.Max(x)
	var s float64
	for _, v := range x {
		s += math.Exp(v - top)
	}
	return top + math.Log(s)
}
