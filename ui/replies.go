package ui

import (
	"fmt"

	"bagel/engine"
)

// Replies being written (generation, generate.go), by chat. With Settings ›
// Replies at once at 1 (the default) one reply is written at a time: a
// question in another chat waits for it to end. Above 1 the chats' replies,
// and the Local server's requests, decode together through one
// engine.Parallel (batch), each in a cache of its own: a second chat
// answers while the first still does.

// shownGen is the reply being written in the chat on screen, nil when none.
func (a *App) shownGen() *generation {
	if a.conv == nil {
		return nil
	}
	return a.gens[a.conv.ID]
}

// busyElsewhere is a reply being written in another chat that the chat on
// screen must wait for (one reply at a time), nil when it need not.
func (a *App) busyElsewhere() *generation {
	if a.batch != nil {
		return nil
	}
	for id, g := range a.gens {
		if a.conv == nil || id != a.conv.ID {
			return g
		}
	}
	return nil
}

// anyGen is one of the replies being written, nil when none.
func (a *App) anyGen() *generation {
	for _, g := range a.gens {
		return g
	}
	return nil
}

// onPanel reports whether g's figures are the performance panel's: the
// chat on screen's reply, or, when that chat has none, any reply.
func (a *App) onPanel(g *generation) bool {
	shown := a.shownGen()
	return shown == g || shown == nil
}

// cancelReplies cancels every reply being written (their stream goroutines
// save what they wrote) and returns them, to wait for.
func (a *App) cancelReplies() []*generation {
	var out []*generation
	for _, g := range a.gens {
		g.cancel()
		out = append(out, g)
	}
	return out
}

// replyGenerator is what writes the chats' replies: the batch when replies
// decode together, else the model (or the remote one).
func (a *App) replyGenerator() (generator, string, int) {
	gen, backend, ctxLen := a.generator()
	if a.batch != nil && a.remote == nil {
		return a.batch, backend, a.batch.ContextLength()
	}
	return gen, backend, ctxLen
}

var _ generator = (*engine.Parallel)(nil)

// maxChatParallel is the most chats Settings lets answer at once.
const maxChatParallel = 4

// setupBatch makes the batch that Settings › Replies at once asks for, for
// the loaded model (its limit also covers the Local server's requests at
// once, so that both decode in one batch), or none. A batch whose caches do
// not fit is refused with the figures, and replies go one at a time.
func (a *App) setupBatch() {
	a.batch = nil
	n := a.settings.ChatParallel
	if n < 2 || a.eng == nil {
		return
	}
	p, err := a.eng.Parallel(min(engine.MaxBatch, max(n, a.settings.ServerParallel)), 0)
	if err != nil {
		a.showError("Chats cannot answer at once", fmt.Errorf("%d replies at once: %w; they answer one at a time", n, err))
		return
	}
	a.batch = p
}

// chatParallelChoices are Settings › Replies at once's values.
var chatParallelChoices = []string{"1", "2", "3", "4"}

// stoppable is the reply the composer's Stop (and Esc) ends: the chat on
// screen's, else, one reply at a time, the one being written elsewhere,
// which this chat waits for.
func (a *App) stoppable() *generation {
	if g := a.shownGen(); g != nil {
		return g
	}
	return a.busyElsewhere()
}

// othersAnswering is the panel's note while several replies answer at
// once: how many chats, and how many of the Local server's requests where
// they step in the chats' batch; how many of the batch's replies wait for a
// place; and their decode rate together ("" for one).
func (a *App) othersAnswering() string {
	chats, requests := len(a.gens), 0
	shared := a.batch != nil && a.server.srv != nil && a.server.batch == a.batch
	if shared {
		requests = a.server.running
	}
	if chats+requests < 2 {
		return ""
	}
	total := 0.0
	for _, g := range a.gens {
		total += g.rate
	}
	if requests > 0 {
		total = max(total, a.server.rate) // the server counts every token of the batch
	}
	who := fmt.Sprintf("%d chats answering", chats)
	if requests > 0 {
		who = fmt.Sprintf("%s and %s answering", plural(chats, "chat"), plural(requests, "Local server request"))
	}
	waiting := ""
	if a.batch != nil {
		if _, w := a.batch.Replies(); w > 0 {
			waiting = fmt.Sprintf(" (%d waiting for a place)", w)
		}
	}
	return fmt.Sprintf(" · %s%s, %.0f tok/s together", who, waiting, total)
}

// plural is n and noun, with an s past one: "1 chat", "2 chats".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
