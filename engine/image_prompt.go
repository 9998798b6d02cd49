package engine

import (
	"encoding/binary"
	"fmt"
	"slices"

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
		if img.embeds == nil {
			return nil, fmt.Errorf("image %d was not read by this model's tower (EncodeImage)", len(p.images)+1)
		}
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

// promptImages lays out a generation's images over its prompt (one pad
// each), or returns nil for a prompt without images. A prompt may not end
// on an image: its last token is run by the plain forward that picks the
// reply's first.
func (e *Engine) promptImages(prompt []int32, images []*Image) (*imagePrompt, error) {
	v := e.Config.Vision
	if len(images) == 0 && (v == nil || !slices.Contains(prompt, v.ImageToken)) {
		return nil, nil
	}
	if len(images) > 0 && !e.model.HasVision() {
		return nil, fmt.Errorf("this model cannot read images: %s", e.visionWhyNot())
	}
	if prompt[len(prompt)-1] == v.ImageToken {
		return nil, fmt.Errorf("the prompt ends with an image: text must follow it (the chat template closes it with <|vision_end|>)")
	}
	return e.layImages(prompt, images, 0)
}

// expanded maps index i of the prompt before its pads were expanded to the
// expanded prompt.
func (p *imagePrompt) expanded(i int) int {
	out := i
	for k, im := range p.images {
		// The k-th image's pad was at im.at minus the earlier images' extra pads.
		before := im.at
		for _, prev := range p.images[:k] {
			before -= prev.img.Tokens - 1
		}
		if before < i {
			out += im.img.Tokens - 1
		}
	}
	return out
}

// key is the prompt as prompt reuse matches it: each image's pads replaced
// by an id no tokenizer makes (negative), drawn from the image's bytes, so
// that a held conversation is reused only with the same images.
func (p *imagePrompt) key() []int32 {
	key := slices.Clone(p.ids)
	for _, im := range p.images {
		tag := -1 - int32(binary.LittleEndian.Uint32(im.img.Key[:4])&0x3fffffff)
		for j := range im.img.Tokens {
			key[im.at+j] = tag
		}
	}
	return key
}

// prefillChunk runs prompt[from:to] of a generation's prefill: through the
// multimodal forward where it holds an image's pads, else the plain one.
func (g *generation) prefillChunk(prompt []int32, from, to int) error {
	if g.images != nil && g.images.holdsImage(from, to) {
		_, err := g.e.forwardImages(g.images, from, to, false)
		return err
	}
	return g.e.forwardPrompt(prompt[from:to])
}
