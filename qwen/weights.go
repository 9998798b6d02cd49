package qwen

import (
	"encoding/binary"
	"fmt"
	"strings"

	"bagel/ops"
	"bagel/safetensors"
)

// binder turns checkpoint tensors into device tensors: each shard file is wrapped
// once (no copy on CPU and Metal) and tensors are views at their file offsets.
type binder struct {
	c      *ops.Ctx
	ck     *safetensors.Checkpoint
	quant  *safetensors.Quantization
	files  map[string]ops.Tensor // shard path → wrapped file
	owned  []ops.Tensor          // tensors made on the host (raw-layout fixes)
	prefix string                // "language_model.model." (MLX) or "model.language_model." (raw HF)
	head   string                // lm_head module path
	// rawHF is set for the unconverted Hugging Face layout (conv1d [C,1,K]): norms
	// then hold w and compute x̂·(1+w), so 1 is added at load (MLX_QWEN35.md §6.1).
	rawHF bool
}

// keyPrefixes are the layer-key prefixes of the layouts we accept, with their
// lm_head paths: MLX conversions, raw HF multimodal checkpoints, flat text-only ones.
var keyPrefixes = []struct{ model, head string }{
	{"language_model.model.", "language_model.lm_head"},
	{"model.language_model.", "lm_head"},
	{"model.", "lm_head"},
}

func newBinder(c *ops.Ctx, ck *safetensors.Checkpoint, quant *safetensors.Quantization) (*binder, error) {
	b := &binder{c: c, ck: ck, quant: quant, files: map[string]ops.Tensor{}}
	for _, p := range keyPrefixes {
		if _, ok := ck.Tensor(p.model + "embed_tokens.weight"); ok {
			b.prefix, b.head = p.model, p.head
			break
		}
	}
	if b.prefix == "" {
		return nil, fmt.Errorf("missing tensor language_model.model.embed_tokens.weight: no embedding found (is this a Qwen3.5 checkpoint?)")
	}
	for _, f := range ck.Files {
		t, err := ops.WrapHost(c, f.Data)
		if err != nil {
			b.release()
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		b.files[f.Path] = t
	}
	return b, nil
}

func (b *binder) release() {
	for _, t := range b.files {
		ops.Free(b.c, t)
	}
	for _, t := range b.owned {
		ops.Free(b.c, t)
	}
	b.files, b.owned = nil, nil
}

func (b *binder) view(t *safetensors.Tensor) (ops.Tensor, error) {
	dt, err := dtypeOf(t)
	if err != nil {
		return ops.Tensor{}, err
	}
	return ops.View(b.files[t.File], int(t.Offset), dt, t.Shape), nil
}

// tensor binds a non-quantized tensor, checking its shape (and dtype when want is set).
func (b *binder) tensor(name string, want *ops.DType, shape ...int) (ops.Tensor, error) {
	t, ok := b.ck.Tensor(name)
	if !ok {
		return ops.Tensor{}, fmt.Errorf("missing tensor %s", name)
	}
	if !sameShape(t.Shape, shape) {
		return ops.Tensor{}, fmt.Errorf("tensor %s (%s): shape %v, config implies %v", name, baseName(t.File), t.Shape, shape)
	}
	v, err := b.view(t)
	if err != nil {
		return ops.Tensor{}, err
	}
	if want != nil && v.DType != *want {
		return ops.Tensor{}, fmt.Errorf("tensor %s (%s): dtype %v, want %v", name, baseName(t.File), v.DType, *want)
	}
	return v, nil
}

var (
	dtBF16 = ops.BF16
	dtF32  = ops.F32
)

// norm binds an RMSNorm weight [n] (bf16), adding 1 for the raw HF layout when shifted.
func (b *binder) norm(name string, n int, shifted bool) (ops.Tensor, error) {
	t, err := b.tensor(name, &dtBF16, n)
	if err != nil || !b.rawHF || !shifted {
		return t, err
	}
	src, _ := b.ck.Tensor(name)
	out := make([]byte, len(src.Data))
	for i := 0; i < n; i++ {
		w := ops.BF16ToF32(binary.LittleEndian.Uint16(src.Data[2*i:]))
		binary.LittleEndian.PutUint16(out[2*i:], ops.F32ToBF16(w+1))
	}
	return b.upload(ops.BF16, []int{n}, out)
}

func (b *binder) upload(dt ops.DType, shape []int, data []byte) (ops.Tensor, error) {
	t, err := ops.Upload(b.c, dt, shape, data)
	if err != nil {
		return t, err
	}
	b.owned = append(b.owned, t)
	return t, nil
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
	return l, nil
}

// conv binds the depthwise conv weight as [C, K]. MLX stores [C, K, 1], raw HF
// [C, 1, K]; an axis of size 1 does not change the order of the C×K values, so
// both are the same bytes and bind without a copy.
func (b *binder) conv(name string, channels, k int) (ops.Tensor, error) {
	t, ok := b.ck.Tensor(name)
	if !ok {
		return ops.Tensor{}, fmt.Errorf("missing tensor %s", name)
	}
	if !sameShape(t.Shape, []int{channels, k, 1}) && !sameShape(t.Shape, []int{channels, 1, k}) {
		return ops.Tensor{}, fmt.Errorf("tensor %s (%s): shape %v, config implies %v", name, baseName(t.File), t.Shape, []int{channels, k, 1})
	}
	v, err := b.view(t)
	if err != nil {
		return v, err
	}
	if v.DType != ops.BF16 {
		return v, fmt.Errorf("tensor %s: dtype %v, want bf16", name, v.DType)
	}
	return v.Reshape(channels, k), nil
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
