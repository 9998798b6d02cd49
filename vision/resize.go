package vision

import "math"

// Bicubic resampling as Pillow's Image.resize(BICUBIC) does it, bit for bit
// on 8-bit images (Pillow's Resample.c, which transformers' Qwen2-VL image
// processor calls): separable, the horizontal pass first, each output
// pixel a normalized bicubic (a = −0.5) over a support widened by the
// downscale factor (antialiasing), the weights in fixed point with 22
// fraction bits, each pass rounded and clipped to 8 bits.

// precisionBits is Pillow's PRECISION_BITS for 8-bit images.
const precisionBits = 32 - 8 - 2

// bicubic is Pillow's bicubic_filter (a = −0.5).
func bicubic(x float64) float64 {
	const a = -0.5
	x = math.Abs(x)
	switch {
	case x < 1:
		return ((a+2)*x-(a+3))*x*x + 1
	case x < 2:
		return (((x-5)*x+8)*x - 4) * a
	}
	return 0
}

// coefficients are one pass's: for output i, the first input first[i], its
// count n[i], and the fixed-point weights k[i·size : i·size+n[i]].
type coefficients struct {
	first, n []int
	k        []int32
	size     int
}

// precompute is Pillow's precompute_coeffs and normalize_coeffs_8bpc for
// inSize inputs resampled to outSize.
func precompute(inSize, outSize int) coefficients {
	scale := float64(inSize) / float64(outSize)
	filterScale := max(scale, 1)
	support := 2 * filterScale
	size := int(math.Ceil(support))*2 + 1
	c := coefficients{first: make([]int, outSize), n: make([]int, outSize), k: make([]int32, outSize*size), size: size}
	w := make([]float64, size)
	for i := range outSize {
		center := (float64(i) + 0.5) * scale
		lo := max(int(center-support+0.5), 0) // C's truncation toward zero, then the clamp
		hi := min(int(center+support+0.5), inSize) - lo
		total := 0.0
		for x := range hi {
			w[x] = bicubic((float64(x+lo) - center + 0.5) / filterScale)
			total += w[x]
		}
		for x := range hi {
			if total != 0 {
				w[x] /= total
			}
			if w[x] < 0 {
				c.k[i*size+x] = int32(-0.5 + w[x]*(1<<precisionBits))
			} else {
				c.k[i*size+x] = int32(0.5 + w[x]*(1<<precisionBits))
			}
		}
		c.first[i], c.n[i] = lo, hi
	}
	return c
}

// clip8 is Pillow's clip8: the fixed-point sum back to a byte.
func clip8(s int32) uint8 {
	v := s >> precisionBits
	return uint8(min(max(v, 0), 255))
}

// resize resamples img to w×h as Pillow's bicubic resize.
func resize(img *Image, w, h int) *Image {
	out := img
	if w != img.W {
		out = resizeHorizontal(out, w)
	}
	if h != img.H {
		out = resizeVertical(out, h)
	}
	if out == img {
		out = &Image{W: img.W, H: img.H, Pix: append([]uint8(nil), img.Pix...)}
	}
	return out
}

func resizeHorizontal(in *Image, w int) *Image {
	c := precompute(in.W, w)
	out := &Image{W: w, H: in.H, Pix: make([]uint8, w*in.H*3)}
	for y := range in.H {
		row := in.Pix[y*in.W*3:]
		for x := range w {
			k := c.k[x*c.size:]
			for ch := range 3 {
				s := int32(1 << (precisionBits - 1))
				for j := range c.n[x] {
					s += int32(row[(c.first[x]+j)*3+ch]) * k[j]
				}
				out.Pix[(y*w+x)*3+ch] = clip8(s)
			}
		}
	}
	return out
}

func resizeVertical(in *Image, h int) *Image {
	c := precompute(in.H, h)
	out := &Image{W: in.W, H: h, Pix: make([]uint8, in.W*h*3)}
	for y := range h {
		k := c.k[y*c.size:]
		for x := range in.W {
			for ch := range 3 {
				s := int32(1 << (precisionBits - 1))
				for j := range c.n[y] {
					s += int32(in.Pix[((c.first[y]+j)*in.W+x)*3+ch]) * k[j]
				}
				out.Pix[(y*in.W+x)*3+ch] = clip8(s)
			}
		}
	}
	return out
}
