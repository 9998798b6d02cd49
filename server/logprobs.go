package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"bagel/engine"
)

// Log-probabilities: a chat completion's logprobs (true) with top_logprobs
// (0–20), a completion's logprobs (the count of likeliest tokens, 0–20).
// The engine reads the logits every step for such a request (no
// speculation, no pipeline), so it decodes somewhat slower. Each content
// token's entry goes out with the text it made (streamed: in the chunk that
// carries it), the reasoning's are left out as OpenAI's reasoning models do.

// parseLogprobs reads the request's logprobs fields into g.
func parseLogprobs(raw json.RawMessage, top *int, chat bool, g *generation) error {
	bad := func(msg string) error { return &httpError{http.StatusBadRequest, "invalid_logprobs", msg} }
	if len(raw) == 0 || string(raw) == "null" {
		if top != nil && *top > 0 {
			return bad("top_logprobs needs logprobs: true")
		}
		return nil
	}
	if chat {
		var on bool
		if json.Unmarshal(raw, &on) != nil {
			return bad("logprobs must be true or false")
		}
		g.req.Logprobs = on
		if top != nil {
			if *top < 0 || *top > engine.MaxTopLogprobs {
				return bad(fmt.Sprintf("top_logprobs = %d: want 0 to %d", *top, engine.MaxTopLogprobs))
			}
			if *top > 0 && !on {
				return bad("top_logprobs needs logprobs: true")
			}
			g.req.TopLogprobs = *top
		}
		return nil
	}
	var n int
	if json.Unmarshal(raw, &n) != nil || n < 0 || n > engine.MaxTopLogprobs {
		return bad(fmt.Sprintf("logprobs must be a whole number from 0 to %d (the likeliest tokens listed)", engine.MaxTopLogprobs))
	}
	g.req.Logprobs, g.req.TopLogprobs = true, n
	return nil
}

// tokenEntry is one token's log-probability as OpenAI writes it.
type tokenEntry struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// contentEntry is a chat token's entry with its position's likeliest.
type contentEntry struct {
	tokenEntry
	TopLogprobs []tokenEntry `json:"top_logprobs"`
}

func entryOf(t engine.TokenLogprob) tokenEntry {
	b := make([]int, len(t.Bytes))
	for i, c := range t.Bytes {
		b[i] = int(c)
	}
	return tokenEntry{Token: strings.ToValidUTF8(string(t.Bytes), "\ufffd"), Logprob: t.Logprob, Bytes: b}
}

// contentEntryOf is a reply token's entry: its own and its position's top.
func contentEntryOf(lp *engine.TokenLogprobs) contentEntry {
	e := contentEntry{tokenEntry: entryOf(lp.TokenLogprob), TopLogprobs: []tokenEntry{}}
	for _, t := range lp.Top {
		e.TopLogprobs = append(e.TopLogprobs, entryOf(t))
	}
	return e
}

// chatLogprobs is a choice's logprobs object for entries.
func chatLogprobs(entries []contentEntry) any {
	if entries == nil {
		entries = []contentEntry{}
	}
	return map[string]any{"content": entries, "refusal": nil}
}

// completionLogprobs is a completion choice's logprobs object (the legacy
// shape: parallel lists; text_offset counts bytes from the reply's start).
func completionLogprobs(entries []contentEntry, offset int) any {
	out := struct {
		Tokens        []string             `json:"tokens"`
		TokenLogprobs []float64            `json:"token_logprobs"`
		TopLogprobs   []map[string]float64 `json:"top_logprobs"`
		TextOffset    []int                `json:"text_offset"`
	}{Tokens: []string{}, TokenLogprobs: []float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
	for _, e := range entries {
		out.Tokens = append(out.Tokens, e.Token)
		out.TokenLogprobs = append(out.TokenLogprobs, e.Logprob)
		top := map[string]float64{}
		for _, t := range e.TopLogprobs {
			top[t.Token] = t.Logprob
		}
		out.TopLogprobs = append(out.TopLogprobs, top)
		out.TextOffset = append(out.TextOffset, offset)
		offset += len(e.Bytes)
	}
	return out
}
