package server

import (
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
type ImageEncoder interface {
	EncodeImage(data []byte) (*engine.Image, error)
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

// encodeImages runs a request's images through the model, in order.
func (s *Server) encodeImages(raw [][]byte) ([]*engine.Image, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if len(raw) > maxImages {
		return nil, &httpError{http.StatusBadRequest, "too_many_images", fmt.Sprintf("%d images in one request: at most %d", len(raw), maxImages)}
	}
	enc, ok := s.eng.(ImageEncoder)
	if !ok {
		return nil, &httpError{http.StatusBadRequest, "images_unsupported", "this server's engine does not read images"}
	}
	out := make([]*engine.Image, len(raw))
	for i, data := range raw {
		img, err := enc.EncodeImage(data)
		if err != nil {
			return nil, &httpError{http.StatusBadRequest, "invalid_image", fmt.Sprintf("image %d: %v", i+1, err)}
		}
		out[i] = img
	}
	return out, nil
}
