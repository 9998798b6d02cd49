package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"bagel/qwen"
	"bagel/tokenizer"
)

// loadText loads the tokenizer, chat template and stop tokens of a model folder.
// A folder without tokenizer.json can still score token ids, so its absence is
// not an error here; Generate reports it.
func (e *Engine) loadText() error {
	e.thinkOpen, e.thinkClose = -1, -1
	if _, err := os.Stat(filepath.Join(e.Dir, "tokenizer.json")); os.IsNotExist(err) {
		e.eos = e.Config.EOSTokenIDs
		return nil
	}
	tok, err := tokenizer.Load(e.Dir)
	if err != nil {
		return err
	}
	e.tok = tok
	if tmpl, err := tokenizer.LoadTemplate(e.Dir); err == nil {
		e.tmpl = tmpl
	} else {
		e.tmplErr = err
	}
	if id, ok := tok.TokenID("<think>"); ok {
		e.thinkOpen = id
	}
	if id, ok := tok.TokenID("</think>"); ok {
		e.thinkClose = id
	}
	e.eos, err = stopTokens(e.Dir, e.Config, tok)
	return err
}

// stopTokens follows mlx-lm: generation_config.json's eos_token_id overrides
// config.json's; with neither, the tokenizer's eos token.
func stopTokens(dir string, cfg *qwen.Config, tok *tokenizer.Tokenizer) ([]int, error) {
	ids := cfg.EOSTokenIDs
	path := filepath.Join(dir, "generation_config.json")
	if data, err := os.ReadFile(path); err == nil {
		var gc struct {
			EOS json.RawMessage `json:"eos_token_id"`
		}
		if err := json.Unmarshal(data, &gc); err != nil {
			return nil, fmt.Errorf("generation_config.json: invalid JSON: %w", err)
		}
		more, err := qwen.ParseTokenIDs(gc.EOS)
		if err != nil {
			return nil, fmt.Errorf("generation_config.json: eos_token_id: %w", err)
		}
		if len(more) > 0 {
			ids = more
		}
	}
	if len(ids) == 0 && tok != nil {
		if id, ok := tok.EOSTokenID(); ok {
			ids = []int{id}
		}
	}
	return ids, nil
}
