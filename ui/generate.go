package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"bagel/engine"
	"bagel/store"
)

// Cadences of a streaming reply. The text is re-rendered at most every
// renderEvery (Markdown parsing per token would swamp the UI thread on a fast
// GPU); the panel at least four times a second; the database every saveEvery,
// which is what a crash can lose.
const (
	renderEvery = 50 * time.Millisecond
	panelEvery  = 200 * time.Millisecond
	saveEvery   = time.Second
)

// generation is one reply being generated. The stream goroutine owns the text;
// the UI sees copies posted through App.do.
type generation struct {
	convID int64
	cancel context.CancelFunc
	done   chan struct{} // closed after the reply's final save and post
	latest store.Message // the reply as last shown (UI thread)
	// stopping: Stop was pressed; the reply is being wrapped up (UI thread).
	stopping bool
	// rate is its decode rate as last posted (UI thread): the panel sums
	// the replies' when several are written at once.
	rate float64
}

// startGeneration asks the engine for a reply to msgs, saved into reply.
func (a *App) startGeneration(conv store.Conversation, msgs []engine.Message, images []store.Image, reply store.Message) {
	ctx, cancel := context.WithCancel(context.Background())
	g := &generation{convID: conv.ID, cancel: cancel, done: make(chan struct{}), latest: reply}
	if a.gens == nil {
		a.gens = map[int64]*generation{}
	}
	a.gens[conv.ID] = g
	a.composer.refresh()
	req := engine.Request{
		Messages:       msgs,
		EnableThinking: a.settings.Thinking,
		MaxTokens:      a.settings.MaxTokens,
		Sampling:       a.settings.sampling(),
		DraftLength:    a.settings.DraftLength,
		TreeWidth:      a.settings.DraftTreeWidth,
		PrefillChunk:   a.settings.PrefillChunk,
	}
	gen, backend, ctxLen := a.replyGenerator()
	var mem engine.Memory
	if a.eng != nil {
		mem = a.eng.Memory()
	}
	events := a.generateWithImages(ctx, gen, req, images)
	if a.tapEvents != nil {
		events = a.tapEvents(ctx, events)
	}
	phase := "reading the prompt…"
	if a.server.running > 0 { // the engine takes one generation at a time
		phase = "waiting for a Local server request to finish…"
	}
	a.perf.show(perfView{Phase: phase, Stats: engine.Stats{Backend: backend, ContextLength: ctxLen}, Memory: mem})
	eng := a.eng
	// After the reply, what the prompt cache holds now (PromptCache is safe
	// off the UI thread); a remote engine's is the server's own.
	promptCache := func() engine.Memory {
		m := mem
		if eng != nil {
			m.PromptCacheConversations, m.PromptCache = eng.PromptCache()
		}
		return m
	}
	a.goSafe("generating a reply", func() { a.stream(g, events, reply, mem, promptCache) })
}

// stream reads the engine's events, keeps the reply's text, and posts
// snapshots to the screen and the database at their cadences. It always ends
// with one final save and post, however the generation ended.
func (a *App) stream(g *generation, events <-chan engine.Event, reply store.Message, mem engine.Memory, after func() engine.Memory) {
	defer close(g.done)
	var content, reasoning strings.Builder
	var st engine.Stats
	var meter rateMeter
	var genErr, saveErr error
	reason := ""
	start := time.Now()
	tokens := 0
	dirty, unsaved := false, false
	var rendering, panelling atomic.Bool // a post waits for the UI thread
	lastPanel, lastSave := time.Time{}, time.Now()
	ticker := time.NewTicker(renderEvery)
	defer ticker.Stop()

	snapshot := func(status string) store.Message {
		m := reply
		m.Content, m.Reasoning, m.Status = content.String(), reasoning.String(), status
		return m
	}
	view := func(now time.Time, phase string) perfView {
		v := perfView{Phase: phase, Stats: st, DecodeNow: meter.rate(now), Elapsed: now.Sub(start), Memory: mem}
		// Between the engine's stats events the count runs ahead of them.
		v.Stats.GeneratedTokens = max(v.Stats.GeneratedTokens, tokens)
		return v
	}

loop:
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				break loop
			}
			switch ev.Kind {
			case engine.EventToken:
				if ev.Token >= 0 {
					tokens++
					meter.add(time.Now())
				}
				if ev.Thinking {
					reasoning.WriteString(ev.Text)
				} else {
					content.WriteString(ev.Text)
				}
				dirty, unsaved = true, true
			case engine.EventStats:
				st = ev.Stats
			case engine.EventDone:
				st, reason = ev.Stats, ev.Reason
			case engine.EventError:
				genErr = ev.Err
			}
		case now := <-ticker.C:
			// At most one render and one panel update wait for the UI thread:
			// when it is slower than the stream (a long reply's Markdown), the
			// next tick posts the text as it is by then, instead of queueing a
			// render per tick that the screen works off long after the engine
			// has stopped.
			if dirty && !rendering.Load() {
				m := snapshot(store.StatusGenerating)
				rendering.Store(true)
				a.do(func() {
					defer rendering.Store(false)
					a.showReply(g, m)
				})
				dirty = false
			}
			if now.Sub(lastPanel) >= panelEvery && !panelling.Load() {
				phase := readingPhase(st)
				if tokens > 0 {
					phase = "writing the answer…"
					if content.Len() == 0 && reasoning.Len() > 0 {
						phase = "thinking…"
					}
				}
				v, decoding := view(now, phase), tokens > 1
				panelling.Store(true)
				a.do(func() {
					defer panelling.Store(false)
					g.rate = v.DecodeNow
					if !a.onPanel(g) {
						return // the panel follows the chat on screen
					}
					v.Phase += a.othersAnswering()
					a.perf.show(v)
					if !a.loading && a.ready() {
						a.bar.showActivity(v)
					}
					if decoding {
						a.perf.sample(now, v.DecodeNow)
					}
				})
				lastPanel = now
			}
			if unsaved && now.Sub(lastSave) >= saveEvery {
				if err := a.store.UpdateMessage(snapshot(store.StatusGenerating)); err != nil && saveErr == nil {
					saveErr = err
				}
				unsaved, lastSave = false, now
			}
		}
	}

	final := snapshot(finalStatus(reason, genErr))
	if genErr != nil {
		final.Summary = genErr.Error()
	} else {
		final.Summary = summaryLine(st, mem)
	}
	if err := a.store.UpdateMessage(final); err != nil && !errors.Is(err, store.ErrNotFound) && saveErr == nil {
		saveErr = err // ErrNotFound: the chat was deleted while it was answered
	}
	v := view(time.Now(), finishedPhase(reason, genErr))
	v.DecodeNow, v.Finished = st.DecodeTokensPerSec, true
	v.Memory = after()
	a.do(func() { a.finishGeneration(g, final, v, genErr, saveErr) })
}

// finalStatus maps how a generation ended to the reply's status.
func finalStatus(reason string, err error) string {
	switch {
	case err != nil:
		return store.StatusError
	case reason == engine.ReasonStop:
		return store.StatusDone
	case reason == engine.ReasonLength:
		return store.StatusLength
	case reason == engine.ReasonContext:
		return store.StatusContext
	}
	return store.StatusStopped
}

func finishedPhase(reason string, err error) string {
	switch {
	case err != nil:
		return "failed"
	case reason == engine.ReasonStop:
		return "finished"
	case reason == engine.ReasonLength:
		return "finished: max tokens reached"
	case reason == engine.ReasonContext:
		return "finished: the context is full"
	}
	return "stopped"
}

// showReply puts a streaming snapshot on screen if its chat is the one shown.
func (a *App) showReply(g *generation, m store.Message) {
	if a.gens[g.convID] != g {
		return // a late post from a generation already finished
	}
	g.latest = m
	if a.conv == nil || a.conv.ID != g.convID {
		return
	}
	for i := range a.msgs {
		if a.msgs[i].ID == m.ID {
			a.msgs[i] = m
		}
	}
	a.chat.updateMessage(m)
}

// finishGeneration shows the final reply and its summary, and what went wrong.
func (a *App) finishGeneration(g *generation, final store.Message, v perfView, genErr, saveErr error) {
	shown := a.onPanel(g)
	if a.gens[g.convID] == g {
		delete(a.gens, g.convID)
	}
	if a.store == nil {
		return // the window has closed
	}
	if shown {
		a.perf.show(v)
		if !a.loading && a.ready() {
			a.bar.showFinished(v)
		}
	}
	if a.conv != nil && a.conv.ID == g.convID {
		for i := range a.msgs {
			if a.msgs[i].ID == final.ID {
				a.msgs[i] = final
			}
		}
		a.chat.show() // the finished reply gets its Regenerate button
	}
	a.chats.refresh()
	a.composer.refresh()
	a.countTokensSoon()
	if genErr == nil && final.Status == store.StatusDone {
		a.nameChatSoon(g.convID)
	}
	if genErr != nil {
		a.showError("The model failed while answering", genErr)
	}
	if saveErr != nil {
		a.showError("The reply could not be saved", fmt.Errorf("%w (it stays on screen until the chat is closed)", saveErr))
	}
}

// rateMeter measures decode tok/s over the last second from token arrival times.
type rateMeter struct {
	times []time.Time // arrivals within the window, oldest first
}

const rateWindow = time.Second

func (m *rateMeter) add(t time.Time) {
	m.times = append(m.times, t)
	m.trim(t)
}

func (m *rateMeter) trim(now time.Time) {
	cut := 0
	for cut < len(m.times) && now.Sub(m.times[cut]) > rateWindow {
		cut++
	}
	m.times = m.times[cut:]
}

// rate is the tokens per second over the window ending at now; 0 with fewer
// than two tokens in it (a stalled or finished generation reads 0).
func (m *rateMeter) rate(now time.Time) float64 {
	m.trim(now)
	if len(m.times) < 2 {
		return 0
	}
	span := now.Sub(m.times[0])
	if span <= 0 {
		return 0
	}
	return float64(len(m.times)-1) / span.Seconds()
}

// readingPhase is the panel's phase before the first token: how far the
// engine has read a long prompt, which it reports after each chunk.
func readingPhase(st engine.Stats) string {
	if st.PromptTokens > 0 && st.PrefilledTokens > 0 && st.PrefilledTokens < st.PromptTokens {
		return fmt.Sprintf("reading the prompt… %d%%", 100*st.PrefilledTokens/st.PromptTokens)
	}
	return "reading the prompt…"
}
