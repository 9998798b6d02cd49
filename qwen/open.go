package qwen

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"bagel/safetensors"

	"bagel/internal/jsonmsg"
	"bagel/internal/regular"
)

// Open is the one reader of a model folder's model files, as mlx-lm's load is:
// config.json (the text config and its quantization block), generation_config.json
// (its eos_token_id overrides config.json's), and every safetensors shard, mapped.
// The tokenizer files are tokenizer.Open's. The caller closes the checkpoint after
// the Model bound to it. Errors name the file and the problem.
func Open(dir string) (*Config, *safetensors.Checkpoint, error) {
	cfg, err := readConfig(dir)
	if err != nil {
		return nil, nil, err
	}
	if err := readGenerationConfig(dir, cfg); err != nil {
		return nil, nil, err
	}
	ck, err := safetensors.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	return cfg, ck, nil
}

// jsonLimit bounds config.json and generation_config.json (a few KB when real).
const jsonLimit = 16 << 20

// readConfig reads dir/config.json.
func readConfig(dir string) (*Config, error) {
	data, err := regular.ReadFile(filepath.Join(dir, "config.json"), jsonLimit)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("config.json: not found in %s (is this a model folder?)", dir)
		}
		return nil, err // it names the file
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("config.json: %w", err)
	}
	cfg.Vision, cfg.visionErr = parseVisionConfig(data)
	return cfg, nil
}

// readGenerationConfig applies generation_config.json's eos_token_id, when the
// file exists and names one (mlx-lm load_config). Its sampling values are not
// read, as in mlx-lm (MLX_QWEN35.md §5).
func readGenerationConfig(dir string, cfg *Config) error {
	data, err := regular.ReadFile(filepath.Join(dir, "generation_config.json"), jsonLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err // it names the file
	}
	var gc struct {
		EOS json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(data, &gc); err != nil {
		return fmt.Errorf("generation_config.json: %w", jsonmsg.Explain(err, data))
	}
	ids, err := ParseTokenIDs(gc.EOS)
	if err != nil {
		return fmt.Errorf("generation_config.json: eos_token_id: %w", err)
	}
	if len(ids) > 0 {
		cfg.EOSTokenIDs = ids
	}
	return nil
}
