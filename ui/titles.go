package ui

import (
	"context"
	"strings"
	"unicode/utf8"

	"bagel/engine"
	"bagel/store"
)

// A new chat is named after its first message's first words at once
// (titleFrom); after its first reply the loaded model is asked for a short
// title, which replaces them unless the user renamed the chat meanwhile. It
// is off with Settings.ManualTitles, for the demo model (which recites its
// books, not titles), and while no model is loaded.

// titlePrompt asks for the title; the chat's first exchange follows it.
const titlePrompt = "Give this conversation a short title of at most six words. Reply with the title only, no quotes.\n\n"

// titleMaxRunes bounds a model's title (it was asked for six words).
const titleMaxRunes = 60

// nameChatSoon asks the model for chat id's title when the reply just
// finished was its first and its title is still the one its first words gave.
func (a *App) nameChatSoon(id int64) {
	if a.settings.ManualTitles || !a.ready() || (a.remote == nil && isDemo(a.modelDir)) {
		return
	}
	msgs, err := a.store.Messages(id)
	if err != nil || len(msgs) != 2 || msgs[0].Role != store.RoleUser || msgs[1].Role != store.RoleAssistant {
		return
	}
	auto := titleFrom(msgs[0].Content)
	if a.conversationTitle(id) != auto {
		return // renamed by the user
	}
	reply := displayText(msgs[1])
	if r := []rune(reply); len(r) > 1500 {
		reply = string(r[:1500]) + "…"
	}
	req := engine.Request{
		Messages:      []engine.Message{{Role: "user", Content: titlePrompt + "User: " + msgs[0].Content + "\n\nAssistant: " + reply}},
		MaxTokens:     24,
		NoPromptCache: true,
	}
	// Through the chats' batch when they answer together: a lone request
	// would wait for the engine's turn, and the batch then lets no new
	// reply in until it has had it (engine.Parallel).
	gen, _, _ := a.replyGenerator()
	ctx, cancel := context.WithCancel(context.Background())
	events := gen.Generate(ctx, req)
	if a.tapEvents != nil {
		events = a.tapEvents(ctx, events)
	}
	a.goSafe("naming a chat", func() {
		defer cancel()
		var b strings.Builder
		for ev := range events {
			if ev.Kind == engine.EventToken && !ev.Thinking {
				b.WriteString(ev.Text)
			}
		}
		title := cleanTitle(b.String())
		if title == "" {
			return
		}
		a.do(func() {
			if a.store != nil && a.conversationTitle(id) == auto {
				a.setTitle(id, title)
			}
		})
	})
}

// cleanTitle is a model's answer made a title: its first line, without
// Markdown marks, quotes or a "Title:" label, at most titleMaxRunes; "" when
// nothing is left.
func cleanTitle(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(strings.TrimLeft(s, "#*-> "))
	if rest, ok := strings.CutPrefix(strings.ToLower(s), "title:"); ok {
		s = strings.TrimSpace(s[len(s)-len(rest):])
	}
	s = strings.Trim(s, "\"'“”‘’*_` ")
	s = strings.TrimRight(s, ".")
	if utf8.RuneCountInString(s) > titleMaxRunes {
		s = strings.TrimSpace(string([]rune(s)[:titleMaxRunes])) + "…"
	}
	return s
}
