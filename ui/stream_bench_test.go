package ui

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"bagel/engine"
	"bagel/store"
)

// BenchmarkStreaming streams a synthetic reply of 20,000 tokens at 1,000
// tokens a second into the window on Fyne's test driver and measures what a
// user would: how long after the last token it is on screen (ms-last-token),
// and how long after Esc the stop shows (ms-esc-to-stop), for docs/benchmarks.md.
// It also checks that the whole reply arrives and that Esc stops a stream.
// "paragraphs" replies in paragraphs of 60 words; "one-paragraph" in one
// paragraph of sentences, the case a long paragraph made slow. Each takes two
// streams' time (about 40 s); run it with
//
//	go test ./ui -run '^$' -bench Streaming -benchtime 1x
//
// (-bench Streaming/one-paragraph for that case alone).
func BenchmarkStreaming(b *testing.B) {
	for _, onePara := range []bool{false, true} {
		name := "paragraphs"
		if onePara {
			name = "one-paragraph"
		}
		b.Run(name, func(b *testing.B) {
			var lag, escLag time.Duration
			for b.Loop() {
				l, e := streamTwice(b, 20_000, onePara)
				lag, escLag = lag+l, escLag+e
			}
			b.ReportMetric(float64(lag.Milliseconds())/float64(b.N), "ms-last-token")
			b.ReportMetric(float64(escLag.Milliseconds())/float64(b.N), "ms-esc-to-stop")
		})
	}
}

// streamTwice streams n tokens to the end, then a second stream stopped with
// Esc half-way, and returns the last token's lag and Esc's.
func streamTwice(b *testing.B, n int, onePara bool) (lag, escLag time.Duration) {
	const rate = time.Millisecond // 1,000 tokens a second
	s := testSettings()
	s.MaxTokens = 0
	h := newHarness(b, &s, "", "")
	h.loadModel("tiny-moe")

	var lastSent atomic.Int64    // unix nanoseconds of the last token handed to the app
	word := func(i int) string { // paragraphs of 60 words, as replies come
		switch {
		case onePara && i%12 == 11: // or one paragraph of 12-word sentences
			return fmt.Sprintf("w%d. ", i)
		case !onePara && i%60 == 59:
			return fmt.Sprintf("w%d\n\n", i)
		}
		return fmt.Sprintf("w%d ", i)
	}
	h.synthetic = func(ctx context.Context) <-chan engine.Event {
		out := make(chan engine.Event, 16)
		go func() {
			defer close(out)
			start := time.Now()
			for i := range n {
				time.Sleep(time.Until(start.Add(time.Duration(i) * rate)))
				select {
				case <-ctx.Done():
					out <- engine.Event{Kind: engine.EventDone, Reason: engine.ReasonCancelled}
					return
				case out <- engine.Event{Kind: engine.EventToken, Text: word(i), Token: 1}:
					lastSent.Store(time.Now().UnixNano())
				}
			}
			out <- engine.Event{Kind: engine.EventDone, Reason: engine.ReasonLength}
		}()
		return out
	}

	// 1. The whole stream: the lag of its last token.
	h.typeAndSend("Stream, please.")
	last := strings.TrimSpace(word(n - 1))
	shown := func() bool {
		v := h.lastView()
		return v != nil && strings.HasSuffix(strings.TrimSpace(v.renderedContent), last)
	}
	h.waitFor("the last token on screen", shown)
	lag = time.Since(time.Unix(0, lastSent.Load()))
	h.waitFor("the reply to end", func() bool { return h.a.anyGen() == nil })
	if m := h.a.msgs[len(h.a.msgs)-1]; !strings.HasSuffix(strings.TrimSpace(m.Content), last) {
		b.Fatalf("the saved reply ends with %q", m.Content[max(0, len(m.Content)-40):])
	}

	// 2. Esc half-way through a second stream.
	h.typeAndSend("Again.")
	h.waitFor("half the stream", func() bool {
		v := h.lastView()
		return v != nil && strings.Count(v.renderedContent, "w") >= n/2
	})
	esc := time.Now()
	h.a.stop()
	h.waitFor("the stop on screen", func() bool {
		return h.a.anyGen() == nil && h.lastView() != nil && h.lastView().status.Text != ""
	})
	escLag = time.Since(esc)
	if m := h.a.msgs[len(h.a.msgs)-1]; m.Status != store.StatusStopped {
		b.Errorf("the stopped reply is %q", m.Status)
	}
	return lag, escLag
}
