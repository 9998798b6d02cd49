package engine

import (
	"errors"
	"fmt"
	"io/fs"

	"bagel/tokenizer"
)

// loadText loads the tokenizer, chat template and stop tokens of a model folder.
// A folder without tokenizer.json can still score token ids, so its absence is
// not an error here; Generate reports it.
func (e *Engine) loadText() error {
	e.thinkOpen, e.thinkClose = -1, -1
	e.eos = e.Config.EOSTokenIDs
	tok, err := tokenizer.Open(e.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if n := tok.VocabSize(); n > e.Config.VocabSize {
		return fmt.Errorf("tokenizer.json has %d token ids but the model has %d (config.json vocab_size, the embedding's rows): the tokenizer belongs to another model",
			n, e.Config.VocabSize)
	}
	// A smaller vocabulary is usual (the embedding is padded), but the
	// model's stop tokens must be in it, or a tokenizer of another model
	// (32,000 tokens beside Qwen's 151,936) loads and every reply is garbage.
	for _, id := range e.eos {
		if int(id) >= tok.VocabSize() || tok.TokenString(id) == "" {
			return fmt.Errorf("tokenizer.json (%d token ids) lacks the model's stop token %d (config.json eos_token_id): the tokenizer belongs to another model",
				tok.VocabSize(), id)
		}
	}
	e.tok = tok
	e.tmpl, e.tmplErr = tok.Template()
	if id, ok := tok.TokenID("<think>"); ok {
		e.thinkOpen = id
	}
	if id, ok := tok.TokenID("</think>"); ok {
		e.thinkClose = id
	}
	// mlx-lm: with no eos_token_id in config.json or generation_config.json
	// (qwen.Open applied both), the tokenizer's eos token.
	if len(e.eos) == 0 {
		if id, ok := tok.EOSTokenID(); ok {
			e.eos = []int32{id}
		}
	}
	return nil
}
