package engine

import (
	"slices"

	"bagel/qwen"
	"bagel/switches"
)

// Prompt reuse across turns. A chat re-sends the whole conversation every
// turn; the engine keeps snapshots of the cache (self-contained copies in
// device memory: GDN states and the keys and values) taken where each prompt's conversation
// ends and its generation prompt begins, a few conversations within a memory
// budget, least recently used evicted. When a new prompt extends a held one,
// the engine restores it and prefills only the rest: the next turn, a
// regenerated reply, an edit of the last question, a switch back to another
// chat. The Gated-DeltaNet state cannot be rewound, which is why rivals
// re-read the conversation on these models (RIVALS.md §C).

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

// heldState is a snapshot and the tokens it was taken after.
type heldState struct {
	tokens []int32
	snap   *qwen.Snapshot
}

// DefaultPromptCacheBytes is the device memory the held conversations may take
// when Options.PromptCacheBytes is 0 (at the 35B-A3B shapes a conversation of
// 4K tokens is about 150 MB: 63 MB of GDN state and 20 KB of keys per token).
const DefaultPromptCacheBytes = 1 << 30

// PromptCacheBudget is the memory the held conversations may take: the
// loading Options' PromptCacheBytes, DefaultPromptCacheBytes for 0, none when
// negative.
func (e *Engine) PromptCacheBudget() int64 {
	switch {
	case e.promptCacheBytes == 0:
		return DefaultPromptCacheBytes
	case e.promptCacheBytes < 0:
		return 0
	}
	return e.promptCacheBytes
}

// reuse prepares the cache for prompt: it restores the held state with the
// longest tokens that the prompt extends, most recent first among equals, and
// returns how many tokens that covers; or resets the cache and returns 0.
func (e *Engine) reuse(prompt []int32) (int, error) { return e.reuseInto(e.cache, prompt) }

// reuseInto is reuse for cache k (the engine's, or a batch's slot: a
// snapshot holds its tokens' keys and values, not the cache's length).
func (e *Engine) reuseInto(k *qwen.Cache, prompt []int32) (int, error) {
	reset := func() error { return e.loop.do(func() error { return k.Reset(e.ctx) }) }
	if !switches.On(SwitchPromptReuse) {
		return 0, reset()
	}
	best := -1
	// A state taken while the MTP head was not kept in step cannot draft:
	// with the head wanted, such a prefix is read again instead (once, the
	// first turn after the switch went on).
	mtp := e.mtpWanted()
	for i, h := range e.held {
		if len(h.tokens) < len(prompt) && len(h.tokens) <= k.Capacity && slices.Equal(h.tokens, prompt[:len(h.tokens)]) &&
			!(mtp && k == e.cache && h.snap.MTPStale()) && (best < 0 || len(h.tokens) > len(e.held[best].tokens)) {
			best = i
		}
	}
	if best < 0 {
		return 0, reset()
	}
	h := e.held[best]
	if err := e.loop.do(func() error { return k.Restore(e.ctx, h.snap) }); err != nil {
		e.setHeld(slices.Delete(e.held, best, best+1))
		e.releaseHeld([]*heldState{h})
		return 0, reset()
	}
	e.setHeld(append([]*heldState{h}, slices.Delete(e.held, best, best+1)...)) // most recent first
	return len(h.tokens), nil
}

// keepSnapshot holds the cache's state after tokens (the cache holds exactly
// those now) for later turns, evicting the least recently used states beyond
// the budget.
func (e *Engine) keepSnapshot(tokens []int32) error { return e.keepSnapshotOf(e.cache, tokens) }

// keepSnapshotOf is keepSnapshot of cache k (a batch's slot).
func (e *Engine) keepSnapshotOf(k *qwen.Cache, tokens []int32) error {
	if !switches.On(SwitchPromptReuse) || len(tokens) == 0 || e.promptCacheBytes < 0 {
		return nil
	}
	var snap *qwen.Snapshot
	if err := e.loop.do(func() (err error) { snap, err = k.Snapshot(e.ctx); return err }); err != nil {
		return err
	}
	held := []*heldState{{tokens: slices.Clone(tokens), snap: snap}}
	budget := e.PromptCacheBudget()
	used := snap.Bytes()
	// A chat's later turn supersedes its earlier ones: of the held states
	// that tokens extends, only the longest stays (the turn before, which an
	// edit of the last question restores); the others can no longer be the
	// best match of any prompt of that chat. A snapshot a turn filled the
	// cache to its budget over a long chat (80 turns: 230 MB more).
	previous := -1
	for i, h := range e.held {
		if len(h.tokens) < len(tokens) && slices.Equal(h.tokens, tokens[:len(h.tokens)]) &&
			(previous < 0 || len(h.tokens) > len(e.held[previous].tokens)) {
			previous = i
		}
	}
	var dropped []*heldState
	for i, h := range e.held {
		superseded := i != previous && len(h.tokens) < len(tokens) && slices.Equal(h.tokens, tokens[:len(h.tokens)])
		if superseded || slices.Equal(h.tokens, tokens) || used+h.snap.Bytes() > budget {
			dropped = append(dropped, h) // superseded or replaced by the new one, or evicted: older than everything kept
			continue
		}
		used += h.snap.Bytes()
		held = append(held, h)
	}
	e.setHeld(held)
	e.releaseHeld(dropped)
	return nil
}

// releaseHeld frees the device memory of snapshots no longer held.
func (e *Engine) releaseHeld(states []*heldState) {
	if len(states) == 0 {
		return
	}
	_ = e.loop.do(func() error {
		for _, h := range states {
			h.snap.Release(e.ctx)
		}
		return nil
	})
}

// setHeld makes held the held states and counts them for PromptCache, which
// any goroutine may call while a reply's goroutine changes them.
func (e *Engine) setHeld(held []*heldState) {
	e.held = held
	var bytes int64
	for _, h := range held {
		bytes += h.snap.Bytes()
	}
	e.heldCount.Store(int64(len(held)))
	e.heldBytes.Store(bytes)
}

// PromptCache reports the conversations held for prompt reuse and the device
// memory their snapshots take; safe from any goroutine.
func (e *Engine) PromptCache() (conversations int, bytes int64) {
	return int(e.heldCount.Load()), e.heldBytes.Load()
}
