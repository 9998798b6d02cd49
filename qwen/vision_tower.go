package qwen

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"bagel/internal/par"
	"bagel/ops"
	"bagel/safetensors"
)

// The vision tower's forward (transformers' Qwen3_5VisionModel, Qwen3-VL's
// ViT without DeepStack), for one image's patches, in the processor's order:
// rows in merge blocks (Merge×Merge patches together, the blocks row by
// row), each row one patch's pixels in (channel, frame, y, x) order.
//
//	x = patch_embed(pixels) + pos(grid)          [N, D]  (a Conv3d whose kernel is its stride: one matmul)
//	per block: x += proj(attn(LN1(x)))           attention over the image's N patches, 2-D rotary
//	           x += fc2(gelu_tanh(fc1(LN2(x))))
//	out = fc2(gelu(fc1(LN(x) as [N/4, 4D])))     [N/4, text width]: one token per merge block
//
// pos is the learned table of a side×side grid, resampled to the image's
// patch grid bilinearly with the corners aligned, on the host in f32 and
// rounded once (transformers' newest fast_pos_embed_interpolate; the
// release code and mlx-vlm take the four products in bf16). LayerNorms take
// eps 1e-6 (hard-coded in transformers), the rotary base 10000.

const (
	visionNormEps = 1e-6
	visionTheta   = 10000
)

// visionTower is the bound tower.
type visionTower struct {
	cfg VisionConfig
	// patch is the patch embedding as a linear over a patch's pixels in
	// (channel, frame, y, x) order: [D, 3·temporal·patch²].
	patch ops.Dense
	// posTable is the learned position table [side², D] on the host, in f32.
	posTable []float32
	side     int
	blocks   []visionBlock
	// The merger: LayerNorm, then two linears over merge blocks.
	normW, normB   ops.Tensor
	merge1, merge2 ops.Dense
}

// visionBlock is one pre-norm transformer block of the tower.
type visionBlock struct {
	norm1W, norm1B, norm2W, norm2B ops.Tensor
	qkv, proj, fc1, fc2            ops.Dense
}

// HasVision reports whether the model's vision tower is loaded.
func (m *Model) HasVision() bool { return m.vision != nil }

// bindVision binds the tower when the checkpoint holds one that fits
// (VisionStatus); a broken tower does not stop the text model from loading:
// VisionProblem says why it is not used.
func (m *Model) bindVision() error {
	present, status := VisionStatus(m.Cfg, m.bind.ck)
	if !present {
		if m.Cfg.Vision != nil {
			m.VisionProblem = status
		}
		return nil
	}
	v := m.Cfg.Vision
	prefix := visionPrefix(m.bind.ck)
	tw := &visionTower{cfg: *v}
	if err := m.bind.bindTower(tw, prefix, m.Cfg.HiddenSize); err != nil {
		m.VisionProblem = "its vision tower cannot be read: " + err.Error()
		return nil
	}
	m.vision = tw
	return nil
}

// visionPrefix is where the checkpoint's tower lives ("" when nowhere).
func visionPrefix(ck *safetensors.Checkpoint) string {
	for _, p := range visionPrefixes {
		if _, ok := ck.Tensor(p + "patch_embed.proj.weight"); ok {
			return p
		}
	}
	return ""
}

// bindTower binds every tensor of the tower under prefix (shapes already
// checked by VisionStatus).
func (b *binder) bindTower(tw *visionTower, prefix string, textHidden int) error {
	v := &tw.cfg
	d, inter, merged := v.Hidden, v.Intermediate, v.Hidden*v.Merge*v.Merge
	var err error
	if tw.patch, err = b.patchEmbed(prefix, v); err != nil {
		return err
	}
	if tw.posTable, err = b.hostFloats(prefix + "pos_embed.weight"); err != nil {
		return err
	}
	tw.side = int(math.Round(math.Sqrt(float64(v.Positions))))
	if tw.side*tw.side != v.Positions {
		return fmt.Errorf("num_position_embeddings %d is not a square grid", v.Positions)
	}
	tw.blocks = make([]visionBlock, v.Depth)
	for i := range tw.blocks {
		bl, p := &tw.blocks[i], prefix+"blocks."+strconv.Itoa(i)+"."
		for _, t := range []struct {
			dst  *ops.Tensor
			name string
		}{{&bl.norm1W, "norm1.weight"}, {&bl.norm1B, "norm1.bias"}, {&bl.norm2W, "norm2.weight"}, {&bl.norm2B, "norm2.bias"}} {
			if *t.dst, err = b.towerTensor(p+t.name, d); err != nil {
				return err
			}
		}
		for _, l := range []struct {
			dst     *ops.Dense
			name    string
			out, in int
		}{{&bl.qkv, "attn.qkv", 3 * d, d}, {&bl.proj, "attn.proj", d, d}, {&bl.fc1, "mlp.linear_fc1", inter, d}, {&bl.fc2, "mlp.linear_fc2", d, inter}} {
			if *l.dst, err = b.dense(p+l.name, l.out, l.in); err != nil {
				return err
			}
		}
	}
	if tw.normW, err = b.towerTensor(prefix+"merger.norm.weight", d); err != nil {
		return err
	}
	if tw.normB, err = b.towerTensor(prefix+"merger.norm.bias", d); err != nil {
		return err
	}
	if tw.merge1, err = b.dense(prefix+"merger.linear_fc1", merged, merged); err != nil {
		return err
	}
	tw.merge2, err = b.dense(prefix+"merger.linear_fc2", textHidden, merged)
	return err
}

// dense binds the bf16 linear at path with its bias ([out, in], [out]).
func (b *binder) dense(path string, out, in int) (ops.Dense, error) {
	w, err := b.towerTensor(path+".weight", out, in)
	if err != nil {
		return ops.Dense{}, err
	}
	bias, err := b.towerTensor(path+".bias", out)
	return ops.Dense{Name: path, W: w, B: bias, Out: out, In: in}, err
}

// towerTensor binds the tower's tensor at name as bf16 of shape: a bf16
// tensor as stored, an f16 or f32 one converted on the host.
func (b *binder) towerTensor(name string, shape ...int) (ops.Tensor, error) {
	t, ok := b.ck.Tensor(name)
	if !ok {
		return ops.Tensor{}, fmt.Errorf("missing tensor %s", name)
	}
	n := 1
	for _, s := range shape {
		n *= s
	}
	if t.Elements() != n {
		return ops.Tensor{}, fmt.Errorf("tensor %s: shape %v, want %v", name, t.Shape, shape)
	}
	b.checked(t)
	if t.DType == "BF16" {
		v, err := b.view(t)
		return v.Reshape(shape...), err
	}
	f, err := b.hostFloats(name)
	if err != nil {
		return ops.Tensor{}, err
	}
	return b.upload(ops.BF16, shape, bf16Bytes(f))
}

// hostFloats reads the bf16, f16 or f32 tensor at name to the host as f32.
func (b *binder) hostFloats(name string) ([]float32, error) {
	t, ok := b.ck.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("missing tensor %s", name)
	}
	n := t.Elements()
	out := make([]float32, n)
	switch t.DType {
	case "BF16":
		for i := range out {
			out[i] = ops.BF16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	case "F16":
		for i := range out {
			out[i] = f16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	case "F32":
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
	default:
		return nil, fmt.Errorf("tensor %s is %s, want bf16, f16 or f32", name, t.DType)
	}
	b.checked(t)
	return out, nil
}

// patchEmbed binds the Conv3d patch embedding as a linear over a patch's
// pixels in (channel, frame, y, x) order: PyTorch's layout [D, C, T, P, P]
// is that already; MLX's [D, T, P, P, C] (channels last, as mlx-vlm's
// sanitize leaves it) is reordered on the host.
func (b *binder) patchEmbed(prefix string, v *VisionConfig) (ops.Dense, error) {
	name := prefix + "patch_embed.proj"
	t, _ := b.ck.Tensor(name + ".weight")
	c, tp, p, d := v.InChannels, v.Temporal, v.Patch, v.Hidden
	in := c * tp * p * p
	bias, err := b.towerTensor(name+".bias", d)
	if err != nil {
		return ops.Dense{}, err
	}
	dense := ops.Dense{Name: name, B: bias, Out: d, In: in}
	channelsLast := t.Shape[len(t.Shape)-1] == c && !(t.Shape[1] == c && c == p)
	if !channelsLast {
		dense.W, err = b.towerTensor(name+".weight", d, in)
		return dense, err
	}
	f, err := b.hostFloats(name + ".weight")
	if err != nil {
		return dense, err
	}
	w := make([]float32, len(f))
	for o := range d {
		for ci := range c {
			for fr := range tp {
				for y := range p {
					for x := range p {
						w[o*in+((ci*tp+fr)*p+y)*p+x] = f[o*in+((fr*p+y)*p+x)*c+ci]
					}
				}
			}
		}
	}
	dense.W, err = b.upload(ops.BF16, []int{d, in}, bf16Bytes(w))
	return dense, err
}

// bf16Bytes is v rounded to bf16, little-endian.
func bf16Bytes(v []float32) []byte {
	out := make([]byte, 2*len(v))
	par.Each(len(v), 1<<16, func(lo, hi int) { // a 1024² image: 11 million values
		for i := lo; i < hi; i++ {
			binary.LittleEndian.PutUint16(out[2*i:], ops.F32ToBF16(v[i]))
		}
	})
	return out
}

// f16ToF32 widens an IEEE half.
func f16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp, frac := uint32(h>>10)&0x1f, uint32(h&0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
	case frac == 0:
		return math.Float32frombits(sign)
	}
	return float32(math.Ldexp(float64(frac), -24)) * (1 - 2*float32(sign>>31))
}
