package qwen

import (
	"fmt"
	"strings"

	"bagel/ops"
)

// weight declares one checkpoint tensor of a module, as mlx-lm's module tree and
// ollama's tagged struct fields do: its name as the text model names it
// ("model.layers.3.self_attn.q_proj"), the shape the config implies, and the
// field it binds to. The binder resolves the name in the checkpoint's layout and
// applies the layout's quirks (sanitize.go); a module never handles either.
type weight struct {
	name  string
	kind  weightKind
	dtype ops.DType // kind plain
	shape []int     // plain, norm: the tensor; conv: [C, K]; linear: [out, in] or [E, out, in]
	lin   *ops.QLinear
	dst   *ops.Tensor
}

type weightKind uint8

const (
	kindLinear weightKind = iota // quantized linear: name.{weight,scales,biases}
	kindPlain                    // a tensor of one dtype and shape, bound as stored
	kindNorm                     // an RMSNorm weight bf16 [n] whose raw HF form is shifted by 1
	kindConv                     // the depthwise conv1d weight, bound as [C, K]
)

// linear declares a quantized linear layer [out, in] at module path name.
func linear(dst *ops.QLinear, name string, out, in int) weight {
	return weight{name: name, kind: kindLinear, shape: []int{out, in}, lin: dst}
}

// experts declares n stacked expert linears [n, out, in] at module path name.
func experts(dst *ops.QLinear, name string, n, out, in int) weight {
	return weight{name: name, kind: kindLinear, shape: []int{n, out, in}, lin: dst}
}

// plain declares a tensor bound as stored, with its dtype and shape checked.
func plain(dst *ops.Tensor, name string, dt ops.DType, shape ...int) weight {
	return weight{name: name, kind: kindPlain, dtype: dt, shape: shape, dst: dst}
}

// norm declares an RMSNorm weight bf16 [n] of the zero-centred kind, which MLX
// conversions store as 1+w (MLX_QWEN35.md §6.1).
func norm(dst *ops.Tensor, name string, n int) weight {
	return weight{name: name, kind: kindNorm, dtype: ops.BF16, shape: []int{n}, dst: dst}
}

// conv declares the depthwise conv weight of channels × k taps.
func conv(dst *ops.Tensor, name string, channels, k int) weight {
	return weight{name: name, kind: kindConv, dtype: ops.BF16, shape: []int{channels, k}, dst: dst}
}

// under puts module-relative declarations under a module path ("model.layers.3.").
func under(prefix string, ws []weight) []weight {
	for i := range ws {
		ws[i].name = prefix + ws[i].name
	}
	return ws
}

// bind binds every declared weight, the first failure naming its tensor.
func (b *binder) bind(ws []weight) error {
	for _, w := range ws {
		if err := b.bindOne(w); err != nil {
			return err
		}
	}
	return nil
}

func (b *binder) bindOne(w weight) error {
	key := b.key(w.name)
	if w.kind == kindLinear {
		out, in, n := w.shape[len(w.shape)-2], w.shape[len(w.shape)-1], 0
		if len(w.shape) == 3 {
			n = w.shape[0]
		}
		if b.rawMTP {
			l, err := b.linearBF16(key, out, in, n)
			*w.lin = l
			return err
		}
		l, err := b.linear(key, out, in, n)
		*w.lin = l
		return err
	}
	t, ok := b.ck.Tensor(key)
	if !ok {
		return fmt.Errorf("missing tensor %s", key)
	}
	stored := w.shape
	if w.kind == kindConv {
		stored = convLayout(t.Shape, w.shape)
	}
	if !sameShape(t.Shape, stored) {
		return fmt.Errorf("tensor %s (%s): shape %v, config implies %v", key, baseName(t.File), t.Shape, stored)
	}
	v, err := b.view(t)
	if err != nil {
		return err
	}
	b.checked(t)
	if v.DType != w.dtype {
		return fmt.Errorf("tensor %s (%s): dtype %v, want %v", key, baseName(t.File), v.DType, w.dtype)
	}
	*w.dst = v.Reshape(w.shape...)
	if w.kind == kindNorm && (b.rawHF || b.rawMTP) {
		*w.dst, err = b.shiftNorm(t.Data, w.shape[0])
	}
	return err
}

// linear binds a quantized linear layer (or stacked experts when experts > 0).
func (b *binder) linear(path string, out, in, experts int) (ops.QLinear, error) {
	q, err := b.ck.Linear(b.quant, path, out, in, experts)
	if err != nil {
		return ops.QLinear{}, err
	}
	l := ops.QLinear{Name: path, Bits: q.Bits, GroupSize: q.GroupSize, Out: out, In: in, Experts: experts}
	if l.W, err = b.view(q.Weight); err != nil {
		return l, err
	}
	if l.Scales, err = b.view(q.Scales); err != nil {
		return l, err
	}
	if l.Bias, err = b.view(q.Biases); err != nil {
		return l, err
	}
	if l.Scales.DType != ops.BF16 || l.Bias.DType != ops.BF16 {
		return l, fmt.Errorf("%s: scales/biases are %v, only bf16 is supported", path, l.Scales.DType)
	}
	b.checked(q.Scales)
	b.checked(q.Biases)
	return l, nil
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func baseName(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[i+1:]
	}
	return path
}
