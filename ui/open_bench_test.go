package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"bagel/store"

	"fyne.io/fyne/v2"
)

// longChatText is n words of English-like Markdown a reply might hold:
// paragraphs of about 60 words with bold, italic and inline code, a bullet
// list and a fenced code block now and then.
func longChatText(n, seed int) string {
	words := strings.Fields("the model reads each weight once for every reply and the step runs on the device while " +
		"the host waits for its token a cache holds the keys and values of every layer so that a long " +
		"conversation does not read its prompt again when a question comes back to an earlier answer")
	var b strings.Builder
	for i := range n {
		w := words[(i*7+seed)%len(words)]
		switch i % 97 {
		case 13:
			w = "**" + w + "**"
		case 41:
			w = "*" + w + "*"
		case 71:
			w = "`" + w + "()`"
		}
		b.WriteString(w)
		switch {
		case i%300 == 299:
			b.WriteString("\n\n- first point of the list\n- a second, *longer* point\n- the third\n\n```go\nfunc step(x int) int {\n\treturn x + 1\n}\n```\n\n")
		case i%60 == 59:
			b.WriteString(".\n\n")
		default:
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// BenchmarkOpenLongChat opens a chat of five questions and replies, about
// 2,000 tokens of English Markdown in all, in a window of 1100×800 on Fyne's
// test driver: the chat shown and laid out, after another chat was on screen
// and drawn (ms-per-open: the wall time, on the test goroutine that does
// the work).
// Run it with
//
//	go test ./ui -run '^$' -bench OpenLongChat -benchtime 5x
func BenchmarkOpenLongChat(b *testing.B) {
	b.Run("english", func(b *testing.B) { benchOpen(b, longChatText) })
	b.Run("random", func(b *testing.B) { benchOpen(b, randomChatText) })
}

// randomChatText is n "words" of random letters, digits and punctuation
// (what a model that speaks noise writes): long runs without spaces.
func randomChatText(n, seed int) string {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_*`#-.,;:!?()[]{}<>/|"
	var b strings.Builder
	x := uint32(seed*2654435761 + 1)
	for range n {
		for range 3 + int(x%9) {
			x = x*1664525 + 1013904223
			b.WriteByte(chars[x>>24%uint32(len(chars))])
		}
		x = x*1664525 + 1013904223
		if x%5 != 0 { // some words run into the next
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// longChat stores a chat of n questions, each answered by text(290, i)
// (about 400 tokens), and returns it and its messages.
func longChat(t testing.TB, h *harness, n int, text func(n, seed int) string) (store.Conversation, []store.Message) {
	t.Helper()
	conv, err := h.a.store.CreateConversation("long", "")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []store.Message
	for i := range n {
		msgs = append(msgs, store.Message{Role: store.RoleUser, Content: fmt.Sprintf("Question %d: how does the step read its weights?", i)},
			store.Message{Role: store.RoleAssistant, Content: text(290, i), Status: store.StatusDone})
	}
	added, err := h.a.store.Replace(conv.ID, 0, msgs...)
	if err != nil {
		t.Fatal(err)
	}
	return conv, added
}

func benchOpen(b *testing.B, text func(n, seed int) string) {
	s := testSettings()
	h := newHarness(b, &s, "", "")
	h.a.win.Resize(fyne.NewSize(1100, 800))
	long, _ := longChat(b, h, 5, text)
	other, err := h.a.store.CreateConversation("other", "")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := h.a.store.Replace(other.ID, 0, store.Message{Role: store.RoleUser, Content: "Hi"}); err != nil {
		b.Fatal(err)
	}
	var total, drawn time.Duration
	for b.Loop() {
		h.a.selectConversation(other.ID)
		h.pump()
		start := time.Now()
		h.a.selectConversation(long.ID)
		h.pump()
		shown := time.Now()
		h.a.win.Canvas().Capture() // laid out and drawn, as a screen would show it
		total += time.Since(start)
		drawn += time.Since(shown)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-per-open")
	b.ReportMetric(float64(drawn.Milliseconds())/float64(b.N), "ms-drawing")
}
