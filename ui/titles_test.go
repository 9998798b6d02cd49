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
