package cli

import (
	"context"
	"fmt"

	"bagel/engine"
	"bagel/tokenizer"
)

// draftQuestions are the prompts of the drafters' rows: questions a chat model
// answers in prose, the demo model's books among them (it recites the entries
// of the first three and strays on the last two).
var draftQuestions = []string{"What is a kludge?", "What is a bug?", "Define cynic.", "What is a hacker?", "What is marriage?"}

// drafterRow is one way of drafting the questions' greedy replies.
type drafterRow struct {
	name       string
	ngram, mtp bool // the switches speculative-ngram, speculative-mtp
	draft      int  // Request.DraftLength (0: the drafter's default)
	width      int  // Request.TreeWidth (prompt-lookup trees)
}

// drafters records greedy replies to draftQuestions (thinking off, stop tokens
// honoured, up to b.tokens each) plainly and with each drafter: prompt lookup
// in lines and in trees of 2, and the model's MTP head where it has one, one
// and two guesses a step. Each row sums the replies: tokens, the decode rate
// over all of them, guesses proposed and kept. It returns false, recording
// nothing, for a model folder without a tokenizer.
func (b *bench) drafters() (bool, error) {
	var prompts [][]int32
	for _, q := range draftQuestions {
		ids, err := b.e.PromptTokens(engine.Request{Messages: []tokenizer.Message{{Role: "user", Content: q}}})
		if err != nil {
			return false, nil // no tokenizer or chat template
		}
		prompts = append(prompts, ids)
	}
	rows := []drafterRow{
		{name: "plain"},
		{name: "prompt lookup", ngram: true},
		{name: "prompt lookup, trees of 2", ngram: true, width: 2},
	}
	if b.e.MTPStatus() == "" {
		rows = append(rows, drafterRow{name: "MTP head, 1 guess", mtp: true, draft: 1}, drafterRow{name: "MTP head, 2 guesses", mtp: true, draft: 2})
	} else {
		b.progress("drafters: no MTP rows: " + b.e.MTPStatus())
	}
	wasNgram, wasMTP := engine.SwitchOn(engine.SwitchSpeculative), engine.SwitchOn(engine.SwitchSpeculativeMTP)
	defer engine.SetSwitch(engine.SwitchSpeculative, wasNgram)
	defer engine.SetSwitch(engine.SwitchSpeculativeMTP, wasMTP)
	for _, r := range rows {
		if err := engine.SetSwitch(engine.SwitchSpeculative, r.ngram); err != nil {
			return false, err
		}
		if err := engine.SetSwitch(engine.SwitchSpeculativeMTP, r.mtp); err != nil {
			return false, err
		}
		var sum engine.Stats
		var seconds float64
		for i, ids := range prompts {
			b.progress(fmt.Sprintf("drafters: %s, question %d/%d", r.name, i+1, len(prompts)))
			st, err := b.reply(engine.Request{PromptIDs: ids, MaxTokens: b.tokens, DraftLength: r.draft, TreeWidth: r.width})
			if err != nil {
				return false, fmt.Errorf("drafters, %s: %w", r.name, err)
			}
			sum.GeneratedTokens += st.GeneratedTokens
			sum.DraftProposed += st.DraftProposed
			sum.DraftAccepted += st.DraftAccepted
			sum.Verifies += st.Verifies
			sum.PromptTokens += st.PromptTokens
			if st.DecodeTokensPerSec > 0 {
				seconds += float64(st.GeneratedTokens) / st.DecodeTokensPerSec
			}
		}
		if seconds > 0 {
			sum.DecodeTokensPerSec = float64(sum.GeneratedTokens) / seconds
		}
		name := "decode greedy, questions, " + r.name
		if sum.DraftProposed > 0 {
			name += fmt.Sprintf(" (%d/%d accepted)", sum.DraftAccepted, sum.DraftProposed)
		}
		b.add(name, fmt.Sprintf("%s=%s %s=%s", engine.SwitchSpeculative, onOff(r.ngram), engine.SwitchSpeculativeMTP, onOff(r.mtp)), sum)
	}
	return true, nil
}

// reply runs req to its end (stop tokens honoured) and returns its stats.
func (b *bench) reply(req engine.Request) (engine.Stats, error) {
	var done engine.Event
	for ev := range b.e.Generate(context.Background(), req) {
		switch ev.Kind {
		case engine.EventDone:
			done = ev
		case engine.EventError:
			return engine.Stats{}, ev.Err
		}
	}
	return done.Stats, nil
}
