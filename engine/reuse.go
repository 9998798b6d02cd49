package engine

import (
	"slices"

	"bagel/qwen"
	"bagel/switches"
)

// Prompt reuse across turns. A chat re-sends the whole conversation every
// turn; the engine keeps a snapshot of the cache taken after the previous
// prompt's tokens but its last, and when the new prompt starts with those
// tokens, restores it and prefills only the rest. The snapshot ends one token
// short of the prompt so that regenerating a reply (the same prompt again)
// reuses all but one token. The Gated-DeltaNet state cannot be rewound, which
// is why rivals re-read the conversation on these models (RIVALS.md §C).

// SwitchPromptReuse turns prompt reuse across turns on.
const SwitchPromptReuse = "prompt-reuse"

func init() {
	switches.Register(switches.Switch{
		Name:        SwitchPromptReuse,
		Description: "Keep the conversation's state between turns and prefill only the new part of the prompt (applies at the next reply).",
		Default:     true,
		Env:         "BAGEL_NO_PROMPT_REUSE",
	})
}

// heldState is the snapshot and the tokens it was taken after.
type heldState struct {
	tokens []int32
	snap   *qwen.Snapshot
}

// reuse prepares the cache for prompt: it restores the held snapshot when the
// prompt extends its tokens and returns how many tokens that covers, or resets
// the cache and returns 0.
func (e *Engine) reuse(prompt []int32) (int, error) {
	held := e.held
	if held == nil || !switches.On(SwitchPromptReuse) || len(held.tokens) >= len(prompt) ||
		!slices.Equal(held.tokens, prompt[:len(held.tokens)]) {
		return 0, e.resetCache()
	}
	err := e.loop.do(func() error { return e.cache.Restore(e.ctx, held.snap) })
	if err != nil {
		e.held = nil
		return 0, e.resetCache()
	}
	return len(held.tokens), nil
}

// keepSnapshot holds the cache's state after tokens (the cache holds exactly
// those now) for the next turn.
func (e *Engine) keepSnapshot(tokens []int32) error {
	e.held = nil
	if !switches.On(SwitchPromptReuse) || len(tokens) == 0 {
		return nil
	}
	var snap *qwen.Snapshot
	if err := e.loop.do(func() (err error) { snap, err = e.cache.Snapshot(e.ctx); return err }); err != nil {
		return err
	}
	e.held = &heldState{tokens: slices.Clone(tokens), snap: snap}
	return nil
}
