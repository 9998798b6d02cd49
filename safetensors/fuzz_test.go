package safetensors

import "testing"

// FuzzParseQuantization: any config.json text gives a quantization block or an
// error, never a panic.
func FuzzParseQuantization(f *testing.F) {
	f.Add([]byte(`{"quantization": {"bits": 4, "group_size": 64, "mode": "affine", "model.layers.0.mlp.gate": {"bits": 8, "group_size": 64}}}`))
	f.Add([]byte(`{"quantization_config": {"bits": 3, "group_size": 32}}`))
	f.Add([]byte(`{"quantization": {"bits": "x"}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) { _, _ = ParseQuantization(data) })
}
