package vision

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	_ "image/jpeg" // the formats Decode reads
	_ "image/png"

	_ "golang.org/x/image/webp"

	"bagel/internal/par"
)

// Image is 8-bit RGB, row by row: Pix[(y·W + x)·3 + c].
type Image struct {
	W, H int
	Pix  []uint8
}

// MaxSide bounds an image's width and height before it is decoded: a larger
// one (a decompression bomb, or a panorama no reply needs at full size) is
// refused with its size.
const MaxSide = 16384

// Decode reads a PNG, JPEG, GIF (its first frame) or WebP image (and on a
// Mac a HEIC/HEIF photo, heic.go) into RGB as
// Pillow's convert("RGB") would: alpha dropped (not blended), 16-bit
// channels cut to their high byte, gray and palettes spread to RGB; a JPEG's
// EXIF orientation is applied first (transformers' load_image transposes
// so). A file that is no such image, is cut short, or has a zero or too
// large side is refused with what is wrong.
func Decode(data []byte) (*Image, error) {
	if len(data) == 0 {
		return nil, errors.New("image: the file is empty")
	}
	if isHEIF(data) {
		return decodeHEIF(data) // heic.go
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("image: not a PNG, JPEG, GIF or WebP image (%v)", err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, fmt.Errorf("image: the %s is %d×%d pixels", format, cfg.Width, cfg.Height)
	}
	if cfg.Width > MaxSide || cfg.Height > MaxSide {
		return nil, fmt.Errorf("image: the %s is %d×%d pixels; at most %d on a side", format, cfg.Width, cfg.Height, MaxSide)
	}
	var img image.Image
	if format == "gif" {
		var g *gif.GIF
		if g, err = gif.DecodeAll(bytes.NewReader(data)); err == nil {
			img = firstFrame(g)
		}
	} else {
		img, _, err = image.Decode(bytes.NewReader(data))
	}
	if err != nil {
		return nil, fmt.Errorf("image: the %s cannot be read (%v)", format, err)
	}
	var out *Image
	if m, ok := img.(*image.YCbCr); ok {
		out = ycbcrToRGB(m)
	} else {
		out = toRGB(img)
	}
	if format == "jpeg" {
		out = orient(out, jpegOrientation(data))
	}
	return out, nil
}

// firstFrame is a GIF's first frame on its canvas (what Pillow shows first).
func firstFrame(g *gif.GIF) image.Image {
	frame := g.Image[0]
	if frame.Rect == image.Rect(0, 0, g.Config.Width, g.Config.Height) || g.Config.Width == 0 {
		return frame
	}
	canvas := image.NewPaletted(image.Rect(0, 0, g.Config.Width, g.Config.Height), frame.Palette)
	for y := frame.Rect.Min.Y; y < frame.Rect.Max.Y; y++ {
		for x := frame.Rect.Min.X; x < frame.Rect.Max.X; x++ {
			canvas.SetColorIndex(x, y, frame.ColorIndexAt(x, y))
		}
	}
	return canvas
}

// toRGB drops alpha without blending: a pixel's color as stored.
func toRGB(img image.Image) *Image {
	b := img.Bounds()
	out := &Image{W: b.Dx(), H: b.Dy(), Pix: make([]uint8, b.Dx()*b.Dy()*3)}
	if rgbFast(img, out) {
		return out
	}
	i := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			var r, g, bl uint8
			switch c := img.At(x, y).(type) {
			case color.NRGBA:
				r, g, bl = c.R, c.G, c.B
			case color.NRGBA64:
				r, g, bl = uint8(c.R>>8), uint8(c.G>>8), uint8(c.B>>8)
			case color.Gray:
				r, g, bl = c.Y, c.Y, c.Y
			case color.Gray16:
				r, g, bl = uint8(c.Y>>8), uint8(c.Y>>8), uint8(c.Y>>8)
			default:
				n := color.NRGBAModel.Convert(c).(color.NRGBA)
				r, g, bl = n.R, n.G, n.B
			}
			out.Pix[i], out.Pix[i+1], out.Pix[i+2] = r, g, bl
			i += 3
		}
	}
	return out
}

// jpegOrientation is the EXIF orientation (1 to 8) of a JPEG's APP1
// segment; 1 (as stored) when it has none or it cannot be read.
func jpegOrientation(data []byte) int {
	for i := 2; i+4 <= len(data) && data[i] == 0xff; {
		marker, n := data[i+1], int(binary.BigEndian.Uint16(data[i+2:]))
		if marker == 0xda || n < 2 || i+2+n > len(data) { // the image data: no EXIF before it
			return 1
		}
		seg := data[i+4 : i+2+n]
		if marker == 0xe1 && len(seg) > 14 && string(seg[:6]) == "Exif\x00\x00" {
			return tiffOrientation(seg[6:])
		}
		i += 2 + n
	}
	return 1
}

// tiffOrientation reads tag 0x0112 of a TIFF header's first IFD.
func tiffOrientation(t []byte) int {
	var order binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		order = binary.LittleEndian
	case "MM":
		order = binary.BigEndian
	default:
		return 1
	}
	ifd := int(order.Uint32(t[4:]))
	if ifd < 8 || ifd+2 > len(t) {
		return 1
	}
	count := int(order.Uint16(t[ifd:]))
	for e := 0; e < count; e++ {
		at := ifd + 2 + 12*e
		if at+12 > len(t) {
			return 1
		}
		if order.Uint16(t[at:]) == 0x0112 && order.Uint16(t[at+2:]) == 3 { // SHORT
			if v := int(order.Uint16(t[at+8:])); v >= 1 && v <= 8 {
				return v
			}
			return 1
		}
	}
	return 1
}

// orient turns img as EXIF orientation o asks (Pillow's exif_transpose):
// 2 mirror, 3 half turn, 4 flip, 5 transpose, 6 quarter turn clockwise, 7
// transverse, 8 quarter turn counterclockwise.
func orient(img *Image, o int) *Image {
	if o <= 1 || o > 8 {
		return img
	}
	w, h := img.W, img.H
	if o >= 5 {
		w, h = h, w
	}
	out := &Image{W: w, H: h, Pix: make([]uint8, len(img.Pix))}
	for y := range h {
		for x := range w {
			sx, sy := x, y // the source pixel of (x, y)
			switch o {
			case 2:
				sx = img.W - 1 - x
			case 3:
				sx, sy = img.W-1-x, img.H-1-y
			case 4:
				sy = img.H - 1 - y
			case 5:
				sx, sy = y, x
			case 6:
				sx, sy = y, img.H-1-x
			case 7:
				sx, sy = img.W-1-y, img.H-1-x
			case 8:
				sx, sy = img.W-1-y, x
			}
			copy(out.Pix[(y*w+x)*3:(y*w+x)*3+3], img.Pix[(sy*img.W+sx)*3:])
		}
	}
	return out
}

// ycbcrToRGB converts a JPEG's planes as libjpeg does by default: chroma
// upsampled with its "fancy" triangle filter (4:2:0 and 4:2:2; nearest
// for other ratios), then its fixed-point YCbCr → RGB (jdcolor.c).
func ycbcrToRGB(m *image.YCbCr) *Image {
	b := m.Rect
	w, h := b.Dx(), b.Dy()
	cw, ch := (w+1)/2, h
	switch m.SubsampleRatio {
	case image.YCbCrSubsampleRatio420:
		ch = (h + 1) / 2
	case image.YCbCrSubsampleRatio422:
	default:
		return toRGB(m)
	}
	up := func(plane []uint8) []uint8 { // chroma [ch][cw] at stride m.CStride → [h][w]
		out := make([]uint8, w*h)
		at := func(x, y int) int { return int(plane[min(max(y, 0), ch-1)*m.CStride+min(max(x, 0), cw-1)]) }
		for y := range h {
			cy, near := y, y // a 4:2:2 row is its own
			if ch != h {
				cy = y / 2
				near = cy - 1 // the row above for an even output row, below for an odd one
				if y%2 == 1 {
					near = cy + 1
				}
			}
			// Column sums of three parts this chroma row, one the nearer other.
			colsum := func(x int) int {
				if ch == h {
					return 4 * at(x, cy)
				}
				return 3*at(x, cy) + at(x, near)
			}
			for x := range w {
				cx := x / 2
				this := colsum(cx)
				var v int
				switch {
				case cw == 1:
					v = (this*4 + 8) >> 4
				case x%2 == 0 && cx == 0:
					v = (this*4 + 8) >> 4
				case x%2 == 0:
					v = (this*3 + colsum(cx-1) + 8) >> 4
				case cx == cw-1:
					v = (this*4 + 7) >> 4
				default:
					v = (this*3 + colsum(cx+1) + 7) >> 4
				}
				out[y*w+x] = uint8(v)
			}
		}
		return out
	}
	cb, cr := up(m.Cb), up(m.Cr)
	const scale = 16
	fix := func(x float64) int { return int(x*(1<<scale) + 0.5) }
	half := 1 << (scale - 1)
	out := &Image{W: w, H: h, Pix: make([]uint8, w*h*3)}
	clamp := func(v int) uint8 { return uint8(min(max(v, 0), 255)) }
	for y := range h {
		for x := range w {
			yy := int(m.Y[y*m.YStride+x])
			b, r := int(cb[y*w+x])-128, int(cr[y*w+x])-128
			i := (y*w + x) * 3
			out.Pix[i] = clamp(yy + (fix(1.40200)*r+half)>>scale)
			out.Pix[i+1] = clamp(yy + (-fix(0.34414)*b+half-fix(0.71414)*r)>>scale)
			out.Pix[i+2] = clamp(yy + (fix(1.77200)*b+half)>>scale)
		}
	}
	return out
}

// rgbFast is toRGB's loop over the pixel arrays of the types PNG decodes
// most images to (8-bit RGB(A) and gray): the same values, without an
// interface call and a color conversion a pixel (60 ms for a 1024² PNG on
// the H200's host, against about 3). It says false for other types.
func rgbFast(img image.Image, out *Image) bool {
	b := img.Bounds()
	w := b.Dx()
	each := func(row func(y int, dst []uint8)) {
		par.Each(b.Dy(), 64, func(lo, hi int) {
			for y := lo; y < hi; y++ {
				row(b.Min.Y+y, out.Pix[y*w*3:(y+1)*w*3])
			}
		})
	}
	switch m := img.(type) {
	case *image.NRGBA:
		each(func(y int, dst []uint8) {
			src := m.Pix[m.PixOffset(b.Min.X, y):]
			for x := range w {
				dst[3*x], dst[3*x+1], dst[3*x+2] = src[4*x], src[4*x+1], src[4*x+2]
			}
		})
	case *image.RGBA: // alpha-premultiplied: opaque pixels as stored, others as NRGBAModel unmultiplies them
		each(func(y int, dst []uint8) {
			src := m.Pix[m.PixOffset(b.Min.X, y):]
			for x := range w {
				p := src[4*x : 4*x+4 : 4*x+4]
				if p[3] != 0xff {
					n := color.NRGBAModel.Convert(color.RGBA{p[0], p[1], p[2], p[3]}).(color.NRGBA)
					dst[3*x], dst[3*x+1], dst[3*x+2] = n.R, n.G, n.B
					continue
				}
				dst[3*x], dst[3*x+1], dst[3*x+2] = p[0], p[1], p[2]
			}
		})
	case *image.Gray:
		each(func(y int, dst []uint8) {
			src := m.Pix[m.PixOffset(b.Min.X, y):]
			for x := range w {
				dst[3*x], dst[3*x+1], dst[3*x+2] = src[x], src[x], src[x]
			}
		})
	default:
		return false
	}
	return true
}
