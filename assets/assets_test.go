package assets

import (
	"bytes"
	"image/png"
	"path/filepath"
	"testing"
)

// TestIconFollowsTheGrid: the icon's opaque square is about 80% of the canvas
// and centred, as Apple's macOS icon grid places the body (824 of 1024), not
// edge to edge.
func TestIconFollowsTheGrid(t *testing.T) {
	img, err := png.Decode(bytes.NewReader(IconPNG))
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	minX, minY, maxX, maxY := b.Max.X, b.Max.Y, b.Min.X, b.Min.Y
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if _, _, _, a := img.At(x, y).RGBA(); a > 0x8000 {
				minX, minY, maxX, maxY = min(minX, x), min(minY, y), max(maxX, x+1), max(maxY, y+1)
			}
		}
	}
	w, h := float64(maxX-minX)/float64(b.Dx()), float64(maxY-minY)/float64(b.Dy())
	if w < 0.78 || w > 0.83 || h < 0.78 || h > 0.83 {
		t.Errorf("the body covers %.1f%% × %.1f%% of the canvas, want about 80%%", 100*w, 100*h)
	}
	if l, r := minX-b.Min.X, b.Max.X-maxX; l-r > 2 || r-l > 2 {
		t.Errorf("the body is off centre: %d px left, %d px right", l, r)
	}
}

// TestDemoDir finds the repository's demo model (go test runs in assets/, so
// through $BAGEL_DEMO_MODEL here) as an absolute path, and refuses a folder
// without a config.json. (ui.isDemo compares folders with it.)
func TestDemoDir(t *testing.T) {
	t.Setenv(DemoEnv, "demo-model")
	got := DemoDir()
	if got == "" || !filepath.IsAbs(got) || filepath.Base(got) != "demo-model" {
		t.Fatalf("DemoDir() = %q, want the absolute path of assets/demo-model", got)
	}
	empty := t.TempDir()
	t.Setenv(DemoEnv, empty)
	t.Chdir(empty)
	if d := DemoDir(); d == filepath.Clean(empty) {
		t.Errorf("DemoDir() = %q: a folder without config.json", d)
	}
}
