package safetensors

import (
	"reflect"
	"testing"
)

func TestParseQuantization(t *testing.T) {
	affine := func(bits, gs int) QuantParams { return QuantParams{Bits: bits, GroupSize: gs, Mode: "affine"} }
	const router = "language_model.model.layers.0.mlp.gate"
	const sharedGate = "language_model.model.layers.0.mlp.shared_expert_gate"
	cases := []struct {
		name    string
		config  string
		want    *Quantization // nil with wantErr "" means no block
		wantErr string
	}{
		{name: "absent", config: `{"model_type": "qwen3_5"}`},
		{name: "null", config: `{"quantization": null}`},
		{name: "global only", config: `{"quantization": {"group_size": 64, "bits": 4}}`,
			want: &Quantization{Default: affine(4, 64), PerLayer: map[string]QuantParams{}}},
		{name: "8-bit router inside a 4-bit model", config: `{"quantization": {"group_size": 64, "bits": 4, "mode": "affine",
			"` + router + `": {"group_size": 64, "bits": 8},
			"` + sharedGate + `": {"group_size": 64, "bits": 8},
			"language_model.model.layers.0.mlp.switch_mlp.down_proj": {"group_size": 32, "bits": 6, "mode": "affine"},
			"language_model.model.layers.0.linear_attn.conv1d": false}}`,
			want: &Quantization{Default: affine(4, 64), PerLayer: map[string]QuantParams{
				router:     affine(8, 64),
				sharedGate: affine(8, 64),
				"language_model.model.layers.0.mlp.switch_mlp.down_proj": affine(6, 32),
			}}},
		{name: "quantization_config fallback", config: `{"quantization_config": {"group_size": 32, "bits": 8}}`,
			want: &Quantization{Default: affine(8, 32), PerLayer: map[string]QuantParams{}}},
		{name: "quantization wins over quantization_config",
			config: `{"quantization": {"group_size": 128, "bits": 3}, "quantization_config": {"group_size": 32, "bits": 8}}`,
			want:   &Quantization{Default: affine(3, 128), PerLayer: map[string]QuantParams{}}},
		{name: "per-layer without mode or sizes is affine 4-bit gs64",
			config: `{"quantization": {"group_size": 32, "bits": 2, "l": {}}}`,
			want:   &Quantization{Default: affine(2, 32), PerLayer: map[string]QuantParams{"l": affine(4, 64)}}},

		{name: "mxfp4", config: `{"quantization": {"group_size": 32, "bits": 4, "mode": "mxfp4"}}`,
			wantErr: "quantization mode mxfp4 is not supported yet"},
		{name: "nvfp4", config: `{"quantization": {"group_size": 16, "bits": 4, "mode": "nvfp4"}}`,
			wantErr: "quantization mode nvfp4 is not supported yet"},
		{name: "mxfp8", config: `{"quantization": {"group_size": 32, "bits": 8, "mode": "mxfp8"}}`,
			wantErr: "quantization mode mxfp8 is not supported yet"},
		{name: "per-layer nvfp4", config: `{"quantization": {"group_size": 64, "bits": 4,
			"l": {"group_size": 16, "bits": 4, "mode": "nvfp4"}}}`,
			wantErr: "quantization mode nvfp4 is not supported yet"},
		{name: "HF mxfp4 quant_method", config: `{"quantization_config": {"quant_method": "mxfp4"}}`,
			wantErr: "quantization mode mxfp4 is not supported yet"},
		{name: "HF compressed-tensors nvfp4", config: `{"quantization_config": {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized"}}`,
			wantErr: "quantization mode nvfp4 is not supported yet"},
		{name: "HF gptq", config: `{"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}}`,
			wantErr: `config.json: quantization_config: quant_method "gptq" is not supported`},
		{name: "unknown mode", config: `{"quantization": {"group_size": 64, "bits": 4, "mode": "q4_k"}}`,
			wantErr: `quantization mode "q4_k" is unknown`},
		{name: "bits 7", config: `{"quantization": {"group_size": 64, "bits": 7}}`,
			wantErr: "config.json: quantization: 7-bit quantization is not supported (want 2, 3, 4, 5, 6 or 8 bits)"},
		{name: "group size 16", config: `{"quantization": {"group_size": 16, "bits": 4}}`,
			wantErr: "config.json: quantization: group size 16 is not supported (want 32, 64 or 128)"},
		{name: "per-layer bad bits", config: `{"quantization": {"group_size": 64, "bits": 4, "a.b": {"group_size": 64, "bits": 1}}}`,
			wantErr: `config.json: quantization["a.b"]: 1-bit quantization is not supported`},
		{name: "per-layer bad field", config: `{"quantization": {"group_size": 64, "bits": 4, "a.b": {"bits": "eight"}}}`,
			wantErr: `config.json: quantization["a.b"]: json`},
		{name: "missing bits", config: `{"quantization": {"group_size": 64}}`,
			wantErr: `config.json: quantization needs both "bits" and "group_size"`},
		{name: "not an object", config: `{"quantization": [4, 64]}`,
			wantErr: "config.json: quantization is not a JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q, err := ParseQuantization([]byte(tc.config))
			if tc.wantErr != "" {
				wantErr(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(q, tc.want) {
				t.Errorf("got %+v, want %+v", q, tc.want)
			}
		})
	}
}

// The unsupported-mode errors are a user-facing sentence with nothing around it.
func TestUnsupportedModeExactText(t *testing.T) {
	for _, mode := range []string{"mxfp4", "mxfp8", "nvfp4"} {
		_, err := ParseQuantization([]byte(`{"quantization": {"group_size": 32, "bits": 4, "mode": "` + mode + `"}}`))
		if want := "quantization mode " + mode + " is not supported yet"; err == nil || err.Error() != want {
			t.Errorf("mode %s: error %v, want exactly %q", mode, err, want)
		}
	}
}

func TestQuantizationFor(t *testing.T) {
	q := &Quantization{Default: QuantParams{4, 64, "affine"}, PerLayer: map[string]QuantParams{"r": {8, 64, "affine"}}}
	if got := q.For("r"); got.Bits != 8 {
		t.Errorf("For(r) = %+v", got)
	}
	if got := q.For("x"); got.Bits != 4 {
		t.Errorf("For(x) = %+v", got)
	}
}
