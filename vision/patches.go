package vision

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"

	"bagel/internal/par"
	"bagel/internal/regular"
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

// MaxBudgetPixels bounds a processor's pixel budget (max_pixels, and so
// min_pixels, which scales small images up to it): 4 times the released
// Qwen3.5's 4096², 65,536 tokens and 1.6 GB of patches an image. A damaged
// config's min_pixels of 2⁴⁰ would otherwise scale every image up to a
// terabyte.
const MaxBudgetPixels = 8192 * 8192

// maxPatch bounds the patch, temporal patch and merge sizes (16, 2 and 2
// released), so that no product of them overflows.
const maxPatch = 64

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
	par.Each(gh/m, 1, func(lo, hi int) { // a row of merge blocks a piece
		for by := lo; by < hi; by++ {
			n := by * (gw / m) * m * m // the row's first patch
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
	})
	return out
}

// LoadOptions reads a model folder's preprocessor_config.json (the image
// processor's settings: patch and merge sizes, the pixel budget as
// size.shortest_edge and size.longest_edge, or min_pixels and max_pixels,
// mean and std) over DefaultOptions; a folder without one gets the defaults.
func LoadOptions(dir string) (Options, error) {
	o := DefaultOptions()
	data, err := regular.ReadFile(filepath.Join(dir, "preprocessor_config.json"), 1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return o, nil
	}
	if err != nil {
		return o, err
	}
	var raw struct {
		Patch     int            `json:"patch_size"`
		Temporal  int            `json:"temporal_patch_size"`
		Merge     int            `json:"merge_size"`
		MinPixels int            `json:"min_pixels"`
		MaxPixels int            `json:"max_pixels"`
		RawMean   []float32      `json:"image_mean"`
		RawStd    []float32      `json:"image_std"`
		RawSize   map[string]int `json:"size"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return o, fmt.Errorf("preprocessor_config.json: %w", err)
	}
	for _, f := range []struct {
		v   int
		dst *int
	}{{raw.Patch, &o.PatchSize}, {raw.Temporal, &o.TemporalPatch}, {raw.Merge, &o.MergeSize},
		{raw.MinPixels, &o.MinPixels}, {raw.MaxPixels, &o.MaxPixels},
		{raw.RawSize["shortest_edge"], &o.MinPixels}, {raw.RawSize["longest_edge"], &o.MaxPixels}} {
		if f.v != 0 {
			*f.dst = f.v
		}
	}
	if len(raw.RawMean) == 3 {
		copy(o.Mean[:], raw.RawMean)
	}
	if len(raw.RawStd) == 3 {
		copy(o.Std[:], raw.RawStd)
	}
	switch {
	case o.PatchSize <= 0 || o.TemporalPatch <= 0 || o.MergeSize <= 0:
		return o, fmt.Errorf("preprocessor_config.json: patch %d, temporal patch %d, merge %d", o.PatchSize, o.TemporalPatch, o.MergeSize)
	case o.PatchSize > maxPatch || o.TemporalPatch > maxPatch || o.MergeSize > maxPatch:
		return o, fmt.Errorf("preprocessor_config.json: patch %d, temporal patch %d, merge %d; at most %d each", o.PatchSize, o.TemporalPatch, o.MergeSize, maxPatch)
	case o.MinPixels <= 0 || o.MaxPixels < o.MinPixels:
		return o, fmt.Errorf("preprocessor_config.json: a pixel budget of %d to %d", o.MinPixels, o.MaxPixels)
	case o.MaxPixels > MaxBudgetPixels:
		return o, fmt.Errorf("preprocessor_config.json: a pixel budget of up to %d pixels; Bagel reads at most %d (8192²)", o.MaxPixels, MaxBudgetPixels)
	case o.Std[0] == 0 || o.Std[1] == 0 || o.Std[2] == 0:
		return o, fmt.Errorf("preprocessor_config.json: image_std %v", o.Std)
	}
	return o, nil
}
