package engine

import (
	"context"
	"maps"
	"testing"

	"bagel/backend"
	"bagel/internal/testmodel"
	"bagel/ops"
	"bagel/switches"
)

// TestChatGrowthAllocatesNothingNew runs a chat that grows turn after turn,
// each prompt read whole (no prompt cache, as after an edit early in a chat)
// and each reply drafted and verified (speculative decoding: verifies of
// several tokens, rollbacks and replays of the GDN rule) or decoded plainly:
// once a full prefill chunk of 512 tokens and a verify have run, no later turn
// — prompts of two and three full chunks and a remainder of 13 different
// lengths across the chunk, their decode steps and verifies — allocates
// another scratch buffer. (The engine's default chunk is 2048; 512 keeps the
// turns short on the CPU.)
func TestChatGrowthAllocatesNothingNew(t *testing.T) {
	t.Cleanup(func() { switches.Reset() })
	e, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 2048, PrefillChunk: 512, PromptCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	turn := func(promptLen int, speculative bool) {
		if err := switches.Set(SwitchSpeculative, speculative); err != nil {
			t.Fatal(err)
		}
		ids := make([]int32, promptLen)
		for i := range ids {
			ids[i] = int32((i*131 + 7) % 150000)
		}
		req := Request{PromptIDs: ids, MaxTokens: 6, IgnoreStop: true}
		if speculative { // wrong guesses of 4: every verify rolls back and replays
			req.Drafter, req.DraftLength = alwaysWrong{}, 4
		}
		_, _, done := collect(t, e.Generate(context.Background(), req))
		if speculative && done.Stats.Verifies == 0 {
			t.Fatalf("a speculative turn of %d tokens ran no verify", len(ids))
		}
	}
	turn(600, true) // a full 512-token chunk and a partial one, then verifies
	turn(600, false)
	buffers, bytes := e.scratch.Allocations()
	for i := range 13 {
		turn(610+79*i, i%2 == 0) // 610 to 1558 tokens: 1 to 3 full chunks, 13 remainders
	}
	if b, n := e.scratch.Allocations(); b != buffers || n != bytes {
		t.Errorf("scratch grew from %d buffers (%d bytes) to %d (%d bytes) over 13 longer turns", buffers, bytes, b, n)
	}
	t.Logf("scratch: %d buffers, %.1f MB", buffers, float64(bytes)/1e6)
}

// TestDecodeScratchStaysPut: a decode step takes the same scratch buffers
// after a prompt, a verify and a longer prompt ran in between, so a CUDA graph
// of the step replays unchanged; and no step takes a name it leaves unused on
// its path (the prompt path's tables are not taken by a decode step).
func TestDecodeScratchStaysPut(t *testing.T) {
	e, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 2048, PrefillChunk: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	step := func(n int) map[string]backend.Buffer {
		tokens := make([]int32, n)
		for i := range tokens {
			tokens[i] = int32(100 + i*7)
		}
		bufs := map[string]backend.Buffer{}
		err := e.loop.do(func() error {
			defer e.scratch.Reset()
			logits, err := e.model.Forward(e.ctx, e.cache, tokens, false)
			if err != nil {
				return err
			}
			if _, err := ops.ReadF32(e.ctx, logits); err != nil {
				return err
			}
			for _, name := range e.scratch.Taken() {
				bufs[name] = e.scratch.Buffer(name)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return bufs
	}
	step(512) // the largest chunk: the layout's high-water mark
	first := step(1)
	step(5) // a verify's few tokens
	step(300)
	again := step(1)
	if len(first) == 0 || !maps.Equal(first, again) {
		t.Errorf("a decode step's scratch moved: %d names before, %d after, equal %v", len(first), len(again), maps.Equal(first, again))
	}
	for _, prompt := range []string{"moe.perm", "moe.tiles", "gdn.prep", "gdn.decay", "forward.prompt_partial"} {
		if _, ok := first[prompt]; ok {
			t.Errorf("a decode step took %q, a prompt's table", prompt)
		}
	}
}
