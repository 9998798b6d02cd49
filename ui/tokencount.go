package ui

import (
	"fmt"
	"math"
	"time"

	"github.com/dustin/go-humanize"

	"bagel/engine"
	"bagel/store"
)

// The composer's token count: what the chat and the draft take of the
// model's context, and what is left for the reply — counted by the model's
// own template and tokenizer (engine.PromptTokens) off the UI thread, a
// moment after typing pauses. A remote model's tokenizer is the server's:
// no count then.

// countDelay is how long typing must pause before the draft is counted.
const countDelay = 300 * time.Millisecond

// countTokensSoon counts the chat and the draft once typing pauses.
func (a *App) countTokensSoon() {
	if a.countTimer != nil {
		a.countTimer.Stop()
	}
	eng := a.eng
	if eng == nil || a.remote != nil {
		a.composer.tokens.SetText("")
		return
	}
	if a.shownGen() != nil {
		return // counted when the reply ends (finishGeneration): the UI thread has enough to do meanwhile
	}
	var conv store.Conversation
	if a.conv != nil {
		conv = *a.conv
	}
	msgs := history(conv, a.msgs, math.MaxInt64)
	images := append(requestImages(a.msgs, math.MaxInt64), a.composer.attached...)
	if draft := a.composer.entry.Text; draft != "" || len(a.composer.attached) > 0 {
		draftMsg := engine.Message{Role: "user", Content: draft}
		if len(a.composer.attached) > 0 {
			draftMsg.Content = ""
			for range a.composer.attached {
				draftMsg.Parts = append(draftMsg.Parts, engine.Part{Image: true})
			}
			draftMsg.Parts = append(draftMsg.Parts, engine.Part{Text: draft})
		}
		msgs = append(msgs, draftMsg)
	}
	thinking := a.settings.Thinking
	a.countGen++
	gen := a.countGen
	a.countTimer = time.AfterFunc(countDelay, func() {
		text := ""
		if len(msgs) > 0 {
			ids, err := eng.PromptTokens(engine.Request{Messages: msgs, EnableThinking: thinking})
			if err == nil {
				n := len(ids)
				for _, img := range images { // each image's one pad becomes its tokens
					n += a.imageTokens(eng, img) - 1
				}
				text = tokenCountText(n, eng.ContextLength())
			}
		}
		a.do(func() {
			if gen == a.countGen { // a later count supersedes this one
				a.composer.tokens.SetText(text)
			}
		})
	})
}

// tokenCountText says n prompt tokens of a context of ctx.
func tokenCountText(n, ctx int) string {
	if n >= ctx {
		return fmt.Sprintf("%s tokens: over the %s-token context", humanize.Comma(int64(n)), humanize.Comma(int64(ctx)))
	}
	return fmt.Sprintf("%s tokens · %s left", humanize.Comma(int64(n)), humanize.Comma(int64(ctx-n)))
}
