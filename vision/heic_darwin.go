//go:build darwin

package vision

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// decodeHEIF decodes a HEIF image with ImageIO: the first image, its EXIF
// orientation applied (CGImageSourceCreateThumbnailAtIndex with
// kCGImageSourceCreateThumbnailWithTransform, at full size), drawn into an
// 8-bit RGB bitmap in the device's RGB space (colour managed, as Preview
// shows it). Written from Apple's C headers; it has never run here (no Mac
// in this project's machines): a failure is an error naming the step.
func decodeHEIF(data []byte) (*Image, error) {
	if err := loadImageIO(); err != nil {
		return nil, fmt.Errorf("image: a HEIC/HEIF photo, which needs macOS's ImageIO: %w", err)
	}
	cfData := cfDataCreate(0, unsafe.Pointer(&data[0]), int64(len(data)))
	if cfData == 0 {
		return nil, errors.New("image: the HEIC/HEIF data could not be handed to ImageIO")
	}
	defer cfRelease(cfData)
	src := cgImageSourceCreateWithData(cfData, 0)
	if src == 0 {
		return nil, errors.New("image: ImageIO cannot read this HEIC/HEIF file")
	}
	defer cfRelease(src)
	w, h, err := heifSize(src)
	if err != nil {
		return nil, err
	}
	opts, err := heifOptions(max(w, h))
	if err != nil {
		return nil, err
	}
	defer cfRelease(opts)
	img := cgImageSourceCreateThumbnailAtIndex(src, 0, opts)
	if img == 0 {
		return nil, errors.New("image: ImageIO could not decode this HEIC/HEIF file")
	}
	defer cfRelease(img)
	w, h = int(cgImageGetWidth(img)), int(cgImageGetHeight(img))
	if w <= 0 || h <= 0 || w > MaxSide || h > MaxSide {
		return nil, fmt.Errorf("image: the heic is %d×%d pixels; at most %d on a side", w, h, MaxSide)
	}
	rgbx := make([]uint8, 4*w*h)
	space := cgColorSpaceCreateDeviceRGB()
	defer cfRelease(space)
	const noneSkipLast = 5 // kCGImageAlphaNoneSkipLast: RGBX, the X ignored
	ctx := cgBitmapContextCreate(unsafe.Pointer(&rgbx[0]), uint64(w), uint64(h), 8, uint64(4*w), space, noneSkipLast)
	if ctx == 0 {
		return nil, errors.New("image: a bitmap for the HEIC/HEIF photo could not be made")
	}
	defer cfRelease(ctx)
	cgContextDrawImage(ctx, cgRect{W: float64(w), H: float64(h)}, img)
	out := &Image{W: w, H: h, Pix: make([]uint8, 3*w*h)}
	for i := range w * h {
		copy(out.Pix[3*i:3*i+3], rgbx[4*i:4*i+3])
	}
	return out, nil
}

// heifSize reads the first image's pixel size from its properties, so that
// a decompression bomb is refused before it is decoded.
func heifSize(src uintptr) (w, h int, err error) {
	props := cgImageSourceCopyPropertiesAtIndex(src, 0, 0)
	if props == 0 {
		return 0, 0, errors.New("image: the HEIC/HEIF file has no image ImageIO can read")
	}
	defer cfRelease(props)
	get := func(key uintptr) int {
		n := cfDictionaryGetValue(props, key)
		var v int64
		if n == 0 || !cfNumberGetValue(n, cfNumberSInt64Type, unsafe.Pointer(&v)) {
			return 0
		}
		return int(v)
	}
	w, h = get(deref(kCGImagePropertyPixelWidth)), get(deref(kCGImagePropertyPixelHeight))
	switch {
	case w <= 0 || h <= 0:
		return 0, 0, fmt.Errorf("image: the heic is %d×%d pixels", w, h)
	case w > MaxSide || h > MaxSide:
		return 0, 0, fmt.Errorf("image: the heic is %d×%d pixels; at most %d on a side", w, h, MaxSide)
	}
	return w, h, nil
}

// heifOptions are the thumbnail options that make it the whole image,
// turned upright: from the image always, with its transform, at its size.
func heifOptions(side int) (uintptr, error) {
	n := int64(side)
	num := cfNumberCreate(0, cfNumberSInt64Type, unsafe.Pointer(&n))
	if num == 0 {
		return 0, errors.New("image: ImageIO's options could not be made")
	}
	defer cfRelease(num)
	yes := deref(kCFBooleanTrue)
	keys := []uintptr{
		deref(kCGImageSourceCreateThumbnailFromImageAlways),
		deref(kCGImageSourceCreateThumbnailWithTransform),
		deref(kCGImageSourceThumbnailMaxPixelSize),
	}
	values := []uintptr{yes, yes, num}
	d := cfDictionaryCreate(0, unsafe.Pointer(&keys[0]), unsafe.Pointer(&values[0]), int64(len(keys)),
		kCFTypeDictionaryKeyCallBacks, kCFTypeDictionaryValueCallBacks)
	if d == 0 {
		return 0, errors.New("image: ImageIO's options could not be made")
	}
	return d, nil
}

// deref is the pointer stored at addr (a C global's address from Dlsym:
// the constant object it holds).
func deref(addr uintptr) uintptr { return **(**uintptr)(unsafe.Pointer(&addr)) }

// cgRect is CoreGraphics' CGRect (origin, size) in CGFloat (64-bit).
type cgRect struct{ X, Y, W, H float64 }

// cfNumberSInt64Type is kCFNumberSInt64Type.
const cfNumberSInt64Type = 4

// The functions and constants of CoreFoundation, CoreGraphics and ImageIO
// (their C signatures, CF and CG objects as uintptr).
var (
	cfDataCreate                                                                             func(alloc uintptr, bytes unsafe.Pointer, n int64) uintptr
	cfRelease                                                                                func(obj uintptr)
	cfNumberCreate                                                                           func(alloc uintptr, kind int64, value unsafe.Pointer) uintptr
	cfNumberGetValue                                                                         func(num uintptr, kind int64, value unsafe.Pointer) bool
	cfDictionaryCreate                                                                       func(alloc uintptr, keys, values unsafe.Pointer, n int64, keyCB, valueCB uintptr) uintptr
	cfDictionaryGetValue                                                                     func(d, key uintptr) uintptr
	cgImageSourceCreateWithData                                                              func(data, options uintptr) uintptr
	cgImageSourceCopyPropertiesAtIndex                                                       func(src uintptr, index uint64, options uintptr) uintptr
	cgImageSourceCreateThumbnailAtIndex                                                      func(src uintptr, index uint64, options uintptr) uintptr
	cgImageGetWidth, cgImageGetHeight                                                        func(img uintptr) uint64
	cgColorSpaceCreateDeviceRGB                                                              func() uintptr
	cgBitmapContextCreate                                                                    func(data unsafe.Pointer, w, h, bitsPerComponent, bytesPerRow uint64, space uintptr, info uint32) uintptr
	cgContextDrawImage                                                                       func(ctx uintptr, rect cgRect, img uintptr)
	kCFBooleanTrue                                                                           uintptr // the addresses of the constants (each a pointer to the object)
	kCFTypeDictionaryKeyCallBacks                                                            uintptr // the addresses of the callback structs themselves
	kCFTypeDictionaryValueCallBacks                                                          uintptr
	kCGImageSourceCreateThumbnailFromImageAlways, kCGImageSourceCreateThumbnailWithTransform uintptr
	kCGImageSourceThumbnailMaxPixelSize                                                      uintptr
	kCGImagePropertyPixelWidth, kCGImagePropertyPixelHeight                                  uintptr
)

var (
	imageIOOnce sync.Once
	imageIOErr  error
)

// loadImageIO opens the three frameworks and binds what decodeHEIF calls, once.
func loadImageIO() error {
	imageIOOnce.Do(func() {
		const mode = purego.RTLD_NOW | purego.RTLD_GLOBAL
		open := func(fw string) uintptr {
			h, err := purego.Dlopen("/System/Library/Frameworks/"+fw+".framework/"+fw, mode)
			if err != nil && imageIOErr == nil {
				imageIOErr = fmt.Errorf("%s: %w", fw, err)
			}
			return h
		}
		cf, cg, io := open("CoreFoundation"), open("CoreGraphics"), open("ImageIO")
		if imageIOErr != nil {
			return
		}
		sym := func(lib uintptr, name string) uintptr {
			p, err := purego.Dlsym(lib, name)
			if err != nil && imageIOErr == nil {
				imageIOErr = fmt.Errorf("%s: %w", name, err)
			}
			return p
		}
		for _, c := range []struct {
			dst  *uintptr
			lib  uintptr
			name string
		}{
			{&kCFBooleanTrue, cf, "kCFBooleanTrue"},
			{&kCFTypeDictionaryKeyCallBacks, cf, "kCFTypeDictionaryKeyCallBacks"},
			{&kCFTypeDictionaryValueCallBacks, cf, "kCFTypeDictionaryValueCallBacks"},
			{&kCGImageSourceCreateThumbnailFromImageAlways, io, "kCGImageSourceCreateThumbnailFromImageAlways"},
			{&kCGImageSourceCreateThumbnailWithTransform, io, "kCGImageSourceCreateThumbnailWithTransform"},
			{&kCGImageSourceThumbnailMaxPixelSize, io, "kCGImageSourceThumbnailMaxPixelSize"},
			{&kCGImagePropertyPixelWidth, io, "kCGImagePropertyPixelWidth"},
			{&kCGImagePropertyPixelHeight, io, "kCGImagePropertyPixelHeight"},
		} {
			*c.dst = sym(c.lib, c.name)
		}
		if imageIOErr != nil {
			return
		}
		purego.RegisterLibFunc(&cfDataCreate, cf, "CFDataCreate")
		purego.RegisterLibFunc(&cfRelease, cf, "CFRelease")
		purego.RegisterLibFunc(&cfNumberCreate, cf, "CFNumberCreate")
		purego.RegisterLibFunc(&cfNumberGetValue, cf, "CFNumberGetValue")
		purego.RegisterLibFunc(&cfDictionaryCreate, cf, "CFDictionaryCreate")
		purego.RegisterLibFunc(&cfDictionaryGetValue, cf, "CFDictionaryGetValue")
		purego.RegisterLibFunc(&cgImageSourceCreateWithData, io, "CGImageSourceCreateWithData")
		purego.RegisterLibFunc(&cgImageSourceCopyPropertiesAtIndex, io, "CGImageSourceCopyPropertiesAtIndex")
		purego.RegisterLibFunc(&cgImageSourceCreateThumbnailAtIndex, io, "CGImageSourceCreateThumbnailAtIndex")
		purego.RegisterLibFunc(&cgImageGetWidth, cg, "CGImageGetWidth")
		purego.RegisterLibFunc(&cgImageGetHeight, cg, "CGImageGetHeight")
		purego.RegisterLibFunc(&cgColorSpaceCreateDeviceRGB, cg, "CGColorSpaceCreateDeviceRGB")
		purego.RegisterLibFunc(&cgBitmapContextCreate, cg, "CGBitmapContextCreate")
		purego.RegisterLibFunc(&cgContextDrawImage, cg, "CGContextDrawImage")
	})
	return imageIOErr
}
