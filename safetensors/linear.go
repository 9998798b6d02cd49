package safetensors

import (
	"fmt"
	"slices"
)

// QLinear is a quantized linear layer (2-D) or a stack of expert linears (3-D),
// in MLX's affine layout (docs/MLX_QWEN35.md §2, §6.2):
//
//	Weight  U32         [experts?, Out, In*Bits/32]  codes, LSB first
//	Scales  bf16/f16/f32 [experts?, Out, In/GroupSize]
//	Biases  same dtype  [experts?, Out, In/GroupSize]
//
// and w[o][j] = Scales[o][j/GroupSize]*q[o][j] + Biases[o][j/GroupSize].
type QLinear struct {
	Path                   string // module path, e.g. "language_model.model.layers.0.mlp.gate"
	Weight, Scales, Biases *Tensor
	Bits, GroupSize        int
	Experts                int // 0 for 2-D, E for [E, out, ...]
	Out, In                int
}

// Linear resolves the module at path, whose input size is in and output size out
// (experts: the expected number of stacked experts, 0 for a plain 2-D layer). As
// in mlx-lm, a module is quantized exactly when path+".scales" exists, and its
// bits and group size are q's override for path, else q's default. The shapes are
// then checked against them, so a wrong config or a wrong model dimension fails
// here, naming the tensor, instead of producing garbage in a kernel.
func (c *Checkpoint) Linear(q *Quantization, path string, out, in, experts int) (QLinear, error) {
	weight, ok := c.Tensor(path + ".weight")
	if !ok {
		return QLinear{}, fmt.Errorf("%s: tensor %s.weight not found", c.Dir, path)
	}
	scales, ok := c.Tensor(path + ".scales")
	if !ok {
		return QLinear{}, fmt.Errorf("%s: tensor %s.scales not found (a quantized layer has .weight, .scales and .biases; unquantized linear layers are not supported yet)", path, path)
	}
	if q == nil {
		return QLinear{}, fmt.Errorf("%s: %s.scales exists but config.json has no quantization block", path, path)
	}
	biases, ok := c.Tensor(path + ".biases")
	if !ok {
		// Affine always stores biases; only the float modes (rejected earlier) omit them.
		return QLinear{}, fmt.Errorf("%s: tensor %s.biases not found (affine quantization needs it)", c.Dir, path)
	}
	if out <= 0 || in <= 0 || experts < 0 {
		return QLinear{}, fmt.Errorf("%s: bad expected size out %d, in %d, experts %d", path, out, in, experts)
	}

	p := q.For(path)
	params := fmt.Sprintf("%d-bit, group size %d", p.Bits, p.GroupSize)
	if in*p.Bits%32 != 0 || in%p.GroupSize != 0 {
		return QLinear{}, fmt.Errorf("%s: input size %d does not fit %s (needs a multiple of the group size and of 32/bits)",
			path, in, params)
	}
	lead := []int{}
	if experts > 0 {
		lead = []int{experts}
	}
	wantWeight := append(slices.Clone(lead), out, in*p.Bits/32)
	wantScales := append(slices.Clone(lead), out, in/p.GroupSize)

	if weight.DType != "U32" {
		return QLinear{}, fmt.Errorf("%s: tensor %s has dtype %s, want U32 packed codes",
			baseName(weight.File), weight.Name, weight.DType)
	}
	if !slices.Equal(weight.Shape, wantWeight) {
		return QLinear{}, fmt.Errorf("%s: tensor %s has shape %v, want %v (out %d, in %d, %s)%s",
			baseName(weight.File), weight.Name, weight.Shape, wantWeight, out, in, params, impliedBits(weight.Shape, wantWeight, in))
	}
	switch scales.DType {
	case "BF16", "F16", "F32":
	default:
		return QLinear{}, fmt.Errorf("%s: tensor %s has dtype %s, want a float dtype (BF16, F16 or F32)",
			baseName(scales.File), scales.Name, scales.DType)
	}
	if biases.DType != scales.DType {
		return QLinear{}, fmt.Errorf("%s: tensor %s has dtype %s, but the scales are %s",
			baseName(biases.File), biases.Name, biases.DType, scales.DType)
	}
	for _, t := range []*Tensor{scales, biases} {
		if !slices.Equal(t.Shape, wantScales) {
			return QLinear{}, fmt.Errorf("%s: tensor %s has shape %v, want %v (out %d, in %d, %s)%s",
				baseName(t.File), t.Name, t.Shape, wantScales, out, in, params, impliedGroup(t.Shape, wantScales, in))
		}
	}
	return QLinear{
		Path: path, Weight: weight, Scales: scales, Biases: biases,
		Bits: p.Bits, GroupSize: p.GroupSize, Experts: experts, Out: out, In: in,
	}, nil
}

// impliedBits is a hint for the commonest mismatch, a per-layer override missing
// from config.json: when only the packed width differs, it says which bits it holds.
func impliedBits(got, want []int, in int) string {
	if len(got) != len(want) || !slices.Equal(got[:len(got)-1], want[:len(want)-1]) {
		return ""
	}
	cols := got[len(got)-1]
	if cols <= 0 || cols*32%in != 0 {
		return ""
	}
	return fmt.Sprintf("; the packed columns imply %d-bit", cols*32/in)
}

// impliedGroup is the same hint for the scales: the group size their width implies.
func impliedGroup(got, want []int, in int) string {
	if len(got) != len(want) || !slices.Equal(got[:len(got)-1], want[:len(want)-1]) {
		return ""
	}
	cols := got[len(got)-1]
	if cols <= 0 || in%cols != 0 {
		return ""
	}
	return fmt.Sprintf("; the scale columns imply group size %d", in/cols)
}
