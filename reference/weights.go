package reference

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"bagel/safetensors"
)

// weights are a checkpoint's tensors by their names under the model's prefix
// (MLX's "language_model.model.", raw Hugging Face's "model.language_model."
// or a flat model's "model."), dequantized on first use.
type weights struct {
	ck     *safetensors.Checkpoint
	prefix string // of the layers, embedding and final norm
	head   string // the lm_head's module path; "" when tied

	mu    sync.Mutex
	cache map[string]*matrix // by module path and rounding
}

func openWeights(dir string, c *config) (*weights, error) {
	ck, err := safetensors.Open(dir)
	if err != nil {
		return nil, err
	}
	w := &weights{ck: ck, cache: map[string]*matrix{}}
	for _, p := range []string{"language_model.model.", "model.language_model.", "model."} {
		if _, ok := ck.Tensor(p + "embed_tokens.weight"); ok {
			w.prefix = p
			break
		}
	}
	if w.prefix == "" {
		ck.Close()
		return nil, fmt.Errorf("%s: no embed_tokens.weight under a known prefix", dir)
	}
	if !c.Tied {
		for _, h := range []string{"language_model.lm_head", "lm_head"} {
			if _, ok := ck.Tensor(h + ".weight"); ok {
				w.head = h
			}
		}
		if w.head == "" {
			ck.Close()
			return nil, fmt.Errorf("%s: untied model without lm_head.weight", dir)
		}
	}
	return w, nil
}

func (w *weights) tensor(name string) (*safetensors.Tensor, error) {
	t, ok := w.ck.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("tensor %s is missing", name)
	}
	return t, nil
}

// vector reads a float tensor (bf16, f16 or f32) of n elements.
func (w *weights) vector(name string, n int) ([]float64, error) {
	t, err := w.tensor(name)
	if err != nil {
		return nil, err
	}
	if t.Elements() != n {
		return nil, fmt.Errorf("tensor %s has %d elements, want %d", name, t.Elements(), n)
	}
	return floats(t)
}

func floats(t *safetensors.Tensor) ([]float64, error) {
	n := t.Elements()
	out := make([]float64, n)
	switch t.DType {
	case "BF16":
		for i := range out {
			out[i] = bf16Value(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	case "F16":
		for i := range out {
			out[i] = halfValue(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	case "F32":
		for i := range out {
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:])))
		}
	default:
		return nil, fmt.Errorf("tensor %s is %s, want a float dtype", t.Name, t.DType)
	}
	return out, nil
}

// halfValue widens an IEEE binary16 bit pattern.
func halfValue(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, frac := int(h>>10&0x1f), float64(h&0x3ff)
	switch exp {
	case 0:
		return sign * frac * 0x1p-24
	case 31:
		if frac != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	}
	return sign * (1 + frac/1024) * math.Ldexp(1, exp-15)
}

// matrix is a dequantized (or plain) weight: rows × in values, row-major,
// for each of stacked experts (rows counts them all).
type matrix struct {
	rows, in int
	v        []float64
}

func (m *matrix) row(r int) []float64 { return m.v[r*m.in : (r+1)*m.in] }

// linear is the weight of module path (experts stacked, or 0) with out rows
// of in inputs each, dequantized when the checkpoint quantizes it (a .scales
// tensor beside it), each value rounded to bf16 when roundWeights is set.
func (w *weights) linear(path string, experts, out, in int, roundWeights bool) (*matrix, error) {
	key := fmt.Sprint(path, roundWeights)
	w.mu.Lock()
	defer w.mu.Unlock()
	if m := w.cache[key]; m != nil {
		return m, nil
	}
	rows := out * max(experts, 1)
	m := &matrix{rows: rows, in: in, v: make([]float64, rows*in)}
	wt, err := w.tensor(path + ".weight")
	if err != nil {
		return nil, err
	}
	if _, quantized := w.ck.Tensor(path + ".scales"); !quantized {
		if wt.Elements() != rows*in {
			return nil, fmt.Errorf("%s.weight has %d elements, want %d×%d", path, wt.Elements(), rows, in)
		}
		if m.v, err = floats(wt); err != nil {
			return nil, err
		}
	} else if err := dequantize(w, path, wt, m, roundWeights); err != nil {
		return nil, err
	}
	w.cache[key] = m
	return m, nil
}

// dequantize fills m from MLX's affine layout: codes packed LSB first in u32
// words (bit b of element j is bit j·bits+b of a row's stream), the value
// scale[g]·q + bias[g] for group g = j/gs. The bit width and group size come
// from the shapes (bits = words·32/in, gs = in/groups), not from config.json.
func dequantize(w *weights, path string, wt *safetensors.Tensor, m *matrix, roundWeights bool) error {
	st, err := w.tensor(path + ".scales")
	if err != nil {
		return err
	}
	bt, err := w.tensor(path + ".biases")
	if err != nil {
		return err
	}
	if wt.DType != "U32" || len(wt.Shape) == 0 || len(st.Shape) == 0 {
		return fmt.Errorf("%s: weight %s %v, scales %v: not MLX's packed layout", path, wt.DType, wt.Shape, st.Shape)
	}
	words, groups := wt.Shape[len(wt.Shape)-1], st.Shape[len(st.Shape)-1]
	if words*32%m.in != 0 || groups == 0 || m.in%groups != 0 || wt.Elements() != m.rows*words || st.Elements() != m.rows*groups {
		return fmt.Errorf("%s: weight %v, scales %v do not fit %d rows of %d inputs", path, wt.Shape, st.Shape, m.rows, m.in)
	}
	bits, gs := words*32/m.in, m.in/groups
	scales, err := floats(st)
	if err != nil {
		return err
	}
	biases, err := floats(bt)
	if err != nil {
		return err
	}
	mask := uint64(1)<<bits - 1
	for r := range m.rows {
		code := func(j int) uint64 {
			bit := j * bits
			word := r*words + bit/32
			v := uint64(binary.LittleEndian.Uint32(wt.Data[4*word:]))
			if bit%32+bits > 32 {
				v |= uint64(binary.LittleEndian.Uint32(wt.Data[4*(word+1):])) << 32
			}
			return v >> (bit % 32) & mask
		}
		row := m.row(r)
		for j := range row {
			g := r*groups + j/gs
			v := scales[g]*float64(code(j)) + biases[g]
			if roundWeights {
				v = roundBF16(v)
			}
			row[j] = v
		}
	}
	return nil
}

// embedding is token id's row of the (quantized) embedding, dequantized
// exactly (MLX's QuantizedEmbedding dequantizes the row, then stores it bf16).
func (w *weights) embedding(c *config, id int) ([]float64, error) {
	if id < 0 || id >= c.Vocab {
		return nil, fmt.Errorf("token %d outside the vocabulary of %d", id, c.Vocab)
	}
	m, err := w.linear(w.prefix+"embed_tokens", 0, c.Vocab, c.Hidden, false)
	if err != nil {
		return nil, err
	}
	return m.row(id), nil
}
