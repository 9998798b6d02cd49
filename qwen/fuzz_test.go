package qwen

import "testing"

// FuzzParseConfig: any config.json text gives a valid config or an error: no
// panic, and an accepted config passes its own validation (every size
// positive, every real number finite).
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(nestedConfig))
	f.Add([]byte(`{"model_type": "qwen3_5", "hidden_size": 8}`))
	f.Add([]byte(`{"model_type": "qwen3_5_moe", "text_config": {"rope_parameters": {"rope_theta": -1}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data)
		if err != nil {
			return
		}
		if err := cfg.validate(); err != nil {
			t.Fatalf("accepted a config that fails validation: %v", err)
		}
	})
}
