package qwen

import (
	"encoding/binary"
	"errors"
	"fmt"

	"bagel/internal/par"
	"bagel/ops"
)

// ImageGrid is an image's patch grid as the processor cut it: Frames of
// Rows × Cols patches (a still image is one frame: its two temporal
// copies are one patch row's pixels).
type ImageGrid struct{ Frames, Rows, Cols int }

// Patches is how many patches the grid holds.
func (g ImageGrid) Patches() int { return g.Frames * g.Rows * g.Cols }

// ErrNoVision is EncodeImage's error on a model without a tower.
var ErrNoVision = errors.New("the model has no vision tower")

// VisionTokens is how many text positions an image of grid g takes: one per
// merge block.
func (m *Model) VisionTokens(g ImageGrid) int {
	if m.vision == nil {
		return 0
	}
	mg := m.vision.cfg.Merge
	return g.Patches() / (mg * mg)
}

// EncodeImage runs one image through the vision tower: pixels f32
// [patches, 3·temporal·patch²] in the processor's order (vision_tower.go),
// and returns its tokens' embeddings, bf16 [VisionTokens(g), hidden] as bit
// patterns, to take the place of the image's pad tokens in a prompt. The
// tower's scratch is its own arena, released before it returns, so that an
// image's activations (a 1024² image's MLP holds 35 MB) do not stay in the
// text model's pool.
//
// stop, when set, is asked between the tower's blocks whether to give up
// (a reply stopped while its image is read: on the CPU a large image takes
// minutes); its error is returned.
func (m *Model) EncodeImage(c *ops.Ctx, pixels []float32, g ImageGrid, stop func() error) ([]uint16, error) {
	tw := m.vision
	if tw == nil {
		return nil, ErrNoVision
	}
	v := &tw.cfg
	in := v.InChannels * v.Temporal * v.Patch * v.Patch
	n := g.Patches()
	switch {
	case g.Frames <= 0 || g.Rows <= 0 || g.Cols <= 0 || g.Rows%v.Merge != 0 || g.Cols%v.Merge != 0:
		return nil, fmt.Errorf("encode image: a grid of %d×%d×%d patches, want whole %d×%d merge blocks", g.Frames, g.Rows, g.Cols, v.Merge, v.Merge)
	case len(pixels) != n*in:
		return nil, fmt.Errorf("encode image: %d pixel values for %d patches of %d", len(pixels), n, in)
	}
	arena := ops.NewArena(c.Dev)
	defer arena.Release()
	vc := ops.NewCtx(c.Dev, arena)
	vc.Plan = c.Plan
	out, err := tw.encode(vc, pixels, g, stop)
	if err != nil {
		return nil, err
	}
	raw, err := ops.ReadBytes(vc, out)
	if err != nil {
		return nil, err
	}
	bits := make([]uint16, len(raw)/2)
	for i := range bits {
		bits[i] = binary.LittleEndian.Uint16(raw[2*i:])
	}
	return bits, nil
}

// encode records the tower's forward and returns its output tensor.
func (tw *visionTower) encode(c *ops.Ctx, pixels []float32, g ImageGrid, stop func() error) (ops.Tensor, error) {
	v, s := &tw.cfg, c.Scratch
	n, d := g.Patches(), v.Hidden
	px := s.Get("vision.pixels", ops.BF16, n, tw.patch.In)
	pos := s.Get("vision.pos_embed", ops.BF16, n, d)
	rot := s.Get("vision.rotary", ops.I32, n, 2)
	if err := ops.WriteBytes(c, px, bf16Bytes(pixels)); err != nil {
		return ops.Tensor{}, err
	}
	if err := ops.WriteBytes(c, pos, bf16Bytes(tw.positionEmbedding(g))); err != nil {
		return ops.Tensor{}, err
	}
	if err := ops.WriteInt32(c, rot, patchPositions(g, v.Merge)); err != nil {
		return ops.Tensor{}, err
	}
	x := s.Get("vision.x", ops.BF16, n, d)
	ops.DenseLinear(c, px, tw.patch, x, ops.NoActivation)
	ops.Add(c, x, pos, x)
	h := s.Get("vision.h", ops.BF16, n, d)
	qkv := s.Get("vision.qkv", ops.BF16, n, 3*d)
	att := s.Get("vision.attn", ops.BF16, n, d)
	o := s.Get("vision.o", ops.BF16, n, d)
	mlp := s.Get("vision.mlp", ops.BF16, n, v.Intermediate)
	for i := range tw.blocks {
		if stop != nil {
			if err := stop(); err != nil {
				return ops.Tensor{}, err
			}
		}
		bl := &tw.blocks[i]
		s.Scope("vision.block") // each block takes the attention's q, k and v of the one before
		ops.LayerNorm(c, x, bl.norm1W, bl.norm1B, h, visionNormEps)
		ops.DenseLinear(c, h, bl.qkv, qkv, ops.NoActivation)
		ops.ImageAttention(c, qkv, rot, att, v.Heads, visionTheta)
		ops.DenseLinear(c, att, bl.proj, o, ops.NoActivation)
		ops.Add(c, x, o, x)
		ops.LayerNorm(c, x, bl.norm2W, bl.norm2B, h, visionNormEps)
		ops.DenseLinear(c, h, bl.fc1, mlp, ops.GELUTanh)
		ops.DenseLinear(c, mlp, bl.fc2, o, ops.NoActivation)
		ops.Add(c, x, o, x)
	}
	tokens, merged := n/(v.Merge*v.Merge), d*v.Merge*v.Merge
	ops.LayerNorm(c, x, tw.normW, tw.normB, h, visionNormEps)
	m1 := s.Get("vision.merge", ops.BF16, tokens, merged)
	ops.DenseLinear(c, h.Reshape(tokens, merged), tw.merge1, m1, ops.GELU)
	out := s.Get("vision.out", ops.BF16, tokens, tw.merge2.Out)
	ops.DenseLinear(c, m1, tw.merge2, out, ops.NoActivation)
	return out, nil
}

// patchPositions is each patch's (row, column) on the patch grid, the rows
// in the processor's merge-block order: the 2-D rotary's positions, i32 [N, 2].
func patchPositions(g ImageGrid, merge int) []int32 {
	pos := make([]int32, 0, 2*g.Patches())
	for range g.Frames {
		for br := 0; br < g.Rows/merge; br++ {
			for bc := 0; bc < g.Cols/merge; bc++ {
				for r := range merge {
					for c := range merge {
						pos = append(pos, int32(br*merge+r), int32(bc*merge+c))
					}
				}
			}
		}
	}
	return pos
}

// positionEmbedding is the learned side×side table resampled to the patch
// grid (bilinear, corners aligned: row r of R samples the table at
// r·(side−1)/(R−1)), f32 [N, D] in the processor's merge-block order, each
// frame alike.
func (tw *visionTower) positionEmbedding(g ImageGrid) []float32 {
	d, side, merge := tw.cfg.Hidden, tw.side, tw.cfg.Merge
	taps := func(n int) (lo, hi []int, frac []float32) {
		lo, hi, frac = make([]int, n), make([]int, n), make([]float32, n)
		for i := range n {
			x := float32(0)
			if n > 1 {
				x = float32(i) * float32(side-1) / float32(n-1)
			}
			lo[i] = int(x)
			hi[i] = min(lo[i]+1, side-1)
			frac[i] = x - float32(lo[i])
		}
		return lo, hi, frac
	}
	rLo, rHi, rF := taps(g.Rows)
	cLo, cHi, cF := taps(g.Cols)
	frame := g.Rows * g.Cols * d
	out := make([]float32, g.Frames*frame)
	row := func(i int) []float32 { return tw.posTable[i*d : (i+1)*d] }
	blockRows := g.Rows / merge
	par.Each(blockRows, 1, func(lo, hi int) { // a row of merge blocks a piece, every frame alike
		for br := lo; br < hi; br++ {
			n := br * g.Cols * merge * d // the block row's first value
			for bc := 0; bc < g.Cols/merge; bc++ {
				for mr := range merge {
					for mc := range merge {
						r, c := br*merge+mr, bc*merge+mc
						w00, w01 := (1-rF[r])*(1-cF[c]), (1-rF[r])*cF[c]
						w10, w11 := rF[r]*(1-cF[c]), rF[r]*cF[c]
						a, b := row(rLo[r]*side+cLo[c]), row(rLo[r]*side+cHi[c])
						e, f := row(rHi[r]*side+cLo[c]), row(rHi[r]*side+cHi[c])
						for j := range d {
							v := w00*a[j] + w01*b[j] + w10*e[j] + w11*f[j]
							for fr := range g.Frames {
								out[fr*frame+n+j] = v
							}
						}
						n += d
					}
				}
			}
		}
	})
	return out
}
