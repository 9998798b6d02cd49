package vision

import (
	"bytes"
	"image"
	"image/color"
	"math/rand/v2"
	"testing"
)

// TestRGBFastMatchesTheGenericLoop: the pixel-array loops give what the
// per-pixel color conversion gives, for NRGBA, alpha-premultiplied RGBA
// with transparent, translucent and opaque pixels, and gray, each as a
// sub-image whose bounds do not start at the origin.
func TestRGBFastMatchesTheGenericLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	full := image.Rect(0, 0, 37, 23)
	sub := image.Rect(3, 5, 30, 21)
	nrgba, rgba, gray := image.NewNRGBA(full), image.NewRGBA(full), image.NewGray(full)
	for y := range full.Dy() {
		for x := range full.Dx() {
			a := []uint8{0, 0xff, 0x80, uint8(r.IntN(256))}[r.IntN(4)]
			c := color.NRGBA{uint8(r.IntN(256)), uint8(r.IntN(256)), uint8(r.IntN(256)), a}
			nrgba.Set(x, y, c)
			rgba.Set(x, y, c) // premultiplied by Set
			gray.Set(x, y, c)
		}
	}
	for name, img := range map[string]image.Image{
		"NRGBA": nrgba.SubImage(sub), "RGBA": rgba.SubImage(sub), "Gray": gray.SubImage(sub),
	} {
		want := &Image{W: sub.Dx(), H: sub.Dy(), Pix: make([]uint8, sub.Dx()*sub.Dy()*3)}
		i := 0
		for y := sub.Min.Y; y < sub.Max.Y; y++ {
			for x := sub.Min.X; x < sub.Max.X; x++ {
				n := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
				want.Pix[i], want.Pix[i+1], want.Pix[i+2] = n.R, n.G, n.B
				i += 3
			}
		}
		got := &Image{W: sub.Dx(), H: sub.Dy(), Pix: make([]uint8, len(want.Pix))}
		if !rgbFast(img, got) {
			t.Fatalf("%s: no fast loop", name)
		}
		if !bytes.Equal(got.Pix, want.Pix) {
			t.Errorf("%s: the fast loop's pixels differ from the per-pixel conversion's", name)
		}
	}
	if rgbFast(image.NewCMYK(full), &Image{}) {
		t.Error("CMYK took a fast loop it does not have")
	}
}
