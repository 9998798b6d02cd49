package engine

import (
	"context"
	"testing"

	"bagel/internal/testmodel"
)

// TestChatGrowthAllocatesNothingNew runs a chat that grows turn after turn, as
// the app re-reads the whole conversation each turn: once a full prefill chunk
// has run, no later turn (longer prompts of every length, their decode steps)
// allocates another scratch buffer.
func TestChatGrowthAllocatesNothingNew(t *testing.T) {
	e, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 2048})
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
	turn(600) // a full 512-token chunk and a partial one
	buffers, bytes := e.scratch.Allocations()
	for i := range 25 {
		turn(610 + 41*i) // every remainder length, up to 1594 tokens
	}
	if b, n := e.scratch.Allocations(); b != buffers || n != bytes {
		t.Errorf("scratch grew from %d buffers (%d bytes) to %d (%d bytes) over 25 longer turns", buffers, bytes, b, n)
	}
	t.Logf("scratch: %d buffers, %.1f MB", buffers, float64(bytes)/1e6)
}
