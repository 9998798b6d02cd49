package engine

import (
	"context"
	"slices"
	"testing"

	"bagel/internal/testmodel"
	"bagel/switches"
	"bagel/tokenizer"
)

// TestPromptReuseAcrossTurns plays a chat whose every prompt extends the last
// one (the previous prompt, the reply, a new question), regenerates a reply
// and scores in between: with reuse, each turn prefills only the new tokens,
// and every reply equals the one a fresh cache gives.
func TestPromptReuseAcrossTurns(t *testing.T) {
	e, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	defer switches.Reset(SwitchPromptReuse)
	reply := func(prompt []int32, reuse bool) ([]int32, Stats) {
		t.Helper()
		if err := switches.Set(SwitchPromptReuse, reuse); err != nil {
			t.Fatal(err)
		}
		ids, _, done := collect(t, e.Generate(context.Background(), Request{PromptIDs: prompt, MaxTokens: 6, IgnoreStop: true}))
		return ids, done.Stats
	}
	prompt := []int32{9707, 11, 1246, 525, 3555, 30}
	var prev []int32
	for turn := range 4 {
		if turn > 0 {
			prompt = append(append(slices.Clone(prompt), prev...), int32(100+turn), int32(200+turn))
		}
		// Cold: reuse off resets the cache (and drops the held state).
		cold, _ := reply(prompt, false)
		// Warm: the turn before runs again first, so its state is held.
		if turn > 0 {
			reply(prompt[:len(prompt)-len(prev)-2], true)
		}
		warm, st := reply(prompt, true)
		if !slices.Equal(cold, warm) {
			t.Fatalf("turn %d: reused %d tokens and replied %v; a fresh cache replies %v", turn, st.ReusedPromptTokens, warm, cold)
		}
		if turn > 0 && st.ReusedPromptTokens != len(prompt)-len(prev)-3 {
			t.Errorf("turn %d: reused %d of %d prompt tokens, want %d", turn, st.ReusedPromptTokens, len(prompt), len(prompt)-len(prev)-3)
		}
		prev = warm
	}

	// Regenerate: the same prompt again reuses all but its last token.
	again, st := reply(prompt, true)
	if st.ReusedPromptTokens != len(prompt)-1 || !slices.Equal(again, prev) {
		t.Errorf("regenerate: reused %d of %d, reply %v (was %v)", st.ReusedPromptTokens, len(prompt), again, prev)
	}
	// Another conversation reuses nothing; then, back to the first one (after
	// a score in between, which overwrites the cache), its state is restored.
	if _, st := reply([]int32{5, 6, 7}, true); st.ReusedPromptTokens != 0 {
		t.Errorf("another prompt reused %d tokens", st.ReusedPromptTokens)
	}
	if _, err := e.Score([]int32{1, 2, 3}, ScoreOptions{}); err != nil {
		t.Fatal(err)
	}
	cold, _ := reply(prompt, false)
	back, st := reply(prompt, true)
	if st.ReusedPromptTokens != len(prompt)-1 || !slices.Equal(back, cold) {
		t.Errorf("back to the first chat: reused %d of %d, reply %v (fresh: %v)", st.ReusedPromptTokens, len(prompt), back, cold)
	}
	if n, bytes := e.PromptCache(); n < 2 || bytes <= 0 {
		t.Errorf("%d conversations held (%d bytes), want the two", n, bytes)
	}
}

// TestPromptCacheBudget keeps only what fits: with room for one conversation,
// switching to another evicts the first.
func TestPromptCacheBudget(t *testing.T) {
	e, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 256, PromptCacheBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	a, b := []int32{9707, 11, 1246, 525}, []int32{5, 6, 7, 8}
	for _, p := range [][]int32{a, b} {
		collect(t, e.Generate(context.Background(), Request{PromptIDs: p, MaxTokens: 2}))
	}
	if n, _ := e.PromptCache(); n != 1 {
		t.Errorf("%d conversations held in a 1-byte budget, want the newest alone", n)
	}
	_, _, done := collect(t, e.Generate(context.Background(), Request{PromptIDs: a, MaxTokens: 2}))
	if done.Stats.ReusedPromptTokens != 0 {
		t.Errorf("an evicted conversation reused %d tokens", done.Stats.ReusedPromptTokens)
	}
	off, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 256, PromptCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	collect(t, off.Generate(context.Background(), Request{PromptIDs: a, MaxTokens: 2}))
	if n, _ := off.PromptCache(); n != 0 {
		t.Errorf("a negative budget held %d conversations", n)
	}
}

// TestLongChatHoldsTwoStates: over a chat of many turns the prompt cache
// holds the newest turn's state and the one before (which an edit of the last
// question restores), not one a turn: each turn's state supersedes the
// earlier ones of that chat. Another chat's state stays.
func TestLongChatHoldsTwoStates(t *testing.T) {
	e, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	gen := func(prompt []int32) ([]int32, Stats) {
		t.Helper()
		ids, _, done := collect(t, e.Generate(context.Background(), Request{PromptIDs: prompt, MaxTokens: 3, IgnoreStop: true}))
		return ids, done.Stats
	}
	gen([]int32{5, 6, 7, 8}) // another chat
	prompt := []int32{9707, 11, 1246}
	var before []int32 // the prompt of the turn before the last
	for turn := range 12 {
		reply, _ := gen(prompt)
		if n, _ := e.PromptCache(); n > 3 {
			t.Fatalf("turn %d: %d states held, want this chat's last two and the other chat's", turn, n)
		}
		before = prompt
		prompt = append(append(slices.Clone(prompt), reply...), int32(300+turn), int32(400+turn))
	}
	// The last question edited: the turn before is restored.
	edited := append(slices.Clone(before[:len(before)-2]), 777, 778)
	if _, st := gen(edited); st.ReusedPromptTokens < len(before)-2-8 {
		t.Errorf("an edit of the last question reused %d tokens of %d", st.ReusedPromptTokens, len(edited))
	}
	if _, st := gen([]int32{5, 6, 7, 8}); st.ReusedPromptTokens != 3 {
		t.Errorf("the other chat reused %d tokens, want 3", st.ReusedPromptTokens)
	}
}

// TestNoPromptCacheKeepsNothing: a request with NoPromptCache (the app's
// naming of a chat) leaves the prompt cache as it was, where the same chat
// request keeps its conversation's state.
func TestNoPromptCacheKeepsNothing(t *testing.T) {
	defer switches.Reset(SwitchPromptReuse)
	e, err := Load(testmodel.Dir(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	req := Request{Messages: []tokenizer.Message{{Role: "user", Content: "Name this chat."}}, MaxTokens: 3, NoPromptCache: true}
	collect(t, e.Generate(context.Background(), req))
	if n, bytes := e.PromptCache(); n != 0 || bytes != 0 {
		t.Errorf("after a NoPromptCache request the cache holds %d conversations (%d bytes)", n, bytes)
	}
	req.NoPromptCache = false
	collect(t, e.Generate(context.Background(), req))
	if n, _ := e.PromptCache(); n != 1 {
		t.Errorf("after a chat request the cache holds %d conversations, want 1", n)
	}
}
