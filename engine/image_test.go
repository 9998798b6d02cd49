package engine

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"bagel/backend"
	"bagel/drafter"
	"bagel/internal/testmodel"
	"bagel/qwen"
	"bagel/reference"
	"bagel/switches"
	"bagel/vision"
)

// visionModel is testmodel.Vision's small model with a text rotary that
// turns fast (base 100 over 16 of 32 dims), so that positions a few apart
// differ well beyond bf16's rounding, and a processor of 2048 to 9216 pixels.
func visionModel(t *testing.T) string { return visionModelOf(t, 9216) }

// visionModelOf is visionModel with a processor of up to maxPixels pixels.
func visionModelOf(t *testing.T, maxPixels int) string {
	return testmodel.Vision(t, testmodel.VisionSpec{RopeTheta: 100, PartialRoPE: 0.5, MaxPixels: maxPixels})
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
	checkTowerBand(t, e, dir)
}

// TestGPUImagesMatchTheReference: the tower and a prompt with images on each
// GPU backend (CUDA; Metal, and its simulator in make test) held to the
// same bands as on the CPU.
func TestGPUImagesMatchTheReference(t *testing.T) {
	for _, name := range gpuBackends() {
		t.Run(name, func(t *testing.T) {
			dir := visionModel(t)
			checkTowerBand(t, loadGPU(t, dir, name, 64), dir)
			big := visionModelOf(t, 65536)
			checkImagePromptBand(t, loadGPU(t, big, name, 128), big)
		})
	}
}

// checkTowerBand holds e's tower (the model in dir) to the float64
// reference's bf16 band on two images.
func checkTowerBand(t *testing.T, e *Engine, dir string) {
	t.Helper()
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
// image, a file that is not an image is named as such, and so is a
// processor the tower does not take.
func TestImageRefusedWithoutATower(t *testing.T) {
	e, err := Load(visionModel(t), Options{Backend: "cpu", ContextLength: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.EncodeImage([]byte("not an image at all")); err == nil {
		t.Error("a text file was encoded as an image")
	}
	// A processor whose patches the tower does not take is named before
	// the image is read (its budget scaled to them could be anything).
	dir := visionModel(t)
	cfg := filepath.Join(dir, "preprocessor_config.json")
	if err := os.WriteFile(cfg, []byte(`{"patch_size": 1, "merge_size": 2, "size": {"shortest_edge": 64, "longest_edge": 67108864}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	odd, err := Load(dir, Options{Backend: "cpu", ContextLength: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer odd.Close()
	if _, err := odd.EncodeImage([]byte("not an image at all")); err == nil || !strings.Contains(err.Error(), "cuts patches of 1 merged 2×2, the vision tower takes") {
		t.Errorf("a processor the tower does not take: %v", err)
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

// TestRopeIndex: two images in a prompt, their positions written out by
// hand from transformers' get_rope_index: text one position a token; an
// image of R×C merged tokens from S at (S, S+r, S+c); the text after it
// from S + max(R, C).
func TestRopeIndex(t *testing.T) {
	// 5 17 <start> [2×3 image] <end> 40 41 <start> [2×1 image] <end> 50 51 52
	got, next, err := qwen.RopeIndex(19, 0, []qwen.PromptImage{{At: 3, Rows: 2, Cols: 3}, {At: 13, Rows: 2, Cols: 1}})
	want := [][3]int32{{0, 0, 0}, {1, 1, 1}, {2, 2, 2},
		{3, 3, 3}, {3, 3, 4}, {3, 3, 5}, {3, 4, 3}, {3, 4, 4}, {3, 4, 5}, // the first image, from 3
		{6, 6, 6}, {7, 7, 7}, {8, 8, 8}, {9, 9, 9},
		{10, 10, 10}, {10, 11, 10}, // the second, from 10
		{12, 12, 12}, {13, 13, 13}, {14, 14, 14}, {15, 15, 15}}
	if err != nil || !slices.Equal(got, want) || next != 16 {
		t.Errorf("RopeIndex = %v, next %d, %v; want %v, next 16", got, next, err, want)
	}
	if _, _, err := qwen.RopeIndex(10, 0, []qwen.PromptImage{{At: 8, Rows: 2, Cols: 2}}); err == nil {
		t.Error("an image past the end of the tokens was placed")
	}
}

// TestImagePromptMatchesTheReference scores a prompt with two images (5×6
// and 2×1 merged tokens) on the CPU backend against package reference's
// forward given the same image embeddings (the tower is
// TestImageEncodesAsTheReference's) and the positions of RopeIndex
// (TestRopeIndex). Its last three tokens are decoded one at a time by plain
// forwards, whose positions come from the cache's shift. The band is the
// bf16 reference's (1.3× its median and 90th-percentile |Δ| against the
// exact forward over every logit), and the engine must be at least twice as
// far from forwards with wrong positions (plain ones; rows for columns or
// columns for rows; the text after an image not shifted back).
func TestImagePromptMatchesTheReference(t *testing.T) {
	dir := visionModelOf(t, 65536)
	e, err := Load(dir, Options{Backend: "cpu", ContextLength: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	checkImagePromptBand(t, e, dir)
}

// checkImagePromptBand is TestImagePromptMatchesTheReference on e (the model
// in dir, a processor of up to 65536 pixels).
func checkImagePromptBand(t *testing.T, e *Engine, dir string) {
	t.Helper()
	var images []*Image
	for _, f := range []string{"big.png", "tall.png"} { // 160×192 and 64×32 pixels: merged grids 5×6 and 2×1
		data, _ := os.ReadFile(filepath.Join("..", "testdata", "vision", f))
		img, err := e.EncodeImage(data)
		if err != nil {
			t.Fatal(err)
		}
		images = append(images, img)
	}
	if images[0].MergedRows != 5 || images[0].MergedCols != 6 {
		t.Fatalf("big.png: %d×%d merged tokens, want 5×6", images[0].MergedRows, images[0].MergedCols)
	}
	v := e.Config.Vision
	pad, start, end := v.ImageToken, v.VisionStart, v.VisionEnd
	ids := []int32{5, 17, start, pad, end, 40, 41, start, pad, end, 50, 51, 52}
	laid, err := e.layImages(ids, images, 0)
	if err != nil {
		t.Fatal(err)
	}
	right := make([][3]int, len(laid.positions))
	for i, p := range laid.positions {
		right[i] = [3]int{int(p[0]), int(p[1]), int(p[2])}
	}
	vocab := e.Config.VocabSize
	got, err := e.Score(ids, ScoreOptions{Top: vocab, Images: images, Prefill: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(right) {
		t.Fatalf("%d positions scored, want %d", len(got), len(right))
	}
	rows := map[int][]float64{}
	for _, im := range laid.images {
		for r := range im.img.Tokens {
			for _, h := range im.img.embeds[r*64 : (r+1)*64] {
				rows[im.at+r] = append(rows[im.at+r], float64(backend.BF16ToF32(h)))
			}
		}
	}
	ref, err := reference.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	score := func(r reference.Rounding, positions [][3]int) [][]float64 {
		logits, err := ref.ForwardMultimodal(ref.NewState(), laid.ids, rows, positions, r)
		if err != nil {
			t.Fatal(err)
		}
		return logits
	}
	exact, bf16 := score(reference.Exact, right), score(reference.MLX, right)
	wrong := map[string][][3]int{}
	for i, p := range right {
		wrong["plain"] = append(wrong["plain"], [3]int{i, i, i})
		wrong["rows for columns"] = append(wrong["rows for columns"], [3]int{p[0], p[1], p[1]})
		wrong["columns for rows"] = append(wrong["columns for rows"], [3]int{p[0], p[2], p[2]})
		if p[0] == p[1] && p[1] == p[2] && i > 3 {
			p = [3]int{i, i, i}
		}
		wrong["unshifted"] = append(wrong["unshifted"], p)
	}
	engine := make([][]float64, len(got))
	for i, p := range got {
		engine[i] = make([]float64, vocab)
		for j, id := range p.TopIDs {
			engine[i][id] = float64(p.TopLogits[j])
		}
	}
	refMed, refP90 := logitErrors(bf16, exact)
	med, p90 := logitErrors(engine, exact)
	worst := worstPosition(engine, exact)
	t.Logf("|Δlogit| median, p90: engine %.3g %.3g; bf16 reference %.3g %.3g; the engine's worst position %.3g", med, p90, refMed, refP90, worst)
	if med > 1.3*refMed || p90 > 1.3*refP90 {
		t.Errorf("the engine's logits (median %.3g, p90 %.3g) are outside 1.3× the bf16 reference's (%.3g, %.3g)", med, p90, refMed, refP90)
	}
	for name, pos := range wrong {
		off := worstPosition(engine, score(reference.Exact, pos))
		t.Logf("%s: the engine's worst position is %.3g from a forward with them", name, off)
		if off < 2*worst {
			t.Errorf("the engine's worst position is %.3g from a forward with wrong positions (%s), %.3g from the right one", off, name, worst)
		}
	}
}

// worstPosition is the largest over positions of the median |got − want|
// over the position's logits.
func worstPosition(got, want [][]float64) float64 {
	worst := 0.0
	for i := range want {
		m, _ := logitErrors(got[i:i+1], want[i:i+1])
		worst = math.Max(worst, m)
	}
	return worst
}

// logitErrors is the median and 90th percentile of |got − want| over every
// logit of every position.
func logitErrors(got, want [][]float64) (median, p90 float64) {
	var d []float64
	for i := range want {
		for j := range want[i] {
			d = append(d, math.Abs(got[i][j]-want[i][j]))
		}
	}
	slices.Sort(d)
	return d[len(d)/2], d[len(d)*9/10]
}

// TestGenerateWithAnImage: a greedy reply about an image is the reply its
// scores teacher-force (the decode after the image runs on the cache's
// shifted positions); the next turn reuses the held conversation, image and
// all, and replies as a fresh cache does; the same words about another image
// of the same size reuse nothing of it; and an image the model cannot place
// is refused with the reason.
// twoImages loads the vision model of up to 65536 pixels (closed when the
// test ends) and reads big.png (data) and a repainted copy of it of the same
// size: images A and B.
func twoImages(t *testing.T) (e *Engine, data []byte, imgA, imgB *Image) {
	t.Helper()
	e, err := Load(visionModelOf(t, 65536), Options{Backend: "cpu", ContextLength: 128})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	data, err = os.ReadFile(filepath.Join("..", "testdata", "vision", "big.png"))
	if err != nil {
		t.Fatal(err)
	}
	if imgA, err = e.EncodeImage(data); err != nil {
		t.Fatal(err)
	}
	if imgB, err = e.EncodeImage(repainted(t, data)); err != nil {
		t.Fatal(err)
	}
	return e, data, imgA, imgB
}

func TestGenerateWithAnImage(t *testing.T) {
	e, _, imgA, imgB := twoImages(t)
	defer switches.Reset(SwitchPromptReuse)
	v := e.Config.Vision
	prompt := []int32{5, 17, v.VisionStart, v.ImageToken, v.VisionEnd, 40, 41}
	reply := func(prompt []int32, img *Image, reuse bool) ([]int32, Stats) {
		t.Helper()
		if err := switches.Set(SwitchPromptReuse, reuse); err != nil {
			t.Fatal(err)
		}
		ids, _, done := collect(t, e.Generate(context.Background(), Request{PromptIDs: prompt, Images: []*Image{img}, MaxTokens: 6, IgnoreStop: true}))
		return ids, done.Stats
	}
	first, st := reply(prompt, imgA, true)
	expanded := len(prompt) - 1 + imgA.Tokens
	if st.PromptTokens != expanded || len(first) != 6 {
		t.Fatalf("%d prompt tokens and %d reply tokens, want %d and 6", st.PromptTokens, len(first), expanded)
	}
	scores, err := e.Score(append(slices.Clone(prompt), first[:5]...), ScoreOptions{Top: 2, Images: []*Image{imgA}})
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range first {
		p := scores[expanded-1+i]
		if p.TopLogits[0]-p.TopLogits[1] > 1e-2 && int32(p.TopIDs[0]) != id {
			t.Errorf("reply token %d is %d, its teacher-forced top-1 %d", i, id, p.TopIDs[0])
		}
	}

	next := append(append(slices.Clone(prompt), first...), 60, 61)
	cold, _ := reply(next, imgA, false)
	reply(prompt, imgA, true) // hold the first turn again (the cold reply dropped it)
	warm, st := reply(next, imgA, true)
	if st.ReusedPromptTokens != expanded-1 || !slices.Equal(warm, cold) {
		t.Errorf("second turn: reused %d tokens (want %d), replied %v; a fresh cache replies %v", st.ReusedPromptTokens, expanded-1, warm, cold)
	}
	if _, st := reply(prompt, imgB, true); st.ReusedPromptTokens != 0 {
		t.Errorf("another image of the same size reused %d tokens of the first one's conversation", st.ReusedPromptTokens)
	}

	for _, c := range []struct {
		prompt []int32
		images []*Image
		want   string
	}{
		{prompt, nil, "1 image pads"},
		{prompt, []*Image{imgA, imgB}, "1 image pads (token"},
		{prompt[:4], []*Image{imgA}, "ends with an image"},
	} {
		_, _, done := collectErr(e.Generate(context.Background(), Request{PromptIDs: c.prompt, Images: c.images, MaxTokens: 2}))
		if done == nil || !strings.Contains(done.Error(), c.want) {
			t.Errorf("prompt %v with %d images: %v, want an error naming %q", c.prompt, len(c.images), done, c.want)
		}
	}
}

// collectErr drains a generation and returns its error event's error.
func collectErr(ch <-chan Event) ([]int32, string, error) {
	var err error
	for ev := range ch {
		if ev.Kind == EventError {
			err = ev.Err
		}
	}
	return nil, "", err
}

// repainted is the PNG data with its top-left quarter painted over: the
// same size, another image.
func repainted(t *testing.T, data []byte) []byte {
	t.Helper()
	return repaintedWith(t, data, color.RGBA{200, 30, 90, 255})
}

// repaintedWith is the PNG data with its top-left quarter painted c.
func repaintedWith(t *testing.T, data []byte, c color.RGBA) []byte {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	out := image.NewRGBA(b)
	draw.Draw(out, b, img, b.Min, draw.Src)
	draw.Draw(out, image.Rect(0, 0, b.Dx()/2, b.Dy()/2), image.NewUniform(c), image.Point{}, draw.Src)
	var buf bytes.Buffer
	if err := png.Encode(&buf, out); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestEncodeImageStops: a tower run whose context is done gives up between
// blocks with the context's error (a reply stopped while its image is read).
func TestEncodeImageStops(t *testing.T) {
	e, err := Load(visionModel(t), Options{Backend: "cpu", ContextLength: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	data, _ := os.ReadFile(filepath.Join("..", "testdata", "vision", "big.png"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.EncodeImageContext(ctx, data); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled encode: %v, want context.Canceled", err)
	}
	if _, err := e.EncodeImageContext(context.Background(), data); err != nil {
		t.Errorf("the next encode: %v", err)
	}
}

// TestBatchedRepliesWithImages: replies about images decode in a batch
// beside a text reply, each greedy reply token for token its solo one (the
// image's pads expanded, its chunk through the multimodal forward, the
// slot's rotary shift in the batched steps); a second turn in a batch
// reuses the first turn's conversation, image and all, and a reply about
// another image of the same size reuses none of it; two turns after the
// same image prefill their new tokens together.
func TestBatchedRepliesWithImages(t *testing.T) {
	e, data, imgA, imgB := twoImages(t)
	v := e.Config.Vision
	withImage := []int32{5, 17, v.VisionStart, v.ImageToken, v.VisionEnd, 40, 41}
	reqs := []Request{
		{PromptIDs: withImage, Images: []*Image{imgA}, MaxTokens: 6, IgnoreStop: true},
		{PromptIDs: []int32{9, 8, 7, 6}, MaxTokens: 6, IgnoreStop: true},
		{PromptIDs: withImage, Images: []*Image{imgB}, MaxTokens: 6, IgnoreStop: true, PrefillChunk: 5}, // the image split over chunks
	}
	solo := eachAlone(t, e, reqs)
	got, done := runBatch(t, e, reqs, 64)
	for i := range reqs {
		if done[i].Kind != EventDone || !slices.Equal(got[i], solo[i]) {
			t.Errorf("reply %d in the batch: %v (%v), alone %v", i, got[i], done[i].Err, solo[i])
		}
	}
	if slices.Equal(solo[0], solo[2]) {
		t.Errorf("the two images got the same reply %v: the test cannot tell them apart", solo[0])
	}
	imgC, err := e.EncodeImage(repaintedWith(t, data, color.RGBA{10, 220, 40, 255}))
	if err != nil {
		t.Fatal(err)
	}
	next := append(append(slices.Clone(withImage), got[0]...), 60, 61)
	second := []Request{
		{PromptIDs: next, Images: []*Image{imgA}, MaxTokens: 4, IgnoreStop: true},
		{PromptIDs: next, Images: []*Image{imgC}, MaxTokens: 4, IgnoreStop: true, NoPromptCache: true},
	}
	_, done = runBatch(t, e, second, 96)
	if r := done[0].Stats.ReusedPromptTokens; r != len(withImage)-1+imgA.Tokens-1 {
		t.Errorf("second turn: reused %d tokens, want the first turn's %d", r, len(withImage)-1+imgA.Tokens-1)
	}
	if r := done[1].Stats.ReusedPromptTokens; r != 0 {
		t.Errorf("another image of the same size reused %d tokens of the others' conversations", r)
	}
	// Two turns after the same image, both reusing its conversation: their
	// new tokens, past the image (the caches' rotary shift set), go together
	// as a step's rows (rowsTogether), each reply still its solo one.
	var third []Request
	for _, tail := range [][]int32{{70}, {72}} {
		third = append(third, Request{PromptIDs: append(append(slices.Clone(withImage), got[0]...), tail...), Images: []*Image{imgA}, MaxTokens: 4, IgnoreStop: true,
			NoPromptCache: true}) // each reuses the first turn's but keeps nothing
	}
	alone := eachAlone(t, e, third)
	ids, done := runBatch(t, e, third, 96)
	for i := range third {
		if done[i].Kind != EventDone || !slices.Equal(ids[i], alone[i]) || done[i].Stats.ReusedPromptTokens == 0 {
			t.Errorf("third turn, reply %d: %v (%v, %d tokens reused), alone %v", i, ids[i], done[i].Err, done[i].Stats.ReusedPromptTokens, alone[i])
		}
	}
}

// eachAlone is each request's reply generated alone, as the request asks
// (its prompt reuse too), one after another.
func eachAlone(t *testing.T, e *Engine, reqs []Request) [][]int32 {
	t.Helper()
	var replies [][]int32
	for _, req := range reqs {
		ids, _, _ := collect(t, e.Generate(context.Background(), req))
		replies = append(replies, ids)
	}
	return replies
}

// TestEncodeImagesInOrder: a request's images read together come back in
// order, each as it reads alone; a broken one is named by its place and
// stops the rest; a done context stops them.
func TestEncodeImagesInOrder(t *testing.T) {
	e, err := Load(visionModel(t), Options{Backend: "cpu", ContextLength: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	big, _ := os.ReadFile(filepath.Join("..", "testdata", "vision", "big.png"))
	tall, _ := os.ReadFile(filepath.Join("..", "testdata", "vision", "tall.png"))
	datas := [][]byte{big, tall, repainted(t, big)}
	got, err := e.EncodeImagesContext(context.Background(), datas)
	if err != nil {
		t.Fatal(err)
	}
	for i, data := range datas {
		alone, err := e.EncodeImage(data)
		if err != nil {
			t.Fatal(err)
		}
		if got[i].Key != alone.Key || !slices.Equal(got[i].embeds, alone.embeds) {
			t.Errorf("image %d read with the others differs from it read alone", i+1)
		}
	}
	_, err = e.EncodeImagesContext(context.Background(), [][]byte{big, []byte("not an image"), tall})
	if ie := (*ImageError)(nil); !errors.As(err, &ie) || ie.Index != 1 || !strings.HasPrefix(err.Error(), "image 2: ") {
		t.Errorf("a broken second image: %v, want an ImageError naming image 2", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.EncodeImagesContext(ctx, datas); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled read: %v, want context.Canceled", err)
	}
}

// TestBatchedImageRepliesDraft: replies with images draft in a batch as
// text replies do, their guesses at the positions the image shifted: a line
// of guesses and a draft tree, each reply its plain reply alone.
func TestBatchedImageRepliesDraft(t *testing.T) {
	e, _, imgA, imgB := twoImages(t)
	v := e.Config.Vision
	withImage := []int32{5, 17, v.VisionStart, v.ImageToken, v.VisionEnd, 40, 41}
	reqs := []Request{
		{PromptIDs: withImage, Images: []*Image{imgA}, MaxTokens: 10, IgnoreStop: true},
		{PromptIDs: withImage, Images: []*Image{imgB}, MaxTokens: 10, IgnoreStop: true},
		{PromptIDs: []int32{9, 8, 7, 6}, MaxTokens: 10, IgnoreStop: true},
	}
	plain := make([][]int32, len(reqs))
	for i, req := range reqs {
		plain[i], _, _ = collect(t, e.Generate(context.Background(), req))
	}
	defer switches.Reset(SwitchSpeculative)
	if err := switches.Set(SwitchSpeculative, true); err != nil {
		t.Fatal(err)
	}
	oracle := func(i int) drafter.OracleDrafter { // the history a drafter reads holds each image's pads expanded
		n := len(reqs[i].PromptIDs)
		for _, img := range reqs[i].Images {
			n += img.Tokens - 1
		}
		return drafter.OracleDrafter{Continuation: plain[i], PromptLen: n}
	}
	reqs[0].Drafter = flakyDrafter{reply: plain[0], promptLen: oracle(0).PromptLen}
	reqs[1].Drafter = oracleTree{oracle(1), false}
	reqs[2].Drafter = oracleTree{oracle(2), true}
	got, done := runBatch(t, e, reqs, 96)
	for i := range reqs {
		if st := done[i].Stats; done[i].Kind != EventDone || !slices.Equal(got[i], plain[i]) || st.Verifies == 0 {
			t.Errorf("reply %d: %v after %d verifies (%v), plain %v", i, got[i], st.Verifies, done[i].Err, plain[i])
		}
	}
}
