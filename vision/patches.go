package vision

import (
	"fmt"
	"math"
)

// Options are the image processor's (preprocessor_config.json): the patch
// and merge sizes, the pixel budget an image is resized into, and the
// normalization.
type Options struct {
	PatchSize     int // 16
	TemporalPatch int // 2: a still image repeats its frame
	MergeSize     int // 2: one text token per MergeSize² patches
	MinPixels     int
	MaxPixels     int
	Mean, Std     [3]float32
}

// DefaultOptions are the released Qwen3.5 processor's: patches of 16, merged
// 2×2 (one token per 32×32 pixels), 256² to 4096² pixels, mean and std 0.5.
func DefaultOptions() Options {
	return Options{PatchSize: 16, TemporalPatch: 2, MergeSize: 2, MinPixels: 256 * 256, MaxPixels: 4096 * 4096,
		Mean: [3]float32{0.5, 0.5, 0.5}, Std: [3]float32{0.5, 0.5, 0.5}}
}

// maxAspect is the processor's limit on an image's longer side over its shorter.
const maxAspect = 200

// Size is the processor's smart_resize: the image's height and width
// rounded to multiples of PatchSize·MergeSize (half to even, as Python's
// round), then scaled down or up, keeping the aspect, into the pixel budget.
func (o Options) Size(height, width int) (h, w int, err error) {
	f := o.PatchSize * o.MergeSize
	if height <= 0 || width <= 0 {
		return 0, 0, fmt.Errorf("image: %d×%d pixels", width, height)
	}
	if a := float64(max(height, width)) / float64(min(height, width)); a > maxAspect {
		return 0, 0, fmt.Errorf("image: %d×%d pixels, an aspect of %.0f:1; at most %d:1", width, height, a, maxAspect)
	}
	round := func(x float64) int { return int(math.RoundToEven(x/float64(f))) * f }
	h, w = round(float64(height)), round(float64(width))
	switch {
	case h*w > o.MaxPixels:
		beta := math.Sqrt(float64(height*width) / float64(o.MaxPixels))
		h = max(f, int(math.Floor(float64(height)/beta/float64(f)))*f)
		w = max(f, int(math.Floor(float64(width)/beta/float64(f)))*f)
	case h*w < o.MinPixels:
		beta := math.Sqrt(float64(o.MinPixels) / float64(height*width))
		h = int(math.Ceil(float64(height)*beta/float64(f))) * f
		w = int(math.Ceil(float64(width)*beta/float64(f))) * f
	}
	return h, w, nil
}

// Patches are an image as the vision tower reads it: Data f32 [GridT·GridH·GridW,
// 3·TemporalPatch·PatchSize²], each row one patch's values in (channel,
// frame, y, x) order, the rows in merge blocks (MergeSize×MergeSize patches
// together, the blocks row by row).
type Patches struct {
	Data                []float32
	GridT, GridH, GridW int
	Merge               int
}

// Tokens is how many text positions the image takes: one per merged block.
func (p *Patches) Tokens() int { return p.GridT * p.GridH * p.GridW / (p.Merge * p.Merge) }

// Preprocess resizes img into the pixel budget (Pillow's bicubic), scales
// it to [0, 1], normalizes it by Mean and Std and cuts it into patches, as
// the Qwen2-VL image processor does.
func (o Options) Preprocess(img *Image) (*Patches, error) {
	h, w, err := o.Size(img.H, img.W)
	if err != nil {
		return nil, err
	}
	return o.patchify(resize(img, w, h)), nil
}

// patchify normalizes img (already at its size) and cuts it into patches.
func (o Options) patchify(img *Image) *Patches {
	p, m, t := o.PatchSize, o.MergeSize, o.TemporalPatch
	gh, gw := img.H/p, img.W/p
	row := 3 * t * p * p
	out := &Patches{Data: make([]float32, gh*gw*row), GridT: 1, GridH: gh, GridW: gw, Merge: m}
	// The processor's values: x/255 in float64 rounded to float32, then
	// (x − mean)/std in float32.
	var value [3][256]float32
	for c := range 3 {
		for v := range 256 {
			value[c][v] = (float32(float64(v)*(1.0/255)) - o.Mean[c]) / o.Std[c]
		}
	}
	n := 0
	for by := range gh / m {
		for bx := range gw / m {
			for my := range m {
				for mx := range m {
					py, px := (by*m+my)*p, (bx*m+mx)*p
					dst := out.Data[n*row:]
					i := 0
					for c := range 3 {
						for range t { // a still image: every frame the same
							for y := range p {
								for x := range p {
									dst[i] = value[c][img.Pix[((py+y)*img.W+px+x)*3+c]]
									i++
								}
							}
						}
					}
					n++
				}
			}
		}
	}
	return out
}
