package server

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"

	"bagel/engine"
)

// Images in requests: OpenAI's image_url parts (data: URLs only: the server
// fetches nothing on a client's behalf), Anthropic's base64 image blocks,
// Ollama's images lists. Each is decoded here and run through the model's
// vision tower before the request waits for its turn, so that a broken
// image is refused with the reason before any generation.

// ImageEncoder is an engine that reads images: engine.Engine does when its
// model has a vision tower (a remote engine does not yet).
// EncodeImagesContext reads a request's images in order (the next one
// decoded on the host while the tower reads the one before); ImageTokenCount
// is an image's prompt tokens without running the tower (count_tokens).
type ImageEncoder interface {
	EncodeImagesContext(ctx context.Context, datas [][]byte) ([]*engine.Image, error)
	ImageTokenCount(data []byte) (int, error)
}

// maxImages is the most images one request may carry.
const maxImages = 16

// imageFromURL is an image_url's bytes: a data: URL in base64.
func imageFromURL(url string) ([]byte, error) {
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		return nil, fmt.Errorf("image_url %q: only data: URLs are read (data:image/png;base64,...): this server fetches no URL on a client's behalf", clip(url))
	}
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok || !strings.HasSuffix(meta, ";base64") {
		return nil, fmt.Errorf("image_url: a data: URL in base64 is read (data:image/png;base64,...)")
	}
	return imageFromBase64(payload)
}

// imageFromBase64 decodes an image sent as base64 (standard or URL alphabet,
// padded or not), refusing one larger than the engine reads.
func imageFromBase64(s string) ([]byte, error) {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	if len(s) == 0 {
		return nil, fmt.Errorf("an image with no data")
	}
	if n := base64.RawStdEncoding.DecodedLen(len(s)); n > engine.MaxImageFileBytes {
		return nil, fmt.Errorf("an image of %d MB: at most %d MB", n>>20, engine.MaxImageFileBytes>>20)
	}
	data, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		if data, err = base64.RawURLEncoding.DecodeString(s); err != nil {
			return nil, fmt.Errorf("an image whose base64 does not decode: %v", err)
		}
	}
	return data, nil
}

// keepImages checks a request's images (how many, and that the engine reads
// images) and keeps them for encodeImages.
func (s *Server) keepImages(g *generation, raw [][]byte) error {
	if len(raw) == 0 {
		return nil
	}
	if len(raw) > maxImages {
		return &httpError{http.StatusBadRequest, "too_many_images", fmt.Sprintf("%d images in one request: at most %d", len(raw), maxImages)}
	}
	if _, ok := s.eng.(ImageEncoder); !ok {
		return &httpError{http.StatusBadRequest, "images_unsupported", "this server's engine does not read images"}
	}
	g.images = raw
	return nil
}

// imageTokens is an image's prompt tokens under the model's processor.
func (s *Server) imageTokens(data []byte) (int, error) {
	enc, ok := s.eng.(ImageEncoder)
	if !ok {
		return 0, fmt.Errorf("this server's engine does not read images")
	}
	return enc.ImageTokenCount(data)
}

// encodeImages runs a request's images through the model, in order, giving
// up when the client goes.
func (s *Server) encodeImages(ctx context.Context, raw [][]byte) ([]*engine.Image, error) {
	enc := s.eng.(ImageEncoder) // keepImages checked it
	out, err := enc.EncodeImagesContext(ctx, raw)
	if err != nil { // "image N: why"
		return nil, &httpError{http.StatusBadRequest, "invalid_image", err.Error()}
	}
	return out, nil
}

// The engines the server is given read images (a remote one does not).
var (
	_ ImageEncoder = (*engine.Engine)(nil)
	_ ImageEncoder = (*engine.Parallel)(nil)
)
