package safetensors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// QuantParams is how one layer is quantized. Mode is always "affine" once parsed:
// the float modes are rejected by ParseQuantization.
type QuantParams struct {
	Bits, GroupSize int
	Mode            string
}

// Quantization is config.json's quantization block: the global parameters and
// the per-layer overrides, keyed by module path ("language_model.model.layers.0.mlp.gate").
type Quantization struct {
	Default  QuantParams
	PerLayer map[string]QuantParams
}

// For is the parameters of the module at path: its override, else the default.
func (q *Quantization) For(path string) QuantParams {
	if p, ok := q.PerLayer[path]; ok {
		return p
	}
	return q.Default
}

// The keys of the block that are global parameters, not module paths.
var globalQuantKeys = map[string]bool{"group_size": true, "bits": true, "mode": true, "quant_method": true}

// ParseQuantization reads the quantization block of config.json (the file's
// text): the key "quantization", else "quantization_config" (mlx-lm writes both,
// identical; the second alone comes from older converters). No block means an
// unquantized model: nil, nil.
func ParseQuantization(configJSON []byte) (*Quantization, error) {
	var config map[string]json.RawMessage
	if err := json.Unmarshal(configJSON, &config); err != nil {
		return nil, fmt.Errorf("config.json: invalid JSON: %w", err)
	}
	key := "quantization"
	raw := config[key]
	if isNull(raw) {
		key = "quantization_config"
		raw = config[key]
	}
	if isNull(raw) {
		return nil, nil
	}
	var block map[string]json.RawMessage
	if err := json.Unmarshal(raw, &block); err != nil || block == nil {
		return nil, fmt.Errorf("config.json: %s is not a JSON object", key)
	}
	if err := checkQuantMethod(key, block); err != nil {
		return nil, err
	}

	var global struct {
		Bits      *int    `json:"bits"`
		GroupSize *int    `json:"group_size"`
		Mode      *string `json:"mode"`
	}
	if err := json.Unmarshal(raw, &global); err != nil {
		return nil, fmt.Errorf("config.json: %s: %w", key, err)
	}
	mode := "affine"
	if global.Mode != nil {
		mode = *global.Mode
	}
	if err := checkMode(mode); err != nil {
		return nil, err
	}
	if global.Bits == nil || global.GroupSize == nil {
		return nil, fmt.Errorf("config.json: %s needs both \"bits\" and \"group_size\"", key)
	}
	q := &Quantization{
		Default:  QuantParams{Bits: *global.Bits, GroupSize: *global.GroupSize, Mode: mode},
		PerLayer: map[string]QuantParams{},
	}
	if err := checkAffine(q.Default); err != nil {
		return nil, fmt.Errorf("config.json: %s: %w", key, err)
	}

	paths := make([]string, 0, len(block))
	for path := range block {
		paths = append(paths, path)
	}
	sort.Strings(paths) // the first bad layer reported is the same every run
	for _, path := range paths {
		v := bytes.TrimSpace(block[path])
		// Only dicts are overrides. mlx-lm may also record a skipped layer as false;
		// whether a layer is quantized is decided by its .scales tensor instead.
		if globalQuantKeys[path] || len(v) == 0 || v[0] != '{' {
			continue
		}
		p, err := parseLayerParams(v)
		if err != nil {
			return nil, fmt.Errorf("config.json: %s[%q]: %w", key, path, err)
		}
		if err := checkMode(p.Mode); err != nil {
			return nil, err
		}
		if err := checkAffine(p); err != nil {
			return nil, fmt.Errorf("config.json: %s[%q]: %w", key, path, err)
		}
		q.PerLayer[path] = p
	}
	return q, nil
}

// parseLayerParams reads one per-layer dict. MLX applies it as
// to_quantized(**dict), whose defaults are mode "affine" and, for affine, group
// size 64 and 4 bits; so a dict without "mode" is affine even when the global mode
// is not (docs/MLX_QWEN35.md §1).
func parseLayerParams(v []byte) (QuantParams, error) {
	var d struct {
		Bits      *int    `json:"bits"`
		GroupSize *int    `json:"group_size"`
		Mode      *string `json:"mode"`
	}
	if err := json.Unmarshal(v, &d); err != nil {
		return QuantParams{}, err
	}
	p := QuantParams{Bits: 4, GroupSize: 64, Mode: "affine"}
	if d.Mode != nil {
		p.Mode = *d.Mode
	}
	if d.Bits != nil {
		p.Bits = *d.Bits
	}
	if d.GroupSize != nil {
		p.GroupSize = *d.GroupSize
	}
	return p, nil
}

// checkQuantMethod rejects the quantization_config of other tools (Hugging Face
// gptq/awq/compressed-tensors/mxfp4): their tensors are not in MLX's layout.
func checkQuantMethod(key string, block map[string]json.RawMessage) error {
	raw, ok := block["quant_method"]
	if !ok {
		return nil
	}
	var method string
	if err := json.Unmarshal(raw, &method); err != nil {
		return fmt.Errorf("config.json: %s: quant_method is not a string", key)
	}
	switch {
	case method == "mxfp4":
		return checkMode("mxfp4")
	case method == "compressed-tensors" && bytes.Contains(bytes.ToLower(block["format"]), []byte("nvfp4")):
		return checkMode("nvfp4")
	}
	return fmt.Errorf("config.json: %s: quant_method %q is not supported (convert the model with mlx_lm.convert)", key, method)
}

// checkMode accepts affine and names the MLX float modes we do not run yet.
func checkMode(mode string) error {
	switch mode {
	case "affine":
		return nil
	case "mxfp4", "mxfp8", "nvfp4":
		return fmt.Errorf("quantization mode %s is not supported yet", mode)
	}
	return fmt.Errorf("quantization mode %q is unknown", mode)
}

// checkAffine checks bits and group size against what MLX's affine kernels
// support (MLX ops.cpp quantize).
func checkAffine(p QuantParams) error {
	switch p.Bits {
	case 2, 3, 4, 5, 6, 8:
	default:
		return fmt.Errorf("%d-bit quantization is not supported (want 2, 3, 4, 5, 6 or 8 bits)", p.Bits)
	}
	switch p.GroupSize {
	case 32, 64, 128:
	default:
		return fmt.Errorf("group size %d is not supported (want 32, 64 or 128)", p.GroupSize)
	}
	return nil
}

// isNull reports an absent or JSON null value.
func isNull(raw json.RawMessage) bool {
	v := bytes.TrimSpace(raw)
	return len(v) == 0 || bytes.Equal(v, []byte("null"))
}
