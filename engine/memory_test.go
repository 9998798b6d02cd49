package engine

import (
	"context"
	"testing"

	"bagel/internal/testmodel"
)

// TestChatGrowthAllocatesNothingNew runs a chat that grows turn after turn,
// each prompt read whole (no prompt cache, as after an edit early in a chat):
// once a full prefill chunk of 512 tokens has run, no later turn — prompts of
// two and three full chunks and a remainder of 13 different lengths across
// the chunk, their decode steps — allocates another scratch buffer. (The
// engine's default chunk is 2048; 512 keeps the turns short on the CPU.)
func TestChatGrowthAllocatesNothingNew(t *testing.T) {
	e, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 2048, PrefillChunk: 512, PromptCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	turn := func(promptLen int) {
		ids := make([]int32, promptLen)
		for i := range ids {
			ids[i] = int32((i*131 + 7) % 150000)
		}
		collect(t, e.Generate(context.Background(), Request{PromptIDs: ids, MaxTokens: 3}))
	}
	turn(600) // a full 512-token chunk and a partial one (88 tokens)
	buffers, bytes := e.scratch.Allocations()
	for i := range 13 {
		turn(610 + 79*i) // 610 to 1558 tokens: 1 to 3 full chunks, 13 remainders from 22 to 493
	}
	if b, n := e.scratch.Allocations(); b != buffers || n != bytes {
		t.Errorf("scratch grew from %d buffers (%d bytes) to %d (%d bytes) over 13 longer turns", buffers, bytes, b, n)
	}
	t.Logf("scratch: %d buffers, %.1f MB", buffers, float64(bytes)/1e6)
}
