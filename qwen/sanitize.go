package qwen

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"bagel/ops"
	"bagel/safetensors"
)

// The checkpoint quirks, in one place (mlx-lm's Model.sanitize, MLX_QWEN35.md §2
// and §6.11): modules declare the text model's names and shapes (weights.go), and
// the binder maps them onto the checkpoint it is given.
//
//   - Key prefixes: "model.X" is "language_model.model.X" in MLX conversions,
//     "model.language_model.X" in raw Hugging Face multimodal checkpoints and
//     "model.X" in flat text-only ones; "lm_head" moves with them.
//   - Norm shift: raw Hugging Face checkpoints store w and compute x̂·(1+w); MLX
//     conversions store 1+w. The raw layout is told by its conv1d weight
//     ([C, 1, K] instead of MLX's [C, K, 1]), never by the presence of mtp.*
//     keys (§6.1), and only then is 1 added to the shifted norms at load.
//   - Conv layout: [C, K, 1] and [C, 1, K] differ by an axis of size 1, which does
//     not change the order of the C×K values: both bind as [C, K] without a copy.

// binder turns checkpoint tensors into device tensors: each shard file is wrapped
// once (no copy on CPU and Metal) and tensors are views at their file offsets.
type binder struct {
	c      *ops.Ctx
	ck     *safetensors.Checkpoint
	quant  *safetensors.Quantization
	files  map[string]ops.Tensor // shard path → wrapped file
	owned  []ops.Tensor          // tensors made on the host (shifted norms)
	prefix string                // what "model." is in this checkpoint
	head   string                // what "lm_head" is in this checkpoint
	rawHF  bool                  // the unconverted Hugging Face layout: shift the norms
	// rawMTP binds an MTP head in Qwen's release form (mtp.go): bf16 linears
	// quantized at load, norms shifted.
	rawMTP bool
	// toCheck are the float tensors bound so far, for the numeric check (finite.go).
	toCheck []*safetensors.Tensor
}

// keyPrefixes are the layouts we accept: the text model's "model." and
// "lm_head" in MLX conversions, raw HF multimodal checkpoints, flat text-only ones.
var keyPrefixes = []struct{ model, head string }{
	{"language_model.model.", "language_model.lm_head"},
	{"model.language_model.", "lm_head"},
	{"model.", "lm_head"},
}

// newBinder recognises the checkpoint's layout from its embedding (key prefixes)
// and its first GDN layer's conv1d (norm shift), and wraps every shard.
func newBinder(c *ops.Ctx, ck *safetensors.Checkpoint, cfg *Config) (*binder, error) {
	b := &binder{c: c, ck: ck, quant: cfg.Quant, files: map[string]ops.Tensor{}}
	for _, p := range keyPrefixes {
		if _, ok := ck.Tensor(p.model + "embed_tokens.weight"); ok {
			b.prefix, b.head = p.model, p.head
			break
		}
	}
	if b.prefix == "" {
		return nil, fmt.Errorf("missing tensor language_model.model.embed_tokens.weight: no embedding found (is this a Qwen3.5 checkpoint?)")
	}
	if t, ok := ck.Tensor(b.key(firstGDNLayer(cfg) + ".linear_attn.conv1d.weight")); ok && len(t.Shape) == 3 && t.Shape[1] == 1 && t.Shape[2] > 1 {
		b.rawHF = true
	}
	for _, f := range ck.Files {
		t, err := ops.WrapHostAligned(c, f.Data, packedAnchor(f))
		if err != nil {
			b.release()
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		b.files[f.Path] = t
	}
	return b, nil
}

// packedAnchor is the file offset of a packed (U32) weight whose alignment
// modulo 16 the most packed weights of f share, by bytes: a copying backend
// puts it on a 16-byte boundary so that the matrix-vector kernels read those
// weights in 16-byte pieces. A file's tensors are aligned alike unless an odd
// tensor size shifts the ones after it.
func packedAnchor(f *safetensors.File) int {
	var bytes [16]int64
	for _, t := range f.Tensors {
		if t.DType == "U32" {
			bytes[t.Offset%16] += int64(len(t.Data))
		}
	}
	best := 0
	for r := range bytes {
		if bytes[r] > bytes[best] {
			best = r
		}
	}
	return best
}

// key is the checkpoint's name for a text-model name.
// layersHeld is how many layers the checkpoint holds from layer 0 on: the
// first n with no tensor under layers.n.
func (b *binder) layersHeld() int {
	seen := map[int]bool{}
	layers := b.key("model.layers.")
	for _, name := range b.ck.Names() {
		if rest, ok := strings.CutPrefix(name, layers); ok {
			if i, err := strconv.Atoi(rest[:max(0, strings.IndexByte(rest, '.'))]); err == nil {
				seen[i] = true
			}
		}
	}
	n := 0
	for seen[n] {
		n++
	}
	return n
}

func (b *binder) key(name string) string {
	if name == "lm_head" {
		return b.head
	}
	if rest, ok := strings.CutPrefix(name, "model."); ok {
		return b.prefix + rest
	}
	return name
}

func firstGDNLayer(cfg *Config) string {
	for i := 0; i < cfg.NumLayers; i++ {
		if !cfg.IsAttention(i) {
			return fmt.Sprintf("model.layers.%d", i)
		}
	}
	return "model.layers.0"
}

// convLayout is the stored shape a conv weight of [C, K] must have: MLX's
// [C, K, 1], or raw HF's [C, 1, K] when that is what the checkpoint holds.
func convLayout(stored, want []int) []int {
	c, k := want[0], want[1]
	if sameShape(stored, []int{c, 1, k}) {
		return stored
	}
	return []int{c, k, 1}
}

// shiftNorm uploads 1+w for a raw HF norm weight bf16 [n] (data: its bytes).
func (b *binder) shiftNorm(data []byte, n int) (ops.Tensor, error) {
	out := make([]byte, 2*n)
	for i := 0; i < n; i++ {
		w := ops.BF16ToF32(binary.LittleEndian.Uint16(data[2*i:]))
		binary.LittleEndian.PutUint16(out[2*i:], ops.F32ToBF16(w+1))
	}
	return b.upload(ops.BF16, []int{n}, out)
}

func (b *binder) view(t *safetensors.Tensor) (ops.Tensor, error) {
	dt, err := dtypeOf(t)
	if err != nil {
		return ops.Tensor{}, err
	}
	return ops.View(b.files[t.File], int(t.Offset), dt, t.Shape), nil
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
