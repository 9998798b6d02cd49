package ui

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"bagel/engine"
)

// TestTheModelNamesANewChat: after a new chat's first reply the model is
// asked for a title, which replaces the first words (cleaned of its Markdown,
// label and quotes); a chat the user renamed first keeps its name, and with
// the setting off the first words stay.
func TestTheModelNamesANewChat(t *testing.T) {
	const question = "How do I keep a sourdough starter alive through a long holiday?"
	answers := []string{"Flour, water and time.", "**Title: \"Sourdough starter basics.\"**\nmore"}
	run := func(t *testing.T, manual bool, rename string) string {
		s := testSettings()
		s.ManualTitles = manual
		h := newHarness(t, &s, "", "")
		h.loadModel("tiny-moe")
		var calls atomic.Int32
		h.synthetic = func(ctx context.Context) <-chan engine.Event {
			text := answers[min(int(calls.Add(1))-1, len(answers)-1)]
			out := make(chan engine.Event, 4)
			out <- engine.Event{Kind: engine.EventToken, Text: text, Token: 1}
			out <- engine.Event{Kind: engine.EventDone, Reason: engine.ReasonStop}
			close(out)
			return out
		}
		h.typeAndSend(question)
		if rename != "" {
			h.a.setTitle(h.a.conv.ID, rename)
		}
		h.waitReplyDone()
		if !manual && rename == "" {
			h.waitFor("the model's title", func() bool { return h.a.conversationTitle(h.a.conv.ID) != titleFrom(question) })
		} else {
			for range 20 { // whatever would come, let it come
				h.pump()
				time.Sleep(5 * time.Millisecond)
			}
		}
		want := int32(1) // the reply alone: no title asked of a renamed chat, nor with the setting off
		if !manual && rename == "" {
			want = 2
		}
		if calls.Load() != want {
			t.Errorf("%d requests, want %d", calls.Load(), want)
		}
		return h.a.conversationTitle(h.a.conv.ID)
	}
	if got := run(t, false, ""); got != "Sourdough starter basics" {
		t.Errorf("the model's title: %q", got)
	}
	if got := run(t, false, "Mine"); got != "Mine" {
		t.Errorf("a chat renamed before its title came back: %q", got)
	}
	if got := run(t, true, ""); got != titleFrom(question) {
		t.Errorf("with the setting off: %q", got)
	}
}

// TestTitleJoinsTheChatsBatch: with chats answering together, the request
// for a new chat's title steps in their batch (every token the app read
// came from it), not as a lone request, which would wait for the engine's
// turn and keep new replies out of the batch until it had had it.
func TestTitleJoinsTheChatsBatch(t *testing.T) {
	s := testSettings()
	s.ManualTitles, s.ChatParallel = false, 2
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	if h.a.batch == nil {
		t.Fatal("Replies at once 2 made no batch")
	}
	h.synthetic = func(ctx context.Context) <-chan engine.Event { // the reply ends with a stop (a title is asked after such a one)
		h.mu.Lock()
		h.synthetic = nil // the title's request: the engine's own events
		h.mu.Unlock()
		out := make(chan engine.Event, 2)
		out <- engine.Event{Kind: engine.EventToken, Text: "Sure.", Token: 1}
		out <- engine.Event{Kind: engine.EventDone, Reason: engine.ReasonStop}
		close(out)
		return out
	}
	h.typeAndSend("Name this chat, please.")
	h.waitReplyDone()
	h.waitFor("the reply's and the title's streams", func() bool { return h.ended.Load() >= 2 })
	if got, batched := h.tapped.Load(), h.a.batch.Tokens(); got != batched || got == 0 {
		t.Errorf("the engine gave the app %d tokens, the batch sent %d: the title's request left the batch", got, batched)
	}
}

func TestCleanTitle(t *testing.T) {
	for in, want := range map[string]string{
		"Bagel history":                  "Bagel history",
		"  # \"Boiling bagels.\"  ":      "Boiling bagels",
		"Title: Sesame or poppy?\nextra": "Sesame or poppy?",
		"***":                            "",
		"“Why New York water matters”":   "Why New York water matters",
		string(make([]rune, 0)) + "":     "",
	} {
		if got := cleanTitle(in); got != want {
			t.Errorf("cleanTitle(%q) = %q, want %q", in, got, want)
		}
	}
}
