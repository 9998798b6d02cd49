package engine

import (
	"fmt"

	"bagel/ops"
	"bagel/qwen"
)

// imagePrompt is a prompt's images laid out as the processor lays them out:
// each image's one pad token in the ids expanded into one pad per merged
// token (Qwen3VLProcessor.replace_image_token), every token's three rotary
// positions (qwen.RopeIndex), and where each image's pads begin.
type imagePrompt struct {
	ids       []int32
	positions [][3]int32
	images    []placedImage
}

type placedImage struct {
	at  int
	img *Image
}

// layImages expands the image pads of ids, one per image in order, for a
// prompt whose first token is at rotary position start (the cache's Offset +
// RopeShift). ids must carry exactly one pad per image.
func (e *Engine) layImages(ids []int32, images []*Image, start int) (*imagePrompt, error) {
	v := e.Config.Vision
	if v == nil || !e.model.HasVision() {
		return nil, fmt.Errorf("this model cannot read images")
	}
	pads := 0
	for _, id := range ids {
		if id == v.ImageToken {
			pads++
		}
	}
	if pads != len(images) {
		return nil, fmt.Errorf("the prompt holds %d image pads (token %d) for %d images: one pad per image", pads, v.ImageToken, len(images))
	}
	p := &imagePrompt{}
	var at []qwen.PromptImage
	for _, id := range ids {
		if id != v.ImageToken {
			p.ids = append(p.ids, id)
			continue
		}
		img := images[len(p.images)]
		p.images = append(p.images, placedImage{at: len(p.ids), img: img})
		at = append(at, qwen.PromptImage{At: len(p.ids), Rows: img.MergedRows, Cols: img.MergedCols})
		for range img.Tokens {
			p.ids = append(p.ids, v.ImageToken)
		}
	}
	var err error
	p.positions, _, err = qwen.RopeIndex(len(p.ids), start, at)
	return p, err
}

// chunk is the part of the prompt's images and positions in its tokens
// [from, to), for a forward of those tokens.
func (p *imagePrompt) chunk(from, to, hidden int) *qwen.Multimodal {
	mm := &qwen.Multimodal{Positions: p.positions[from:to]}
	for _, im := range p.images {
		a, b := max(im.at, from), min(im.at+im.img.Tokens, to)
		if a >= b {
			continue
		}
		rows := im.img.embeds[(a-im.at)*hidden : (b-im.at)*hidden]
		mm.Images = append(mm.Images, qwen.ImageSpan{At: a - from, Rows: b - a, Embeds: rows})
	}
	return mm
}

// holdsImage reports whether tokens [from, to) hold a pad of an image.
func (p *imagePrompt) holdsImage(from, to int) bool {
	for _, im := range p.images {
		if im.at < to && im.at+im.img.Tokens > from {
			return true
		}
	}
	return false
}

// forwardImages is forward for tokens [from, to) of an image prompt.
func (e *Engine) forwardImages(p *imagePrompt, from, to int, all bool) ([]float32, error) {
	var out []float32
	mm := p.chunk(from, to, e.Config.HiddenSize)
	err := e.stepWith(func() (ops.Tensor, error) {
		return e.model.ForwardMultimodal(e.ctx, e.cache, p.ids[from:to], mm, all)
	}, nil, func(logits ops.Tensor) (err error) {
		out, err = ops.ReadF32(e.ctx, logits)
		return err
	})
	return out, err
}
