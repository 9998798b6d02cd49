package ui

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"bagel/engine"
	"bagel/store"
)

// TestStreamingBenchmark streams a synthetic reply of BAGEL_UI_BENCH tokens
// (20,000 if set to 1) at 1,000 tokens a second into the window on Fyne's
// test driver and measures what a user would: how long after the last token
// it is on screen, and how long after Esc the stop shows. The figures are
// logged for docs/benchmarks.md, never asserted; the test checks that the
// whole reply arrives and that Esc stops a stream. Off unless BAGEL_UI_BENCH
// is set (it takes two streams' time). BAGEL_UI_BENCH_ONE_PARAGRAPH=1 makes the
// reply one paragraph of sentences, the case a long paragraph made slow.
func TestStreamingBenchmark(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("BAGEL_UI_BENCH"))
	if n <= 0 {
		t.Skip("set BAGEL_UI_BENCH=1 (or a token count) to run the streaming benchmark")
	}
	if n == 1 {
		n = 20_000
	}
	const rate = time.Millisecond // 1,000 tokens a second
	s := testSettings()
	s.MaxTokens = 0
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")

	var lastSent atomic.Int64 // unix nanoseconds of the last token handed to the app
	onePara := os.Getenv("BAGEL_UI_BENCH_ONE_PARAGRAPH") != ""
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
	lag := time.Since(time.Unix(0, lastSent.Load()))
	h.waitFor("the reply to end", func() bool { return h.a.gen == nil })
	if m := h.a.msgs[len(h.a.msgs)-1]; !strings.HasSuffix(strings.TrimSpace(m.Content), last) {
		t.Fatalf("the saved reply ends with %q", m.Content[max(0, len(m.Content)-40):])
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
		return h.a.gen == nil && h.lastView() != nil && h.lastView().status.Text != ""
	})
	escLag := time.Since(esc)
	if m := h.a.msgs[len(h.a.msgs)-1]; m.Status != store.StatusStopped {
		t.Errorf("the stopped reply is %q", m.Status)
	}
	t.Logf("streaming benchmark: %d tokens at %v each: last token on screen %v after it was sent; Esc to the stop shown %v",
		n, rate, lag.Round(time.Millisecond), escLag.Round(time.Millisecond))
}
