// Package qwen is the Qwen3.5 / Qwen3.6 model family (model_type qwen3_5 and
// qwen3_5_moe): config parsing, weight binding, the hybrid Gated-DeltaNet + gated
// attention layers, MoE and dense MLPs, and the caches. It composes package ops and
// never sees a backend type. docs MLX_QWEN35.md §3 is the math it follows.
package qwen

import (
	"encoding/json"
	"fmt"
	"math"

	"bagel/internal/jsonmsg"
	"bagel/ops"
	"bagel/safetensors"
)

// Config is the text model's configuration (config.json, or its text_config).
type Config struct {
	ModelType             string
	HiddenSize            int
	NumLayers             int
	NumHeads              int // query heads of attention layers
	NumKVHeads            int
	HeadDim               int
	VocabSize             int
	RMSNormEps            float32
	IntermediateSize      int // dense MLP
	FullAttentionInterval int
	TieWordEmbeddings     bool

	// Gated DeltaNet
	LinearKeyHeads   int // Hk
	LinearValueHeads int // Hv
	LinearKeyDim     int // Dk
	LinearValueDim   int // Dv
	ConvKernel       int // K

	// MoE (NumExperts == 0: dense)
	NumExperts           int
	ExpertsPerToken      int
	MoEIntermediateSize  int
	SharedIntermediate   int
	NormTopKProb         bool
	RopeTheta            float64
	PartialRotaryFactor  float64
	MaxPositionEmbedding int

	// EOSTokenIDs are the stop tokens: config.json's eos_token_id, overridden by
	// generation_config.json's when Open finds one (mlx-lm load_config).
	EOSTokenIDs []int32
	// Quant is config.json's quantization block; nil for an unquantized model.
	Quant *safetensors.Quantization
	// Vision is config.json's vision_config (vision.go), nil without one;
	// visionErr why it could not be read (the text model loads regardless).
	Vision    *VisionConfig
	visionErr error
}

// rawText lists the text_config fields read; pointers tell absent from zero.
type rawText struct {
	ModelType             string   `json:"model_type"`
	HiddenSize            int      `json:"hidden_size"`
	NumLayers             int      `json:"num_hidden_layers"`
	NumHeads              int      `json:"num_attention_heads"`
	NumKVHeads            int      `json:"num_key_value_heads"`
	HeadDim               int      `json:"head_dim"`
	VocabSize             int      `json:"vocab_size"`
	RMSNormEps            *float64 `json:"rms_norm_eps"`
	IntermediateSize      int      `json:"intermediate_size"`
	FullAttentionInterval *int     `json:"full_attention_interval"`
	TieWordEmbeddings     bool     `json:"tie_word_embeddings"`
	AttentionBias         bool     `json:"attention_bias"`
	LinearKeyHeads        int      `json:"linear_num_key_heads"`
	LinearValueHeads      int      `json:"linear_num_value_heads"`
	LinearKeyDim          int      `json:"linear_key_head_dim"`
	LinearValueDim        int      `json:"linear_value_head_dim"`
	ConvKernel            *int     `json:"linear_conv_kernel_dim"`
	NumExperts            int      `json:"num_experts"`
	ExpertsPerToken       int      `json:"num_experts_per_tok"`
	MoEIntermediateSize   int      `json:"moe_intermediate_size"`
	SharedIntermediate    int      `json:"shared_expert_intermediate_size"`
	NormTopKProb          *bool    `json:"norm_topk_prob"`
	MaxPositionEmbedding  int      `json:"max_position_embeddings"`
	RopeParameters        *struct {
		RopeTheta           *float64 `json:"rope_theta"`
		PartialRotaryFactor *float64 `json:"partial_rotary_factor"`
	} `json:"rope_parameters"`
	EOSTokenID json.RawMessage `json:"eos_token_id"`
}

// SupportedModelTypes are the config.json model_type values this package runs.
var SupportedModelTypes = []string{"qwen3_5", "qwen3_5_moe"}

// ParseConfig parses config.json. Qwen3.5 nests the language model under
// text_config; a flat config (no text_config) is read as the text config itself.
// The quantization block is read from the top level.
func ParseConfig(data []byte) (*Config, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, jsonmsg.Explain(fmt.Errorf("invalid JSON: %w", err), data)
	}
	var outer rawText
	if err := json.Unmarshal(data, &outer); err != nil {
		return nil, jsonmsg.Explain(err, data)
	}
	text := outer
	if tc, ok := top["text_config"]; ok {
		text = rawText{}
		if err := json.Unmarshal(tc, &text); err != nil {
			return nil, fmt.Errorf("text_config: %w", jsonmsg.Explain(err, tc))
		}
	}
	modelType := outer.ModelType
	if !supported(modelType) {
		if modelType == "" {
			return nil, fmt.Errorf("no model_type")
		}
		return nil, fmt.Errorf("model_type %q is not supported (supported: qwen3_5, qwen3_5_moe)", modelType)
	}
	cfg := &Config{
		ModelType: modelType, HiddenSize: text.HiddenSize, NumLayers: text.NumLayers,
		NumHeads: text.NumHeads, NumKVHeads: text.NumKVHeads, HeadDim: text.HeadDim,
		VocabSize: text.VocabSize, RMSNormEps: 1e-6, IntermediateSize: text.IntermediateSize,
		FullAttentionInterval: 4, TieWordEmbeddings: text.TieWordEmbeddings,
		LinearKeyHeads: text.LinearKeyHeads, LinearValueHeads: text.LinearValueHeads,
		LinearKeyDim: text.LinearKeyDim, LinearValueDim: text.LinearValueDim, ConvKernel: 4,
		NumExperts: text.NumExperts, ExpertsPerToken: text.ExpertsPerToken,
		MoEIntermediateSize: text.MoEIntermediateSize, SharedIntermediate: text.SharedIntermediate,
		NormTopKProb: true, MaxPositionEmbedding: text.MaxPositionEmbedding,
		// mlx-lm's defaults when rope_parameters is absent (MLX_QWEN35.md §1 quirk).
		RopeTheta: 100000, PartialRotaryFactor: 0.25,
	}
	if text.RMSNormEps != nil {
		cfg.RMSNormEps = float32(*text.RMSNormEps)
	}
	if text.FullAttentionInterval != nil {
		cfg.FullAttentionInterval = *text.FullAttentionInterval
	}
	if text.ConvKernel != nil {
		cfg.ConvKernel = *text.ConvKernel
	}
	if text.NormTopKProb != nil {
		cfg.NormTopKProb = *text.NormTopKProb
	}
	if rp := text.RopeParameters; rp != nil {
		if rp.RopeTheta != nil {
			cfg.RopeTheta = *rp.RopeTheta
		}
		if rp.PartialRotaryFactor != nil {
			cfg.PartialRotaryFactor = *rp.PartialRotaryFactor
		}
	}
	if cfg.HeadDim == 0 && cfg.NumHeads > 0 {
		cfg.HeadDim = cfg.HiddenSize / cfg.NumHeads
	}
	eos := outer.EOSTokenID
	if len(text.EOSTokenID) > 0 {
		eos = text.EOSTokenID
	}
	ids, err := ParseTokenIDs(eos)
	if err != nil {
		return nil, fmt.Errorf("eos_token_id: %w", err)
	}
	cfg.EOSTokenIDs = ids
	if text.AttentionBias {
		return nil, fmt.Errorf("attention_bias true is not supported (Qwen3.5 has no attention bias)")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Quant, err = safetensors.ParseQuantization(data); err != nil {
		return nil, err
	}
	return cfg, nil
}

// ParseTokenIDs reads an id or a list of ids (eos_token_id's two forms); null or absent is empty.
func ParseTokenIDs(raw json.RawMessage) ([]int32, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one int32
	if json.Unmarshal(raw, &one) == nil {
		return []int32{one}, nil
	}
	var many []int32
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, fmt.Errorf("want an integer or a list of integers, got %s", raw)
	}
	return many, nil
}

func supported(t string) bool {
	for _, s := range SupportedModelTypes {
		if s == t {
			return true
		}
	}
	return false
}

func (c *Config) validate() error {
	if err := c.validateSizes(); err != nil {
		return err
	}
	return c.validateShapes()
}

// validateSizes checks each size: positive where it must be, and below a
// bound far above any released model.
func (c *Config) validateSizes() error {
	positive := []struct {
		name string
		v    int
	}{
		{"hidden_size", c.HiddenSize}, {"num_hidden_layers", c.NumLayers},
		{"num_attention_heads", c.NumHeads}, {"num_key_value_heads", c.NumKVHeads},
		{"head_dim", c.HeadDim}, {"vocab_size", c.VocabSize},
		{"full_attention_interval", c.FullAttentionInterval},
		{"linear_num_key_heads", c.LinearKeyHeads}, {"linear_num_value_heads", c.LinearValueHeads},
		{"linear_key_head_dim", c.LinearKeyDim}, {"linear_value_head_dim", c.LinearValueDim},
		{"linear_conv_kernel_dim", c.ConvKernel},
	}
	for _, p := range positive {
		if p.v <= 0 {
			return fmt.Errorf("%s must be positive, got %d", p.name, p.v)
		}
	}
	// Upper bounds far above any released model (the largest Qwen3.5 has 60
	// layers, hidden 4096, a 248,320-token vocabulary) and low enough that no
	// size computed from them overflows and no loop over them (the cache's
	// layout, the memory estimate) runs for ages before the checkpoint is
	// read: 1e18 layers looped forever at load.
	for _, p := range []struct {
		name     string
		v, limit int
	}{
		{"num_hidden_layers", c.NumLayers, 1024}, {"hidden_size", c.HiddenSize, 1 << 16},
		{"num_attention_heads", c.NumHeads, 1024}, {"num_key_value_heads", c.NumKVHeads, 1024},
		{"head_dim", c.HeadDim, 4096}, {"vocab_size", c.VocabSize, 1 << 22},
		{"full_attention_interval", c.FullAttentionInterval, 1024},
		{"linear_num_key_heads", c.LinearKeyHeads, 1024}, {"linear_num_value_heads", c.LinearValueHeads, 1024},
		{"linear_key_head_dim", c.LinearKeyDim, 4096}, {"linear_value_head_dim", c.LinearValueDim, 4096},
		{"linear_conv_kernel_dim", c.ConvKernel, 64}, {"intermediate_size", c.IntermediateSize, 1 << 20},
		{"moe_intermediate_size", c.MoEIntermediateSize, 1 << 20}, {"shared_expert_intermediate_size", c.SharedIntermediate, 1 << 20},
		{"max_position_embeddings", c.MaxPositionEmbedding, 1 << 24},
	} {
		if p.v > p.limit {
			return fmt.Errorf("%s is %d: more than Bagel supports (%d); the config is broken", p.name, p.v, p.limit)
		}
	}
	return nil
}

// validateShapes checks what the sizes must satisfy together: head counts
// that divide, a routing the router kernels take, finite positive reals.
func (c *Config) validateShapes() error {
	if c.NumHeads%c.NumKVHeads != 0 {
		return fmt.Errorf("num_attention_heads %d is not a multiple of num_key_value_heads %d", c.NumHeads, c.NumKVHeads)
	}
	if c.LinearValueHeads%c.LinearKeyHeads != 0 {
		return fmt.Errorf("linear_num_value_heads %d is not a multiple of linear_num_key_heads %d", c.LinearValueHeads, c.LinearKeyHeads)
	}
	if c.NumExperts > 0 {
		if c.ExpertsPerToken <= 0 || c.ExpertsPerToken > c.NumExperts {
			return fmt.Errorf("num_experts_per_tok %d must be in 1..num_experts (%d)", c.ExpertsPerToken, c.NumExperts)
		}
		// The router kernels keep a token's probabilities and picks in threadgroup memory.
		if c.NumExperts > ops.RouterMaxExperts || c.ExpertsPerToken > ops.RouterMaxPicks {
			return fmt.Errorf("num_experts %d with num_experts_per_tok %d: Bagel routes among at most %d experts, %d per token",
				c.NumExperts, c.ExpertsPerToken, ops.RouterMaxExperts, ops.RouterMaxPicks)
		}
		if c.MoEIntermediateSize <= 0 {
			return fmt.Errorf("moe_intermediate_size must be positive, got %d", c.MoEIntermediateSize)
		}
	} else if c.IntermediateSize <= 0 {
		return fmt.Errorf("intermediate_size must be positive for a dense model, got %d", c.IntermediateSize)
	}
	// The real-valued settings: finite and positive, or the forward pass
	// computes NaN (a negative eps under the rsqrt, a θ ≤ 0 in the RoPE powers).
	if e := float64(c.RMSNormEps); !(e > 0) || math.IsInf(e, 0) {
		return fmt.Errorf("rms_norm_eps must be a positive number, got %g", e)
	}
	if th := c.RopeTheta; !(th > 0) || math.IsInf(th, 0) {
		return fmt.Errorf("rope_theta must be a positive number, got %g", th)
	}
	if p := c.PartialRotaryFactor; !(p > 0 && p <= 1) {
		return fmt.Errorf("partial_rotary_factor must be in (0, 1], got %g", p)
	}
	if c.MaxPositionEmbedding < 0 {
		return fmt.Errorf("max_position_embeddings must not be negative, got %d", c.MaxPositionEmbedding)
	}
	if rd := c.RotaryDims(); rd <= 0 || rd%2 != 0 || rd > c.HeadDim {
		return fmt.Errorf("partial_rotary_factor %g gives %d rotary dims of head_dim %d", c.PartialRotaryFactor, rd, c.HeadDim)
	}
	return nil
}

// IsAttention tells whether layer i is full attention (else Gated DeltaNet).
func (c *Config) IsAttention(i int) bool { return (i+1)%c.FullAttentionInterval == 0 }

// RotaryDims is the number of leading head dims that RoPE rotates.
func (c *Config) RotaryDims() int { return int(float64(c.HeadDim) * c.PartialRotaryFactor) }

// IsMoE tells whether every layer's MLP is a mixture of experts.
func (c *Config) IsMoE() bool { return c.NumExperts > 0 }

// GDNConvDim is the width of the fused [q | k | v] projection of a GDN layer.
func (c *Config) GDNConvDim() int {
	return 2*c.LinearKeyHeads*c.LinearKeyDim + c.LinearValueHeads*c.LinearValueDim
}
