package reference

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// config is the text model's shape, read from config.json (its text_config
// when the model nests one, as mlx-lm's qwen3_5 ModelArgs does), with
// mlx-lm's defaults.
type config struct {
	Hidden, Layers, Heads, KVHeads, HeadDim, Vocab int
	Eps                                            float64
	Intermediate                                   int // dense MLP
	Interval                                       int // full attention at layer i iff (i+1) % Interval == 0
	Tied                                           bool

	Hk, Hv, Dk, Dv, ConvK int // Gated DeltaNet

	Experts, TopK, ExpertInter, SharedInter int
	NormTopK                                bool

	RopeTheta, Partial float64
	Sections           [3]int // rope_parameters.mrope_section (images' positions)
}

func readConfig(dir string) (*config, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("config.json: %w", err)
	}
	text := raw
	if tc, ok := top["text_config"]; ok {
		text = tc
	}
	var t struct {
		Hidden       int      `json:"hidden_size"`
		Layers       int      `json:"num_hidden_layers"`
		Heads        int      `json:"num_attention_heads"`
		KVHeads      int      `json:"num_key_value_heads"`
		HeadDim      int      `json:"head_dim"`
		Vocab        int      `json:"vocab_size"`
		Eps          *float64 `json:"rms_norm_eps"`
		Intermediate int      `json:"intermediate_size"`
		Interval     *int     `json:"full_attention_interval"`
		Tied         bool     `json:"tie_word_embeddings"`
		Hk           int      `json:"linear_num_key_heads"`
		Hv           int      `json:"linear_num_value_heads"`
		Dk           int      `json:"linear_key_head_dim"`
		Dv           int      `json:"linear_value_head_dim"`
		ConvK        *int     `json:"linear_conv_kernel_dim"`
		Experts      int      `json:"num_experts"`
		TopK         int      `json:"num_experts_per_tok"`
		ExpertInter  int      `json:"moe_intermediate_size"`
		SharedInter  int      `json:"shared_expert_intermediate_size"`
		NormTopK     *bool    `json:"norm_topk_prob"`
		Rope         *struct {
			Theta    *float64 `json:"rope_theta"`
			Partial  *float64 `json:"partial_rotary_factor"`
			Sections []int    `json:"mrope_section"`
		} `json:"rope_parameters"`
	}
	if err := json.Unmarshal(text, &t); err != nil {
		return nil, fmt.Errorf("config.json: %w", err)
	}
	c := &config{
		Hidden: t.Hidden, Layers: t.Layers, Heads: t.Heads, KVHeads: t.KVHeads, HeadDim: t.HeadDim, Vocab: t.Vocab,
		Eps: 1e-6, Intermediate: t.Intermediate, Interval: 4, Tied: t.Tied,
		Hk: t.Hk, Hv: t.Hv, Dk: t.Dk, Dv: t.Dv, ConvK: 4,
		Experts: t.Experts, TopK: t.TopK, ExpertInter: t.ExpertInter, SharedInter: t.SharedInter, NormTopK: true,
		RopeTheta: 100000, Partial: 0.25, // mlx-lm's defaults when rope_parameters lacks them
		Sections: [3]int{11, 11, 10}, // transformers' Qwen3.5 default
	}
	if t.Eps != nil {
		c.Eps = *t.Eps
	}
	if t.Interval != nil {
		c.Interval = *t.Interval
	}
	if t.ConvK != nil {
		c.ConvK = *t.ConvK
	}
	if t.NormTopK != nil {
		c.NormTopK = *t.NormTopK
	}
	if t.Rope != nil {
		if t.Rope.Theta != nil {
			c.RopeTheta = *t.Rope.Theta
		}
		if t.Rope.Partial != nil {
			c.Partial = *t.Rope.Partial
		}
		if len(t.Rope.Sections) == 3 {
			c.Sections = [3]int(t.Rope.Sections)
		}
	}
	if c.HeadDim == 0 && c.Heads > 0 {
		c.HeadDim = c.Hidden / c.Heads
	}
	for name, v := range map[string]int{"hidden_size": c.Hidden, "num_hidden_layers": c.Layers, "num_attention_heads": c.Heads,
		"num_key_value_heads": c.KVHeads, "vocab_size": c.Vocab, "linear_num_key_heads": c.Hk, "linear_num_value_heads": c.Hv,
		"linear_key_head_dim": c.Dk, "linear_value_head_dim": c.Dv, "full_attention_interval": c.Interval} {
		if v <= 0 || v > 1<<20 {
			return nil, fmt.Errorf("config.json: %s = %d", name, v)
		}
	}
	if c.Hv%c.Hk != 0 || c.Heads%c.KVHeads != 0 {
		return nil, fmt.Errorf("config.json: heads %d/%d, linear heads %d/%d do not divide", c.Heads, c.KVHeads, c.Hv, c.Hk)
	}
	return c, nil
}

// linear reports whether layer i is a Gated DeltaNet layer (else full attention).
func (c *config) linear(i int) bool { return (i+1)%c.Interval != 0 }
