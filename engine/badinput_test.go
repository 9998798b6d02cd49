package engine

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"bagel/internal/testmodel"
	"bagel/safetensors"
)

// copyModel copies a test model's files into a fresh folder the case may break.
func copyModel(t *testing.T, name string) string {
	t.Helper()
	src := testmodel.Weights(t, name)
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// editJSON rewrites a JSON file of dir through f.
func editJSON(t *testing.T, path string, f func(m map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// editHeader rewrites the JSON header of a safetensors file through f, keeping
// the data section as it is.
func editHeader(t *testing.T, path string, f func(h map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(data)
	var h map[string]any
	if err := json.Unmarshal(data[8:8+n], &h); err != nil {
		t.Fatal(err)
	}
	f(h)
	hdr, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	for len(hdr)%8 != 0 {
		hdr = append(hdr, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	out = append(out, hdr...)
	out = append(out, data[8+n:]...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// poisonTensor overwrites bf16 element i of tensor name in a safetensors file.
func poisonTensor(t *testing.T, path, name string, i int, bits uint16) {
	t.Helper()
	f, err := safetensors.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tn, ok := f.Tensors[name]
	if !ok {
		f.Close()
		t.Fatalf("no tensor %s", name)
	}
	off := tn.Offset + int64(2*i)
	f.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint16(data[off:], bits)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func textConfig(m map[string]any) map[string]any { return m["text_config"].(map[string]any) }

// TestContextLimits: a context beyond the model's maximum, or one whose cache
// would not fit in memory, is refused before anything is allocated.
func TestContextLimits(t *testing.T) {
	dir := copyModel(t, "tiny-moe")
	editJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) { textConfig(m)["max_position_embeddings"] = 4096.0 })
	for n, want := range map[int]string{
		5000:      "a context of 5000 tokens exceeds the model's maximum of 4096",
		100000000: "exceeds the model's maximum",
	} {
		if e, err := Load(dir, Options{Backend: "cpu", ContextLength: n}); err == nil || !strings.Contains(err.Error(), want) {
			if e != nil {
				e.Close()
			}
			t.Errorf("context %d: %v", n, err)
		}
	}
	editJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) { delete(textConfig(m), "max_position_embeddings") })
	e, err := Load(dir, Options{Backend: "cpu", ContextLength: 1 << 30})
	if err == nil {
		e.Close()
		t.Fatal("a 2^30-token context loaded")
	}
	if !strings.Contains(err.Error(), "GB of cache") || !strings.Contains(err.Error(), "system RAM") {
		t.Errorf("error %q does not name the cache and the memory", err)
	}
	if e, err := Load(dir, Options{Backend: "cpu", ContextLength: 4096}); err != nil {
		t.Errorf("an ordinary context: %v", err)
	} else {
		e.Close()
	}
}

// TestBrokenModelFolders: every broken folder gives an error that names the file
// (and tensor) and the problem; none panics; none leaks a mapping.
func TestBrokenModelFolders(t *testing.T) {
	const model = "tiny-moe"
	const st = "model.safetensors"
	prefix := "language_model.model."
	cases := []struct {
		name    string
		breakIt func(t *testing.T, dir string)
		want    []string // substrings of the error
	}{
		{"missing config", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "config.json")) },
			[]string{"config.json", "not found"}},
		{"invalid config JSON", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "qwen3_5",`), 0o644)
		}, []string{"config.json", "invalid JSON"}},
		{"unknown model_type", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) { m["model_type"] = "llama" })
		}, []string{"config.json", `"llama"`, "not supported"}},
		{"no safetensors", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, st)) },
			[]string{"safetensors"}},
		{"index names a missing shard", func(t *testing.T, dir string) {
			idx := map[string]any{"weight_map": map[string]string{prefix + "embed_tokens.weight": "model-00002-of-00002.safetensors"}}
			data, _ := json.Marshal(idx)
			os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), data, 0o644)
		}, []string{"model-00002-of-00002.safetensors", "model.safetensors.index.json"}},
		{"truncated safetensors", func(t *testing.T, dir string) {
			p := filepath.Join(dir, st)
			fi, _ := os.Stat(p)
			os.Truncate(p, fi.Size()/2)
		}, []string{st}},
		{"header length past end of file", func(t *testing.T, dir string) {
			p := filepath.Join(dir, st)
			data, _ := os.ReadFile(p)
			binary.LittleEndian.PutUint64(data, uint64(len(data))*4)
			os.WriteFile(p, data, 0o644)
		}, []string{st, "header length"}},
		{"tensor data outside the file", func(t *testing.T, dir string) {
			editHeader(t, filepath.Join(dir, st), func(h map[string]any) {
				e := h[prefix+"norm.weight"].(map[string]any)
				e["data_offsets"] = []int64{1 << 40, 1<<40 + 128}
			})
		}, []string{st, prefix + "norm.weight"}},
		{"missing tensor", func(t *testing.T, dir string) {
			editHeader(t, filepath.Join(dir, st), func(h map[string]any) { delete(h, prefix+"layers.0.linear_attn.A_log") })
		}, []string{"missing tensor", prefix + "layers.0.linear_attn.A_log"}},
		{"shape disagrees with config", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) {
				textConfig(m)["linear_value_head_dim"] = 32.0
			})
		}, []string{prefix + "layers.0.linear_attn"}},
		{"packed shape disagrees with bits", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) {
				for _, k := range []string{"quantization", "quantization_config"} {
					if q, ok := m[k].(map[string]any); ok {
						q["bits"] = 8.0
					}
				}
			})
		}, []string{"embed_tokens", "8-bit", "want"}},
		{"config.json is a FIFO", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "config.json")
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skip(err)
			}
		}, []string{"config.json", "not a regular file", "named pipe"}},
		{"a shard is a FIFO", func(t *testing.T, dir string) {
			p := filepath.Join(dir, st)
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skip(err)
			}
		}, []string{st, "not a regular file"}},
		{"overlapping tensors", func(t *testing.T, dir string) {
			editHeader(t, filepath.Join(dir, st), func(h map[string]any) {
				a := h[prefix+"norm.weight"].(map[string]any)
				b := h[prefix+"layers.0.input_layernorm.weight"].(map[string]any)
				b["data_offsets"] = a["data_offsets"]
			})
		}, []string{st, "overlap", prefix + "norm.weight"}},
		{"missing scales", func(t *testing.T, dir string) {
			editHeader(t, filepath.Join(dir, st), func(h map[string]any) { delete(h, prefix+"layers.0.mlp.gate.scales") })
		}, []string{prefix + "layers.0.mlp.gate.scales not found"}},
		{"negative rope_theta", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) {
				rp, _ := textConfig(m)["rope_parameters"].(map[string]any)
				if rp == nil {
					rp = map[string]any{}
					textConfig(m)["rope_parameters"] = rp
				}
				rp["rope_theta"] = -1.0
			})
		}, []string{"config.json", "rope_theta must be a positive number"}},
		{"tokenizer larger than the model", func(t *testing.T, dir string) {
			tok := filepath.Join(testmodel.Dir(t, model), "tokenizer.json")
			data, _ := os.ReadFile(tok)
			var m map[string]any
			json.Unmarshal(data, &m)
			added := m["added_tokens"].([]any)
			m["added_tokens"] = append(added, map[string]any{"id": 200000, "content": "<|far|>", "special": true,
				"single_word": false, "lstrip": false, "rstrip": false, "normalized": false})
			out, _ := json.Marshal(m)
			os.WriteFile(filepath.Join(dir, "tokenizer.json"), out, 0o644)
		}, []string{"tokenizer.json", "200001 token ids", "belongs to another model"}},
		{"tokenizer without merges", func(t *testing.T, dir string) {
			tok := filepath.Join(testmodel.Dir(t, model), "tokenizer.json")
			data, _ := os.ReadFile(tok)
			var m map[string]any
			json.Unmarshal(data, &m)
			m["model"].(map[string]any)["merges"] = []any{}
			out, _ := json.Marshal(m)
			os.WriteFile(filepath.Join(dir, "tokenizer.json"), out, 0o644)
		}, []string{"tokenizer.json", "no merges", "incomplete"}},
		{"tokenizer of another model", func(t *testing.T, dir string) {
			// Its vocabulary ends below the model's stop token.
			data, _ := os.ReadFile(filepath.Join(testmodel.Dir(t, model), "tokenizer.json"))
			os.WriteFile(filepath.Join(dir, "tokenizer.json"), data, 0o644)
			editJSON(t, filepath.Join(dir, "generation_config.json"), func(m map[string]any) { m["eos_token_id"] = 151900.0 })
		}, []string{"tokenizer.json", "lacks the model's stop token 151900", "belongs to another model"}},
		{"NaN in a norm weight", func(t *testing.T, dir string) {
			poisonTensor(t, filepath.Join(dir, st), prefix+"layers.1.post_attention_layernorm.weight", 5, 0x7fc0)
		}, []string{prefix + "layers.1.post_attention_layernorm.weight", st, "element 5 is NaN", "corrupt"}},
		{"infinity in a scale", func(t *testing.T, dir string) {
			poisonTensor(t, filepath.Join(dir, st), prefix+"layers.0.mlp.switch_mlp.down_proj.scales", 17, 0xff80)
		}, []string{prefix + "layers.0.mlp.switch_mlp.down_proj.scales", "element 17 is infinite"}},
		{"a string where a number goes", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) { textConfig(m)["hidden_size"] = "lots" })
		}, []string{"config.json", "hidden_size is a string; want a whole number"}},
		{"1e18 layers", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) {
				textConfig(m)["num_hidden_layers"] = json.Number("1000000000000000000")
			})
		}, []string{"config.json", "num_hidden_layers is 1000000000000000000", "more than Bagel supports"}},
		{"more layers than the checkpoint holds", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) { textConfig(m)["num_hidden_layers"] = 8.0 })
		}, []string{"config.json", "num_hidden_layers is 8", "the checkpoint holds 4 layers"}},
		{"unsupported quantization mode", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) {
				for _, k := range []string{"quantization", "quantization_config"} {
					if q, ok := m[k].(map[string]any); ok {
						q["mode"] = "mxfp4"
					}
				}
			})
		}, []string{"quantization mode mxfp4 is not supported yet"}},
	}
	base := safetensors.OpenMappings()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyModel(t, model)
			c.breakIt(t, dir)
			var e *Engine
			var err error
			loaded := make(chan struct{})
			go func() {
				defer close(loaded)
				e, err = Load(dir, Options{Backend: "cpu", ContextLength: 16})
			}()
			select {
			case <-loaded:
			case <-time.After(60 * time.Second):
				t.Fatal("Load hung on a broken folder")
			}
			if err == nil {
				e.Close()
				t.Fatal("Load succeeded on a broken folder")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			for _, bad := range []string{"config.json: config.json", "Go struct", "Go value", "rawText"} {
				if strings.Contains(err.Error(), bad) {
					t.Errorf("error %q says %q: a doubled prefix or a Go name", err, bad)
				}
			}
			if n := safetensors.OpenMappings(); n != base {
				t.Errorf("%d mappings left open after the failed load", n-base)
			}
		})
	}
}

// TestLoadCancelled: a closed Cancel channel stops the load with
// ErrLoadCancelled and leaves no mapping open.
func TestLoadCancelled(t *testing.T) {
	base := safetensors.OpenMappings()
	stop := make(chan struct{})
	close(stop)
	e, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 16, Cancel: stop})
	if !errors.Is(err, ErrLoadCancelled) {
		if e != nil {
			e.Close()
		}
		t.Fatalf("error %v, want ErrLoadCancelled", err)
	}
	if n := safetensors.OpenMappings(); n != base {
		t.Errorf("%d mappings left open", n-base)
	}
}
