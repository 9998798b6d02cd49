package engine

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"os"
	"time"

	"bagel/qwen"
	"bagel/vision"
)

// Image is an image read for a prompt: decoded, resized and cut into
// patches as the model's processor does (package vision), and run through
// the model's vision tower. Its Tokens pad tokens in a prompt take its
// embeddings.
type Image struct {
	// Key is the SHA-256 of the file's bytes: what prompt reuse keys an
	// image's positions on.
	Key [32]byte
	// Grid is the patch grid the processor cut, Width and Height the
	// resized image's pixels.
	Grid          qwen.ImageGrid
	Width, Height int
	// Tokens is how many text positions the image takes (one per merge
	// block): MergedRows × MergedCols.
	Tokens                 int
	MergedRows, MergedCols int
	// Prepare is the host's time decoding, resizing and cutting the image
	// into patches; Tower the vision tower's, on the device (both wall
	// time: what bench --image reports).
	Prepare, Tower time.Duration
	// embeds are the tower's outputs, bf16 [Tokens, hidden] bit patterns
	// (nil for an image for a remote engine: NewRemoteImage).
	embeds []uint16
	// data is the file's bytes and mediaType its format ("image/png"), for
	// an engine that reads the image itself (a remote one).
	data      []byte
	mediaType string
}

// Data is the image file's bytes and MediaType its format, for an engine
// that reads the image itself.
func (img *Image) Data() []byte { return img.data }

// MediaType is the image file's format: image/png, image/jpeg, image/gif,
// image/webp or image/heic.
func (img *Image) MediaType() string { return img.mediaType }

// NewRemoteImage is an image file for a remote engine, which runs its own
// processor and tower: decoded here only to refuse a broken file by name.
func NewRemoteImage(data []byte) (*Image, error) {
	img, err := vision.Decode(data)
	if err != nil {
		return nil, err
	}
	return &Image{Key: sha256.Sum256(data), Width: img.W, Height: img.H, data: data, mediaType: mediaType(data)}, nil
}

// mediaType is an image file's format by its first bytes.
func mediaType(data []byte) string {
	if len(data) >= 12 && string(data[4:8]) == "ftyp" {
		return "image/heic"
	}
	return http.DetectContentType(data)
}

// visionWhyNot says why the model has no usable tower.
func (e *Engine) visionWhyNot() string {
	if e.model.VisionProblem != "" {
		return e.model.VisionProblem
	}
	_, status := e.VisionStatus()
	return status
}

// EncodeImage reads an image file (PNG, JPEG, GIF's first frame, WebP) and
// runs it through the model's vision tower. A model without a tower, or a
// file that is not an image it can read, gets an error that says which.
func (e *Engine) EncodeImage(data []byte) (*Image, error) {
	return e.EncodeImageContext(context.Background(), data)
}

// EncodeImageContext is EncodeImage that gives up, with ctx's error,
// between the tower's blocks once ctx is done.
func (e *Engine) EncodeImageContext(ctx context.Context, data []byte) (*Image, error) {
	p, err := e.prepareImage(data)
	if err != nil {
		return nil, err
	}
	return e.towerImage(ctx, p)
}

// EncodeImagesContext is EncodeImageContext for a request's images, in
// order: each image is decoded and resized on the host while the tower
// reads the one before (on the H200 a 1024² PNG's host work, ~55 ms, hides
// behind the tower's ~66), one image ahead at most. An error (an
// *ImageError) names the image and stops the rest.
func (e *Engine) EncodeImagesContext(ctx context.Context, datas [][]byte) ([]*Image, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // the host's goroutine stops with an early return
	type prepared struct {
		p   *preparedImage
		err error
	}
	ahead := make(chan prepared, 1)
	go func() {
		defer close(ahead)
		for _, data := range datas {
			p, err := e.prepareImage(data)
			select {
			case ahead <- prepared{p, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	out := make([]*Image, 0, len(datas))
	for i := range datas {
		next, ok := <-ahead
		if !ok {
			return nil, ctx.Err()
		}
		if next.err != nil {
			return nil, &ImageError{Index: i, Err: next.err}
		}
		img, err := e.towerImage(ctx, next.p)
		if err != nil {
			return nil, &ImageError{Index: i, Err: err}
		}
		out = append(out, img)
	}
	return out, nil
}

// ImageError is EncodeImagesContext's error: which image (0-based) and why.
type ImageError struct {
	Index int
	Err   error
}

func (e *ImageError) Error() string { return fmt.Sprintf("image %d: %v", e.Index+1, e.Err) }
func (e *ImageError) Unwrap() error { return e.Err }

// preparedImage is an image decoded, resized and cut into patches on the
// host, waiting for the tower.
type preparedImage struct {
	img    *Image
	pixels []float32
}

// prepareImage is EncodeImage's host half: the checks, decoding, resizing
// and patches.
func (e *Engine) prepareImage(data []byte) (*preparedImage, error) {
	if !e.model.HasVision() {
		return nil, fmt.Errorf("this model cannot read images: %s", e.visionWhyNot())
	}
	opts, err := vision.LoadOptions(e.Dir)
	if err != nil {
		return nil, err
	}
	merge := e.Config.Vision.Merge
	if opts.MergeSize != merge || opts.PatchSize != e.Config.Vision.Patch {
		return nil, fmt.Errorf("preprocessor_config.json cuts patches of %d merged %d×%d, the vision tower takes %d merged %d×%d",
			opts.PatchSize, opts.MergeSize, opts.MergeSize, e.Config.Vision.Patch, merge, merge)
	}
	start := time.Now()
	img, err := vision.Decode(data)
	if err != nil {
		return nil, err
	}
	p, err := opts.Preprocess(img)
	if err != nil {
		return nil, err
	}
	grid := qwen.ImageGrid{Frames: p.GridT, Rows: p.GridH, Cols: p.GridW}
	out := &Image{Key: sha256.Sum256(data), Grid: grid, Width: p.GridW * opts.PatchSize, Height: p.GridH * opts.PatchSize,
		Tokens: e.model.VisionTokens(grid), MergedRows: grid.Rows / merge, MergedCols: grid.Cols / merge,
		Prepare: time.Since(start), data: data, mediaType: mediaType(data)}
	return &preparedImage{img: out, pixels: p.Data}, nil
}

// towerImage is EncodeImage's device half: the prepared image through the
// tower, giving up between its blocks once ctx is done.
func (e *Engine) towerImage(ctx context.Context, p *preparedImage) (*Image, error) {
	start := time.Now()
	out := p.img
	err := e.loop.do(func() error {
		var err error
		out.embeds, err = e.model.EncodeImage(e.ctx, p.pixels, out.Grid, ctx.Err)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("encode image: %w", err)
	}
	out.Tower = time.Since(start)
	return out, nil
}

// MaxImageFileBytes is the largest image file read (a 4096² PNG of noise is
// about 50 MB).
const MaxImageFileBytes = 100 << 20

// ReadImageFile reads an image file for EncodeImage, refusing one that is
// empty or larger than MaxImageFileBytes by name.
func ReadImageFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	switch {
	case fi.IsDir():
		return nil, fmt.Errorf("%s is a folder, not an image", path)
	case fi.Size() == 0:
		return nil, fmt.Errorf("%s is empty", path)
	case fi.Size() > MaxImageFileBytes:
		return nil, fmt.Errorf("%s is %d MB: images of at most %d MB are read", path, fi.Size()>>20, MaxImageFileBytes>>20)
	}
	return os.ReadFile(path)
}

// ImageTokenCount is how many prompt tokens an image file takes with the
// loaded model, without running its tower.
func (e *Engine) ImageTokenCount(data []byte) (int, error) {
	if !e.model.HasVision() {
		return 0, fmt.Errorf("this model cannot read images: %s", e.visionWhyNot())
	}
	return ImageTokens(e.Dir, data)
}

// ImageTokens is how many prompt tokens an image file takes in the model
// folder dir (its processor's resize, one token per merged patch block),
// without loading the model: for sizing a context before Load.
func ImageTokens(dir string, data []byte) (int, error) {
	opts, err := vision.LoadOptions(dir)
	if err != nil {
		return 0, err
	}
	img, err := vision.Decode(data)
	if err != nil {
		return 0, err
	}
	h, w, err := opts.Size(img.H, img.W)
	if err != nil {
		return 0, err
	}
	f := opts.PatchSize * opts.MergeSize
	return (h / f) * (w / f), nil
}

// CanReadImages says whether the loaded model reads images, and why not
// when it does not ("" when it does).
func (e *Engine) CanReadImages() (bool, string) {
	if e.model.HasVision() {
		return true, ""
	}
	return false, e.visionWhyNot()
}
