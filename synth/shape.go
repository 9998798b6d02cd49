// Package synth writes synthetic MLX-layout Qwen3.5 checkpoints: the tensor names,
// shapes, dtypes, quantization and file layout (shards of at most 5 GB with
// model.safetensors.index.json) of a real `mlx-community/*-4bit` folder, filled
// with random weights of sane magnitude, each quantization group centred on zero
// as a trained one is (so that tokens keep apart through the layers and a MoE's
// tokens route to different experts, as a real model's do). Bagel loads one like
// any checkpoint; `bagel bench` measures speed on it at the exact shapes of a
// model nobody has to download, and another engine can be compared on identical
// shapes.
//
// It is written by hand because nothing else writes this layout from Go: mlx-lm's
// converter needs the real weights and Python.
package synth

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Shape is what a checkpoint's config.json says about tensor shapes.
type Shape struct {
	ModelType                  string // qwen3_5 (dense) or qwen3_5_moe
	Hidden, Layers, Interval   int    // Interval: every Interval-th layer is full attention
	Heads, KVHeads, HeadDim    int
	Hk, Hv, Dk, Dv, ConvKernel int // Gated DeltaNet
	Intermediate               int // dense MLP
	Experts, TopK, MoEInter    int // MoE
	SharedInter                int // the shared expert (MoE)
	Vocab                      int
	Tied                       bool
	RopeTheta, PartialRotary   float64
	MaxPosition                int
	// MTP adds a multi-token-prediction head (mtp.*: fc, its norms and one
	// full-attention layer with the model's MLP or MoE), quantized as the rest.
	MTP bool
	// Vision, when set, adds a vision tower (vision_tower.*, bf16, as
	// mlx-vlm's conversions keep it), its vision_config and a
	// preprocessor_config.json.
	Vision *VisionShape
}

// VisionShape is a vision tower's vision_config (Qwen3.5 reuses Qwen3-VL's
// tower without DeepStack): patches of Patch×Patch pixels over Temporal
// frames embedded to Hidden, Depth blocks of Heads heads with an MLP of
// Intermediate, then Merge×Merge patches merged into one token of the text
// model's width; a learned position embedding of Positions (a square grid).
type VisionShape struct {
	Depth, Hidden, Intermediate, Heads int
	Patch, Temporal, Merge, Positions  int
}

// ReleasedVision is the released Qwen3.5 models' tower.
var ReleasedVision = VisionShape{Depth: 27, Hidden: 1152, Intermediate: 4304, Heads: 16,
	Patch: 16, Temporal: 2, Merge: 2, Positions: 2304}

// Quant is the MLX affine quantization of the checkpoint.
type Quant struct {
	Bits, GroupSize int
	// RouterBits is the width of the router and the shared-expert gate, which
	// mlx-lm's quant predicate keeps at 8 bits in a 4-bit MoE model.
	RouterBits int
}

// DefaultQuant is mlx-community's "-4bit": 4 bits, groups of 64, 8-bit routers.
var DefaultQuant = Quant{Bits: 4, GroupSize: 64, RouterBits: 8}

// shapes are the built-in shapes of --like.
var shapes = map[string]Shape{
	// Qwen/Qwen3.5-35B-A3B (the HF configuration defaults of qwen3_5_moe).
	"qwen3.5-35b-a3b": {
		ModelType: "qwen3_5_moe", Hidden: 2048, Layers: 40, Interval: 4,
		Heads: 16, KVHeads: 2, HeadDim: 256, Hk: 16, Hv: 32, Dk: 128, Dv: 128, ConvKernel: 4,
		Experts: 256, TopK: 8, MoEInter: 512, SharedInter: 512, Vocab: 248320,
		RopeTheta: 1e7, PartialRotary: 0.25, MaxPosition: 262144,
	},
	// A small dense stand-in (not a released checkpoint's shapes): the 35B-A3B's
	// hidden size, heads and GDN shapes with a dense MLP and tied embeddings,
	// about 1 GB at 4 bits; a second shape for bench runs.
	"dense-small": {
		ModelType: "qwen3_5", Hidden: 2048, Layers: 24, Interval: 4,
		Heads: 16, KVHeads: 2, HeadDim: 256, Hk: 16, Hv: 32, Dk: 128, Dv: 128, ConvKernel: 4,
		Intermediate: 6144, Vocab: 248320, Tied: true,
		RopeTheta: 1e7, PartialRotary: 0.25, MaxPosition: 262144,
	},
}

// Names lists the built-in shapes.
func Names() []string {
	var names []string
	for n := range shapes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Like returns a built-in shape by name.
func Like(name string) (Shape, error) {
	s, ok := shapes[strings.ToLower(name)]
	if !ok {
		return Shape{}, fmt.Errorf("no built-in shape %q (known: %s; or give a config.json)", name, strings.Join(Names(), ", "))
	}
	return s, nil
}

// FromConfig reads the shape (and the quantization, when present) of a real
// checkpoint's config.json, nested under text_config or flat.
func FromConfig(path string) (Shape, Quant, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Shape{}, Quant{}, err
	}
	var top struct {
		ModelType    string          `json:"model_type"`
		TextConfig   json.RawMessage `json:"text_config"`
		Quantization *struct {
			Bits      int `json:"bits"`
			GroupSize int `json:"group_size"`
		} `json:"quantization"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		return Shape{}, Quant{}, fmt.Errorf("%s: %w", path, err)
	}
	text := data
	if len(top.TextConfig) > 0 {
		text = top.TextConfig
	}
	var c struct {
		Hidden        int  `json:"hidden_size"`
		Layers        int  `json:"num_hidden_layers"`
		Interval      int  `json:"full_attention_interval"`
		Heads         int  `json:"num_attention_heads"`
		KVHeads       int  `json:"num_key_value_heads"`
		HeadDim       int  `json:"head_dim"`
		Hk            int  `json:"linear_num_key_heads"`
		Hv            int  `json:"linear_num_value_heads"`
		Dk            int  `json:"linear_key_head_dim"`
		Dv            int  `json:"linear_value_head_dim"`
		ConvKernel    int  `json:"linear_conv_kernel_dim"`
		Intermediate  int  `json:"intermediate_size"`
		Experts       int  `json:"num_experts"`
		TopK          int  `json:"num_experts_per_tok"`
		MoEInter      int  `json:"moe_intermediate_size"`
		SharedInter   int  `json:"shared_expert_intermediate_size"`
		Vocab         int  `json:"vocab_size"`
		Tied          bool `json:"tie_word_embeddings"`
		MaxPosition   int  `json:"max_position_embeddings"`
		RopeParameter *struct {
			Theta   float64 `json:"rope_theta"`
			Partial float64 `json:"partial_rotary_factor"`
		} `json:"rope_parameters"`
	}
	if err := json.Unmarshal(text, &c); err != nil {
		return Shape{}, Quant{}, fmt.Errorf("%s: %w", path, err)
	}
	s := Shape{
		ModelType: top.ModelType, Hidden: c.Hidden, Layers: c.Layers, Interval: c.Interval,
		Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim, Hk: c.Hk, Hv: c.Hv, Dk: c.Dk, Dv: c.Dv,
		ConvKernel: c.ConvKernel, Intermediate: c.Intermediate, Experts: c.Experts, TopK: c.TopK,
		MoEInter: c.MoEInter, SharedInter: c.SharedInter, Vocab: c.Vocab, Tied: c.Tied,
		MaxPosition: c.MaxPosition, RopeTheta: 1e5, PartialRotary: 0.25,
	}
	if c.RopeParameter != nil {
		s.RopeTheta, s.PartialRotary = c.RopeParameter.Theta, c.RopeParameter.Partial
	}
	if s.ConvKernel == 0 {
		s.ConvKernel = 4
	}
	if s.Interval == 0 {
		s.Interval = 4
	}
	q := DefaultQuant
	if top.Quantization != nil && top.Quantization.Bits > 0 {
		q.Bits, q.GroupSize = top.Quantization.Bits, top.Quantization.GroupSize
	}
	return s, q, s.Validate(q)
}

// Validate checks that the shape describes a model Bagel can hold and that the
// quantization fits it, naming the first field that does not.
func (s Shape) Validate(q Quant) error {
	if s.ModelType != "qwen3_5" && s.ModelType != "qwen3_5_moe" {
		return fmt.Errorf("model type %q: want qwen3_5 or qwen3_5_moe", s.ModelType)
	}
	positive := []struct {
		name string
		v    int
	}{
		{"hidden size", s.Hidden}, {"layers", s.Layers}, {"full attention interval", s.Interval},
		{"attention heads", s.Heads}, {"kv heads", s.KVHeads}, {"head dim", s.HeadDim},
		{"linear key heads", s.Hk}, {"linear value heads", s.Hv}, {"linear key head dim", s.Dk},
		{"linear value head dim", s.Dv}, {"conv kernel", s.ConvKernel}, {"vocabulary", s.Vocab},
	}
	if s.ModelType == "qwen3_5_moe" {
		positive = append(positive, []struct {
			name string
			v    int
		}{{"experts", s.Experts}, {"experts per token", s.TopK}, {"moe intermediate size", s.MoEInter}, {"shared expert intermediate size", s.SharedInter}}...)
	} else {
		positive = append(positive, struct {
			name string
			v    int
		}{"intermediate size", s.Intermediate})
	}
	for _, p := range positive {
		if p.v <= 0 {
			return fmt.Errorf("%s is %d: must be positive", p.name, p.v)
		}
	}
	if s.TopK > s.Experts && s.ModelType == "qwen3_5_moe" {
		return fmt.Errorf("%d experts per token of %d experts", s.TopK, s.Experts)
	}
	if s.Heads%s.KVHeads != 0 || s.Hv%s.Hk != 0 {
		return fmt.Errorf("heads %d / kv heads %d and linear value heads %d / key heads %d must divide", s.Heads, s.KVHeads, s.Hv, s.Hk)
	}
	switch q.Bits {
	case 2, 3, 4, 5, 6, 8:
	default:
		return fmt.Errorf("%d-bit quantization: want 2, 3, 4, 5, 6 or 8", q.Bits)
	}
	switch q.GroupSize {
	case 32, 64, 128:
	default:
		return fmt.Errorf("group size %d: want 32, 64 or 128", q.GroupSize)
	}
	for _, in := range []int{s.Hidden, s.Heads * s.HeadDim, s.Hv * s.Dv, max(s.Intermediate, s.MoEInter), s.SharedInter} {
		if in > 0 && in%q.GroupSize != 0 {
			return fmt.Errorf("input width %d is not a multiple of the group size %d", in, q.GroupSize)
		}
	}
	return nil
}
