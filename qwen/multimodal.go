package qwen

import (
	"encoding/binary"
	"fmt"

	"bagel/ops"
)

// Images in the text model (transformers' Qwen3_5Model: masked_scatter of
// the tower's outputs over the image pad tokens' embeddings, and
// get_rope_index's multimodal positions). A prompt holds an image as
// <|vision_start|>, one <|image_pad|> per merged token, <|vision_end|>; the
// pads' embedding rows are replaced by the image's, and every token gets
// three rotary positions (time, row, column): text all three alike, one
// more per token; an image's tokens the position S after the text before
// it on the time axis, S + their row and S + their column on the others;
// the text after it goes on from S + max(rows, columns). From then on the
// cache's positions run behind its rows by a fixed amount (Cache.ropeShift).

// ImageSpan is an image's place in a forward's tokens: its pad tokens from
// At (an index into the tokens), Rows of them (its merged tokens, or the
// part of them in this forward when a prompt is cut into chunks), and their
// embeddings, bf16 [Rows, hidden] as bit patterns.
type ImageSpan struct {
	At, Rows int
	Embeds   []uint16
}

// Multimodal is what a forward's tokens carry besides their ids when a
// prompt holds images: every token's three rotary positions (Positions
// [T][3], as RopeIndex gives them) and the spans of image embeddings.
type Multimodal struct {
	Positions [][3]int32
	Images    []ImageSpan
}

// PromptImage is an image's merged grid and where its pads start in a
// prompt, for RopeIndex.
type PromptImage struct {
	At         int
	Rows, Cols int // merged tokens: the patch grid over the merge size
}

// RopeIndex gives the three rotary positions of n tokens starting at
// position start (the cache's Offset + RopeShift), with images at their
// places (their pads Rows·Cols tokens from At, in order, not overlapping),
// and the position the next token takes.
func RopeIndex(n, start int, images []PromptImage) (pos [][3]int32, next int, err error) {
	pos = make([][3]int32, 0, n)
	p := start
	text := func(to int) {
		for len(pos) < to {
			pos = append(pos, [3]int32{int32(p), int32(p), int32(p)})
			p++
		}
	}
	for _, im := range images {
		if im.At < len(pos) || im.Rows <= 0 || im.Cols <= 0 || im.At+im.Rows*im.Cols > n {
			return nil, 0, fmt.Errorf("an image of %d×%d tokens at %d does not fit %d tokens after %d", im.Rows, im.Cols, im.At, n, len(pos))
		}
		text(im.At)
		for r := range im.Rows {
			for c := range im.Cols {
				pos = append(pos, [3]int32{int32(p), int32(p + r), int32(p + c)})
			}
		}
		p += max(im.Rows, im.Cols)
	}
	text(n)
	return pos, p, nil
}

// ForwardMultimodal is Forward for tokens that hold images: mm gives every
// token's rotary positions and the image embeddings that take the pads'
// places. Afterwards the cache's positions go on from the last token's
// largest one + 1 (its RopeShift set from mm).
func (m *Model) ForwardMultimodal(c *ops.Ctx, cache *Cache, tokens []int32, mm *Multimodal, allPositions bool) (ops.Tensor, error) {
	if m.Cfg.Vision == nil {
		return ops.Tensor{}, fmt.Errorf("forward: images in a prompt of a model without a vision_config")
	}
	if len(mm.Positions) != len(tokens) {
		return ops.Tensor{}, fmt.Errorf("forward: %d positions for %d tokens", len(mm.Positions), len(tokens))
	}
	if m.Cfg.HeadDim > ops.AttnPrepMaxD {
		return ops.Tensor{}, fmt.Errorf("forward: images need heads of at most %d dims, this model's are %d", ops.AttnPrepMaxD, m.Cfg.HeadDim)
	}
	for _, im := range mm.Images {
		if im.At < 0 || im.Rows <= 0 || im.At+im.Rows > len(tokens) || len(im.Embeds) != im.Rows*m.Cfg.HiddenSize {
			return ops.Tensor{}, fmt.Errorf("forward: an image span of %d rows at %d (%d values) in %d tokens of width %d",
				im.Rows, im.At, len(im.Embeds), len(tokens), m.Cfg.HiddenSize)
		}
	}
	m.mm = mm
	defer func() { m.mm = nil }()
	offset := cache.Offset
	logits, err := m.forward(c, cache, tokens, ops.Tensor{}, allPositions, nil)
	if err != nil {
		return logits, err
	}
	last := mm.Positions[len(tokens)-1]
	cache.ropeShift = int(max(last[0], last[1], last[2])) + 1 - (offset + len(tokens))
	return logits, nil
}

// placeImages writes the forward's image embeddings over their pads' rows
// of x (bf16 [T, hidden], the embedded tokens) in stream order, and returns
// its rotary positions on the device, i32 [T, 3].
func (m *Model) placeImages(c *ops.Ctx, x ops.Tensor) (ops.Tensor, error) {
	s, hidden := c.Scratch, m.Cfg.HiddenSize
	rot := s.Get("forward.rope", ops.I32, len(m.mm.Positions), 3)
	flat := make([]int32, 0, 3*len(m.mm.Positions))
	for _, p := range m.mm.Positions {
		flat = append(flat, p[:]...)
	}
	if err := ops.WriteInt32(c, rot, flat); err != nil {
		return rot, err
	}
	rows := 0
	for _, im := range m.mm.Images {
		rows += im.Rows
	}
	if rows == 0 {
		return rot, nil
	}
	img := s.Get("forward.images", ops.BF16, rows, hidden)
	data := make([]byte, 0, img.Bytes())
	for _, im := range m.mm.Images {
		for _, v := range im.Embeds {
			data = binary.LittleEndian.AppendUint16(data, v)
		}
	}
	if err := ops.WriteBytes(c, img, data); err != nil {
		return rot, err
	}
	from := 0
	for _, im := range m.mm.Images {
		ops.Copy(c, img.Rows(from, from+im.Rows), x.Rows(im.At, im.At+im.Rows))
		from += im.Rows
	}
	return rot, nil
}
