package engine

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bagel/backend"
	"bagel/internal/testmodel"
)

// TestRawHFLayoutMatchesMLX: the same weights in the raw Hugging Face layout
// (model.language_model.* keys, conv1d [C, 1, K], zero-centred norms stored as
// w−1) score exactly as the MLX conversion does: qwen's sanitize step maps one
// onto the other (MLX_QWEN35.md §2, §6.1). w−1 and back is exact in bf16 for
// the converted norms' range, so the logits must be bit-identical.
func TestRawHFLayoutMatchesMLX(t *testing.T) {
	for _, name := range testmodel.Names {
		t.Run(name, func(t *testing.T) {
			raw := copyModel(t, name)
			toRawHF(t, filepath.Join(raw, "model.safetensors"))
			editJSON(t, filepath.Join(raw, "config.json"), func(m map[string]any) {
				for _, k := range []string{"quantization", "quantization_config"} {
					if q, ok := m[k].(map[string]any); ok {
						for path, v := range q {
							if rest, ok := strings.CutPrefix(path, "language_model.model."); ok {
								delete(q, path)
								q["model.language_model."+rest] = v
							}
						}
					}
				}
			})
			var logits [2][]float32
			for i, dir := range []string{testmodel.Weights(t, name), raw} {
				e, err := Load(dir, Options{Backend: "cpu", ContextLength: 32})
				if err != nil {
					t.Fatal(err)
				}
				logits[i] = scoreLogits(t, e, otherIDs, 5)
				e.Close()
			}
			for i := range logits[0] {
				if logits[0][i] != logits[1][i] {
					t.Fatalf("logit %d: %v (MLX layout) vs %v (raw HF layout)", i, logits[0][i], logits[1][i])
				}
			}
		})
	}
}

// toRawHF rewrites an MLX-converted single-shard checkpoint into the raw
// Hugging Face layout in place.
func toRawHF(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(data)
	var h map[string]map[string]any
	if err := json.Unmarshal(data[8:8+n], &h); err != nil {
		t.Fatal(err)
	}
	body := data[8+n:]
	out := map[string]any{}
	shifted := 0
	for key, e := range h {
		if key == "__metadata__" {
			out[key] = e
			continue
		}
		newKey := key
		if rest, ok := strings.CutPrefix(key, "language_model.model."); ok {
			newKey = "model.language_model." + rest
		} else if rest, ok := strings.CutPrefix(key, "language_model."); ok {
			newKey = rest // lm_head
		}
		if strings.HasSuffix(key, "conv1d.weight") {
			shape := e["shape"].([]any)
			e["shape"] = []any{shape[0], shape[2], shape[1]} // [C, K, 1] → [C, 1, K]
		}
		if isShiftedNorm(key) {
			offs := e["data_offsets"].([]any)
			w := body[int(offs[0].(float64)):int(offs[1].(float64))]
			for i := 0; i < len(w); i += 2 {
				v := backend.BF16ToF32(binary.LittleEndian.Uint16(w[i:]))
				binary.LittleEndian.PutUint16(w[i:], backend.F32ToBF16(v-1))
			}
			shifted++
		}
		out[newKey] = e
	}
	if shifted == 0 {
		t.Fatal("no norm weights found to shift")
	}
	hdr, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	file = append(append(file, hdr...), body...)
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
}

// isShiftedNorm tells the zero-centred norms; the GDN output norm is not one.
func isShiftedNorm(key string) bool {
	for _, s := range []string{"input_layernorm.weight", "post_attention_layernorm.weight", "q_norm.weight", "k_norm.weight"} {
		if strings.HasSuffix(key, s) {
			return true
		}
	}
	return key == "language_model.model.norm.weight"
}
