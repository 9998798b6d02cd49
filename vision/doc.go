// Package vision turns image files into what Qwen3.5's vision tower reads,
// as transformers' Qwen2-VL image processor does: decoded to RGB (Go's
// image packages and golang.org/x/image/webp; a JPEG's EXIF orientation
// applied), resized into the model's pixel budget to multiples of 32, scaled
// and normalized, and cut into 16×16 patches of two frames in merge-block
// order (Options.Preprocess, Patches).
//
// The resampling is written here, not taken from a library: the tower was
// trained on Pillow's bicubic resample, and no Go package reproduces it
// (golang.org/x/image/draw's CatmullRom is another kernel and rounds once);
// resize.go is Pillow's fixed-point algorithm, checked byte for byte
// against Pillow; so are libjpeg's chroma upsampling and color conversion
// (decode.go: Go's own are nearest and another rounding), leaving a JPEG
// within two levels of Pillow's (Go's inverse DCT is not libjpeg's). Not
// matched yet: HEIC (a Mac's photos), and transformers' fast processor
// (torchvision's resize), to be compared on a machine with transformers.
package vision
