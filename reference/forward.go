package reference

import (
	"fmt"
	"math"
)

// Rounding says where a forward rounds to bf16 (see the package doc).
type Rounding int

const (
	// Exact rounds nowhere: float64 throughout, weights dequantized exactly.
	Exact Rounding = iota
	// MLX rounds every stored activation to bf16 where MLX's bf16 model
	// stores one: the embedding row, each norm (x̂ and w·x̂), each projection,
	// the conv and its SiLU, q and k after their norms and scales, σ(b), the
	// softplus of a + dt_bias, the recurrence's output, the gated norm, RoPE,
	// the attention's output and its gate, the router's softmax and top-k
	// weights, SwiGLU, each expert's output, each residual add. Kept exact
	// (MLX's f32): the GDN state and decay, scores and softmax sums,
	// accumulators.
	MLX
	// MLXPrompt is MLX with every dequantized weight of a quantized matmul
	// rounded to bf16 before its products: MLX's quantized GEMMs (qmm,
	// gather_qmm), which it runs for prompts, dequantize into bf16 tiles.
	MLXPrompt
)

func (r Rounding) String() string {
	switch r {
	case Exact:
		return "exact"
	case MLX:
		return "mlx"
	case MLXPrompt:
		return "mlx-prompt"
	}
	return fmt.Sprintf("Rounding(%d)", int(r))
}

// Model is a checkpoint opened for the reference forward.
type Model struct {
	cfg *config
	w   *weights
}

// Open reads dir's config.json and maps its safetensors shards.
func Open(dir string) (*Model, error) {
	cfg, err := readConfig(dir)
	if err != nil {
		return nil, err
	}
	w, err := openWeights(dir, cfg)
	if err != nil {
		return nil, err
	}
	return &Model{cfg: cfg, w: w}, nil
}

// Close unmaps the checkpoint.
func (m *Model) Close() error { return m.w.ck.Close() }

// Vocab is the logits' width.
func (m *Model) Vocab() int { return m.cfg.Vocab }

// Layers is the number of decoder layers.
func (m *Model) Layers() int { return m.cfg.Layers }

// State is what a sequence's forward leaves for the next one: per layer, the
// conv window and recurrent state of a GDN layer, or the keys and values of an
// attention layer.
type State struct {
	pos    int
	shift  int // rope_deltas: positions after an image run behind pos by it
	layers []layerState
}

type layerState struct {
	conv   [][]float64 // K−1 rows of conv_dim raw in_proj_qkv outputs, oldest first (zeros at start)
	rec    [][]float64 // Hv states of Dv×Dk, S[dv·Dk+dk]
	keys   [][]float64 // per position: Hkv·D, after k_norm and RoPE
	values [][]float64 // per position: Hkv·D
}

// NewState is an empty sequence.
func (m *Model) NewState() *State {
	c := m.cfg
	s := &State{layers: make([]layerState, c.Layers)}
	for i := range s.layers {
		if !c.linear(i) {
			continue
		}
		convDim := 2*c.Hk*c.Dk + c.Hv*c.Dv
		l := &s.layers[i]
		for range c.ConvK - 1 {
			l.conv = append(l.conv, make([]float64, convDim))
		}
		for range c.Hv {
			l.rec = append(l.rec, make([]float64, c.Dv*c.Dk))
		}
	}
	return s
}

// Pos is the number of tokens the state holds.
func (s *State) Pos() int { return s.pos }

// Forward runs ids after the tokens s holds, updates s, and returns the
// logits [len(ids)][vocab], row t predicting the token after ids[t]. hook,
// when not nil, sees the residual stream [len(ids)][hidden] after each layer
// (layer −1: the embedding).
func (m *Model) Forward(s *State, ids []int32, r Rounding, hook func(layer int, h [][]float64)) ([][]float64, error) {
	return m.forward(&fwd{m: m, r: r, shift: s.shift}, s, ids, nil, hook)
}

// ForwardMultimodal is Forward for tokens that hold images (transformers'
// Qwen3_5Model with pixel values): rows[t], where set, replaces token t's
// embedding (an image pad's: the tower's output for it), and token t is
// rotated at positions[t] = (time, row, column), rotary frequency i taking
// the row where i % 3 == 1 and i < 3·mrope_section[1], the column where
// i % 3 == 2 and i < 3·mrope_section[2], the time otherwise
// (apply_interleaved_mrope). Afterwards the state's positions go on from the
// largest + 1 (rope_deltas).
func (m *Model) ForwardMultimodal(s *State, ids []int32, rows map[int][]float64, positions [][3]int, r Rounding) ([][]float64, error) {
	if len(positions) != len(ids) {
		return nil, fmt.Errorf("%d positions for %d tokens", len(positions), len(ids))
	}
	logits, err := m.forward(&fwd{m: m, r: r, positions: positions}, s, ids, rows, nil)
	if err == nil {
		last := positions[len(ids)-1]
		s.shift = max(last[0], last[1], last[2]) + 1 - s.pos
	}
	return logits, err
}

func (m *Model) forward(f *fwd, s *State, ids []int32, rows map[int][]float64, hook func(layer int, h [][]float64)) ([][]float64, error) {
	c, r := m.cfg, f.r
	x := make([][]float64, len(ids))
	for t, id := range ids {
		row, err := m.w.embedding(c, int(id))
		if err != nil {
			return nil, err
		}
		if img, ok := rows[t]; ok {
			if len(img) != c.Hidden {
				return nil, fmt.Errorf("token %d: an image row of %d values, want %d", t, len(img), c.Hidden)
			}
			row = img
		}
		x[t] = f.round(append([]float64(nil), row...))
	}
	if hook != nil {
		hook(-1, x)
	}
	for i := range c.Layers {
		p := fmt.Sprintf("%slayers.%d.", m.w.prefix, i)
		xn, err := f.norms(x, p+"input_layernorm.weight")
		if err != nil {
			return nil, err
		}
		var mix [][]float64
		if c.linear(i) {
			mix, err = f.gatedDeltaNet(p+"linear_attn.", xn, &s.layers[i])
		} else {
			mix, err = f.attention(p+"self_attn.", xn, &s.layers[i], s.pos)
		}
		if err != nil {
			return nil, fmt.Errorf("layer %d: %w", i, err)
		}
		h := f.add(x, mix)
		hn, err := f.norms(h, p+"post_attention_layernorm.weight")
		if err != nil {
			return nil, err
		}
		var ffn [][]float64
		if c.Experts > 0 {
			ffn, err = f.sparseMoE(p+"mlp.", hn)
		} else {
			ffn, err = f.mlp(p+"mlp.", hn, c.Intermediate)
		}
		if err != nil {
			return nil, fmt.Errorf("layer %d: %w", i, err)
		}
		x = f.add(h, ffn)
		if hook != nil {
			hook(i, x)
		}
	}
	s.pos += len(ids)
	xn, err := f.norms(x, m.w.prefix+"norm.weight")
	if err != nil {
		return nil, err
	}
	head := m.w.head
	if head == "" {
		head = m.w.prefix + "embed_tokens"
	}
	lm, err := m.w.linear(head, 0, c.Vocab, c.Hidden, r == MLXPrompt)
	if err != nil {
		return nil, err
	}
	logits := make([][]float64, len(ids))
	for t := range xn {
		logits[t] = matvec(xn[t], lm, 0, c.Vocab) // never rounded (package doc)
	}
	return logits, nil
}

// fwd is one forward's rounding.
type fwd struct {
	m *Model
	r Rounding
	// positions are the tokens' multimodal rotary positions (ForwardMultimodal);
	// without them token t is at pos0 + shift + t on all three axes.
	positions [][3]int
	shift     int
}

// rnd rounds one value to bf16 in the MLX modes.
func (f *fwd) rnd(v float64) float64 {
	if f.r == Exact {
		return v
	}
	return roundBF16(v)
}

// round rounds a row in place (MLX modes) and returns it.
func (f *fwd) round(v []float64) []float64 {
	if f.r != Exact {
		for i := range v {
			v[i] = roundBF16(v[i])
		}
	}
	return v
}

// add is the residual add a + b, row by row.
func (f *fwd) add(a, b [][]float64) [][]float64 {
	out := make([][]float64, len(a))
	for t := range a {
		out[t] = make([]float64, len(a[t]))
		for i := range a[t] {
			out[t][i] = f.rnd(a[t][i] + b[t][i])
		}
	}
	return out
}

// rmsNorm is MLX's fast.rms_norm of one row: w ⊙ bf16(x·rsqrt(mean(x²)+eps)),
// the product rounded too (w nil: no weight).
func (f *fwd) rmsNorm(x, w []float64, eps float64) []float64 {
	ss := 0.0
	for _, v := range x {
		ss += v * v
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+eps)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = f.rnd(v * inv)
		if w != nil {
			out[i] = f.rnd(out[i] * w[i])
		}
	}
	return out
}

// norms is rmsNorm of every row under the weight named w.
func (f *fwd) norms(x [][]float64, w string) ([][]float64, error) {
	weight, err := f.m.w.vector(w, f.m.cfg.Hidden)
	if err != nil {
		return nil, err
	}
	out := make([][]float64, len(x))
	for t := range x {
		out[t] = f.rmsNorm(x[t], weight, f.m.cfg.Eps)
	}
	return out, nil
}

// project is x·Wᵀ for the module at path (out × len(x[0])), each output
// rounded.
func (f *fwd) project(path string, x [][]float64, out int) ([][]float64, error) {
	w, err := f.m.w.linear(path, 0, out, len(x[0]), f.r == MLXPrompt)
	if err != nil {
		return nil, err
	}
	y := make([][]float64, len(x))
	for t := range x {
		y[t] = f.round(matvec(x[t], w, 0, out))
	}
	return y, nil
}

// matvec is rows [first, first+n) of w times x, in float64.
func matvec(x []float64, w *matrix, first, n int) []float64 {
	out := make([]float64, n)
	for o := range out {
		row := w.row(first + o)
		s := 0.0
		for j, v := range row {
			s += v * x[j]
		}
		out[o] = s
	}
	return out
}

func sigmoid(v float64) float64 { return 1 / (1 + math.Exp(-v)) }

// silu is MLX's nn.silu, x·σ(x) with σ(x) stored first.
func (f *fwd) silu(v float64) float64 { return f.rnd(v * f.rnd(sigmoid(v))) }
