package assets

import (
	"bytes"
	"image/png"
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
