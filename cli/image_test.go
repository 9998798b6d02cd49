package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"bagel/internal/testmodel"
)

// tinyVisionModel is testmodel.Vision's small model: its image pad is
// token 253 (vision start 251, end 252), its processor 2048 to 9216 pixels.
func tinyVisionModel(t *testing.T) string { return testmodel.Vision(t, testmodel.VisionSpec{}) }

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
