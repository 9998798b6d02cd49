package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"bagel/engine"
	"bagel/tokenizer"
)

// runReplay plays a conversation's user turns in order in one engine,
// generating each reply and adding it to the conversation as the app does, and
// prints one JSON line per turn: how much of the prompt the engine reused from
// the turn before, what it prefilled, and the speeds.
// maxPromptCacheMB bounds --prompt-cache-mb: a terabyte (far more overflowed
// the byte count and turned the cache off without a word).
const maxPromptCacheMB = 1 << 20

func runReplay(args []string, out, errOut io.Writer) error {
	fs := newFlags("replay", errOut)
	dir := fs.modelDir("model folder (MLX layout, with its tokenizer)")
	file := fs.requiredString("messages", "FILE", `JSON file: [{"role":"system"|"user","content":"..."}, ...]; assistant turns are generated`)
	maxTokens := fs.Int("max-tokens", 64, "tokens per reply at most")
	backendName := fs.backend()
	fs.engineSwitches()
	ctxLen := fs.contextLength()
	chunk := fs.prefillChunk()
	noThink := fs.Bool("no-think", false, "turn thinking off")
	cacheMB := fs.Int("prompt-cache-mb", 0, fmt.Sprintf("memory for the conversations kept between turns, MB (0: %d)", engine.DefaultPromptCacheBytes>>20))
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := need(
		check{*maxTokens >= 1, "max-tokens", *maxTokens, "want 1 or more"},
		check{*cacheMB >= 0 && *cacheMB <= maxPromptCacheMB, "prompt-cache-mb", *cacheMB, fmt.Sprintf("want 0 (the default) to %d", maxPromptCacheMB)},
	); err != nil {
		return err
	}
	data, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	var script []tokenizer.Message
	if err := json.Unmarshal(data, &script); err != nil {
		return fmt.Errorf("%s: want a JSON array of {\"role\", \"content\"} objects: %w", *file, err)
	}
	e, err := engine.Load(*dir, engine.Options{Backend: *backendName, ContextLength: *ctxLen, PromptCacheBytes: int64(*cacheMB) << 20, PrefillChunk: *chunk})
	if err != nil {
		return err
	}
	defer e.Close()
	enc := json.NewEncoder(out)
	var conv []tokenizer.Message
	turn := 0
	for _, m := range script {
		if m.Role == "assistant" {
			continue // replies are generated
		}
		conv = append(conv, m)
		if m.Role != "user" {
			continue
		}
		turn++
		req := engine.Request{Messages: conv, MaxTokens: *maxTokens, EnableThinking: !*noThink}
		var reply string
		var done engine.Event
		for ev := range e.Generate(context.Background(), req) {
			switch ev.Kind {
			case engine.EventToken:
				if !ev.Thinking {
					reply += ev.Text
				}
			case engine.EventDone:
				done = ev
			case engine.EventError:
				return fmt.Errorf("turn %d: %w", turn, ev.Err)
			}
		}
		st := done.Stats
		line := map[string]any{"turn": turn, "prompt_tokens": st.PromptTokens, "reused_tokens": st.ReusedPromptTokens,
			"prefill_tokens": st.PromptTokens - st.ReusedPromptTokens, "ttft_ms": float64(st.TimeToFirstToken.Microseconds()) / 1000,
			"decode_tok_s": st.DecodeTokensPerSec}
		if err := enc.Encode(line); err != nil {
			return err
		}
		conv = append(conv, tokenizer.Message{Role: "assistant", Content: reply})
	}
	if turn == 0 {
		return fmt.Errorf("%s: no user turn to play", *file)
	}
	return nil
}
