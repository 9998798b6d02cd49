package testmodel

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// Spec is the shape of a random MLX-layout checkpoint written by WriteRandom.
type Spec struct {
	ModelType                      string // qwen3_5 or qwen3_5_moe
	Hidden, Layers, Interval       int
	Heads, KVHeads, HeadDim        int
	Hk, Hv, Dk, Dv, ConvKernel     int
	Intermediate                   int // dense
	Experts, TopK, MoEInter, Share int // MoE
	Vocab                          int
	Bits, GroupSize                int // global quantization
	RouterBits                     int // per-layer override of mlp.gate / shared_expert_gate (MoE)
	Tied                           bool
}

// WriteRandom writes config.json and model.safetensors of a random checkpoint of
// spec into dir: random codes, scales and biases (no float weights are quantized;
// the loader and kernels only see the layout), norms near 1. It exercises shapes
// and quantization settings the committed test models do not have.
func WriteRandom(t testing.TB, dir string, s Spec) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, uint64(s.Hidden)))
	w := &writer{rng: rng, tensors: map[string]tensor{}}
	p := "language_model.model."
	overrides := map[string]any{}
	qlin := func(path string, out, in, experts, bits int) {
		if bits != s.Bits {
			overrides[path] = map[string]int{"bits": bits, "group_size": s.GroupSize}
		}
		lead := []int{}
		if experts > 0 {
			lead = []int{experts}
		}
		rows := max(experts, 1) * out
		w.u32(path+".weight", append(lead, out, in*bits/32), rows*in*bits/32)
		gs := in / s.GroupSize
		scale := float32(1 / math.Sqrt(float64(in)) / float64(int(1)<<(bits-1)))
		w.bf16(path+".scales", append(lead, out, gs), rows*gs, scale, scale/4)
		w.bf16(path+".biases", append(lead, out, gs), rows*gs, -scale*float32(int(1)<<(bits-1)), scale)
	}
	qlin(p+"embed_tokens", s.Vocab, s.Hidden, 0, s.Bits)
	if !s.Tied {
		qlin("language_model.lm_head", s.Vocab, s.Hidden, 0, s.Bits)
	}
	w.bf16(p+"norm.weight", []int{s.Hidden}, s.Hidden, 1, 0.1)
	convDim := 2*s.Hk*s.Dk + s.Hv*s.Dv
	for i := 0; i < s.Layers; i++ {
		l := p + "layers." + itoa(i) + "."
		w.bf16(l+"input_layernorm.weight", []int{s.Hidden}, s.Hidden, 1, 0.1)
		w.bf16(l+"post_attention_layernorm.weight", []int{s.Hidden}, s.Hidden, 1, 0.1)
		if (i+1)%s.Interval == 0 {
			a := l + "self_attn."
			qlin(a+"q_proj", s.Heads*s.HeadDim*2, s.Hidden, 0, s.Bits)
			qlin(a+"k_proj", s.KVHeads*s.HeadDim, s.Hidden, 0, s.Bits)
			qlin(a+"v_proj", s.KVHeads*s.HeadDim, s.Hidden, 0, s.Bits)
			qlin(a+"o_proj", s.Hidden, s.Heads*s.HeadDim, 0, s.Bits)
			w.bf16(a+"q_norm.weight", []int{s.HeadDim}, s.HeadDim, 1, 0.1)
			w.bf16(a+"k_norm.weight", []int{s.HeadDim}, s.HeadDim, 1, 0.1)
		} else {
			g := l + "linear_attn."
			qlin(g+"in_proj_qkv", convDim, s.Hidden, 0, s.Bits)
			qlin(g+"in_proj_z", s.Hv*s.Dv, s.Hidden, 0, s.Bits)
			qlin(g+"in_proj_b", s.Hv, s.Hidden, 0, s.Bits)
			qlin(g+"in_proj_a", s.Hv, s.Hidden, 0, s.Bits)
			qlin(g+"out_proj", s.Hidden, s.Hv*s.Dv, 0, s.Bits)
			w.bf16(g+"conv1d.weight", []int{convDim, s.ConvKernel, 1}, convDim*s.ConvKernel, 0, 0.5)
			w.f32(g+"A_log", []int{s.Hv}, s.Hv)
			w.bf16(g+"dt_bias", []int{s.Hv}, s.Hv, 0, 0.3)
			w.bf16(g+"norm.weight", []int{s.Dv}, s.Dv, 1, 0.1)
		}
		m := l + "mlp."
		if s.Experts > 0 {
			qlin(m+"gate", s.Experts, s.Hidden, 0, s.RouterBits)
			qlin(m+"switch_mlp.gate_proj", s.MoEInter, s.Hidden, s.Experts, s.Bits)
			qlin(m+"switch_mlp.up_proj", s.MoEInter, s.Hidden, s.Experts, s.Bits)
			qlin(m+"switch_mlp.down_proj", s.Hidden, s.MoEInter, s.Experts, s.Bits)
			qlin(m+"shared_expert.gate_proj", s.Share, s.Hidden, 0, s.Bits)
			qlin(m+"shared_expert.up_proj", s.Share, s.Hidden, 0, s.Bits)
			qlin(m+"shared_expert.down_proj", s.Hidden, s.Share, 0, s.Bits)
			qlin(m+"shared_expert_gate", 1, s.Hidden, 0, s.RouterBits)
		} else {
			qlin(m+"gate_proj", s.Intermediate, s.Hidden, 0, s.Bits)
			qlin(m+"up_proj", s.Intermediate, s.Hidden, 0, s.Bits)
			qlin(m+"down_proj", s.Hidden, s.Intermediate, 0, s.Bits)
		}
	}
	quant := map[string]any{"bits": s.Bits, "group_size": s.GroupSize, "mode": "affine"}
	for k, v := range overrides {
		quant[k] = v
	}
	text := map[string]any{
		"hidden_size": s.Hidden, "num_hidden_layers": s.Layers, "full_attention_interval": s.Interval,
		"num_attention_heads": s.Heads, "num_key_value_heads": s.KVHeads, "head_dim": s.HeadDim,
		"linear_num_key_heads": s.Hk, "linear_num_value_heads": s.Hv, "linear_key_head_dim": s.Dk,
		"linear_value_head_dim": s.Dv, "linear_conv_kernel_dim": s.ConvKernel, "intermediate_size": s.Intermediate,
		"num_experts": s.Experts, "num_experts_per_tok": s.TopK, "moe_intermediate_size": s.MoEInter,
		"shared_expert_intermediate_size": s.Share, "vocab_size": s.Vocab, "tie_word_embeddings": s.Tied,
		"rms_norm_eps": 1e-6, "rope_parameters": map[string]any{"rope_theta": 1e6, "partial_rotary_factor": 0.5},
	}
	cfg := map[string]any{"model_type": s.ModelType, "text_config": text, "quantization": quant, "eos_token_id": 0}
	data, err := json.MarshalIndent(cfg, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), w.encode(t), 0o644); err != nil {
		t.Fatal(err)
	}
}

type tensor struct {
	dtype string
	shape []int
	data  []byte
}

type writer struct {
	rng     *rand.Rand
	tensors map[string]tensor
}

func (w *writer) u32(name string, shape []int, n int) {
	b := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(b[4*i:], w.rng.Uint32())
	}
	w.tensors[name] = tensor{"U32", shape, b}
}

func (w *writer) bf16(name string, shape []int, n int, mean, std float32) {
	b := make([]byte, 2*n)
	for i := 0; i < n; i++ {
		f := mean + std*float32(w.rng.NormFloat64())
		binary.LittleEndian.PutUint16(b[2*i:], uint16(math.Float32bits(f)>>16))
	}
	w.tensors[name] = tensor{"BF16", shape, b}
}

func (w *writer) f32(name string, shape []int, n int) { // A_log: log of U(1, 16)
	b := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(math.Log(1+15*w.rng.Float64()))))
	}
	w.tensors[name] = tensor{"F32", shape, b}
}

// encode lays the tensors out as a safetensors file (header padded to 8 bytes).
func (w *writer) encode(t testing.TB) []byte {
	names := make([]string, 0, len(w.tensors))
	for n := range w.tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	header := map[string]any{"__metadata__": map[string]string{"format": "mlx"}}
	var body []byte
	for _, n := range names {
		x := w.tensors[n]
		header[n] = map[string]any{"dtype": x.dtype, "shape": x.shape, "data_offsets": []int{len(body), len(body) + len(x.data)}}
		body = append(body, x.data...)
	}
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(out, h...), body...)
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
