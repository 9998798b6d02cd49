package qwen

import (
	"strings"
	"testing"
)

const nestedConfig = `{
 "model_type": "qwen3_5_moe",
 "eos_token_id": [248046, 248044],
 "text_config": {
  "hidden_size": 2048, "num_hidden_layers": 40, "num_attention_heads": 16, "num_key_value_heads": 2,
  "head_dim": 256, "vocab_size": 248320, "rms_norm_eps": 1e-6,
  "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
  "linear_conv_kernel_dim": 4, "full_attention_interval": 4,
  "num_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
  "rope_parameters": {"rope_theta": 10000000, "partial_rotary_factor": 0.25}
 }
}`

func TestParseConfigQwen35MoE(t *testing.T) {
	cfg, err := ParseConfig([]byte(nestedConfig))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HiddenSize != 2048 || cfg.NumLayers != 40 || cfg.NumExperts != 256 || !cfg.IsMoE() {
		t.Errorf("fields: %+v", cfg)
	}
	if !cfg.NormTopKProb {
		t.Error("norm_topk_prob must default to true")
	}
	if cfg.RotaryDims() != 64 || cfg.RopeTheta != 1e7 {
		t.Errorf("rope: %d dims, theta %g", cfg.RotaryDims(), cfg.RopeTheta)
	}
	if cfg.GDNConvDim() != 8192 {
		t.Errorf("conv dim %d, want 8192", cfg.GDNConvDim())
	}
	var attn []int
	for i := 0; i < cfg.NumLayers; i++ {
		if cfg.IsAttention(i) {
			attn = append(attn, i)
		}
	}
	if len(attn) != 10 || attn[0] != 3 || attn[1] != 7 {
		t.Errorf("attention layers %v, want 3, 7, 11, …", attn)
	}
	if len(cfg.EOSTokenIDs) != 2 || cfg.EOSTokenIDs[0] != 248046 {
		t.Errorf("eos %v", cfg.EOSTokenIDs)
	}
}

func TestParseConfigFlatAndDefaults(t *testing.T) {
	flat := `{"model_type": "qwen3_5", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
	  "num_key_value_heads": 1, "vocab_size": 100, "intermediate_size": 128,
	  "linear_num_key_heads": 1, "linear_num_value_heads": 2, "linear_key_head_dim": 32, "linear_value_head_dim": 32,
	  "eos_token_id": 7}`
	cfg, err := ParseConfig([]byte(flat))
	if err != nil {
		t.Fatal(err)
	}
	// head_dim defaults to hidden/heads; rope_parameters absent: mlx-lm's defaults
	if cfg.HeadDim != 32 || cfg.RopeTheta != 100000 || cfg.PartialRotaryFactor != 0.25 || cfg.FullAttentionInterval != 4 || cfg.ConvKernel != 4 {
		t.Errorf("defaults: %+v", cfg)
	}
	if cfg.IsMoE() || len(cfg.EOSTokenIDs) != 1 || cfg.EOSTokenIDs[0] != 7 {
		t.Errorf("flat: %+v", cfg)
	}
}

func TestParseConfigErrors(t *testing.T) {
	cases := []struct{ name, json, want string }{
		{"invalid JSON", `{"model_type":`, "invalid JSON"},
		{"no model_type", `{"hidden_size": 8}`, "no model_type"},
		{"unknown model_type", `{"model_type": "llama"}`, `model_type "llama" is not supported`},
		{"missing hidden size", `{"model_type": "qwen3_5", "text_config": {}}`, "hidden_size must be positive"},
		{"heads not a multiple", strings.Replace(nestedConfig, `"num_key_value_heads": 2`, `"num_key_value_heads": 3`, 1), "not a multiple"},
		{"top-k above experts", strings.Replace(nestedConfig, `"num_experts_per_tok": 8`, `"num_experts_per_tok": 300`, 1), "num_experts_per_tok"},
		{"more experts than the router takes", strings.Replace(nestedConfig, `"num_experts": 256`, `"num_experts": 4096`, 1), "routes among at most 1024 experts"},
		{"more picks than the router takes", strings.Replace(nestedConfig, `"num_experts_per_tok": 8`, `"num_experts_per_tok": 100`, 1), "64 per token"},
		{"bad eos", strings.Replace(nestedConfig, `[248046, 248044]`, `"x"`, 1), "eos_token_id"},
		{"attention bias", strings.Replace(nestedConfig, `"head_dim": 256`, `"head_dim": 256, "attention_bias": true`, 1), "attention_bias"},
		{"negative eps", strings.Replace(nestedConfig, `"rms_norm_eps": 1e-6`, `"rms_norm_eps": -1`, 1), "rms_norm_eps must be a positive number, got -1"},
		{"zero eps", strings.Replace(nestedConfig, `"rms_norm_eps": 1e-6`, `"rms_norm_eps": 0`, 1), "rms_norm_eps must be a positive number"},
		{"negative theta", strings.Replace(nestedConfig, `"rope_theta": 10000000`, `"rope_theta": -1`, 1), "rope_theta must be a positive number, got -1"},
		{"huge theta", strings.Replace(nestedConfig, `"rope_theta": 10000000`, `"rope_theta": 1e999`, 1), "rope_theta"},
		{"rotary factor above 1", strings.Replace(nestedConfig, `"partial_rotary_factor": 0.25`, `"partial_rotary_factor": 2`, 1), "partial_rotary_factor must be in (0, 1]"},
		{"negative max positions", strings.Replace(nestedConfig, `"head_dim": 256`, `"head_dim": 256, "max_position_embeddings": -5`, 1), "max_position_embeddings must not be negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(c.json))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
