package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"bagel/engine"
)

// answer turns one generation's events into an OpenAI response: one JSON
// object (whole) or a stream of server-sent events (stream).
type answer struct {
	id      string
	created int64
	model   string
	kind    string // "chat.completion" or "text_completion"
	stop    *stopper
	cancel  context.CancelFunc // ends the generation once a stop string is reached
	tools   toolSchemas        // the functions offered; nil: the reply is text alone
	// prefix is the reply's start the server wrote (a forced tool call's
	// "<tool_call>\n<function="), read before the model's tokens.
	prefix string
	// logprobs: the request asked for them; lps are the content tokens'
	// entries so far, lpSent how many a stream has sent.
	logprobs bool
	lps      []contentEntry
	lpSent   int
}

// unsentLogprobs is the entries a stream has not sent yet (nil when the
// request asked for none).
func (a *answer) unsentLogprobs() []contentEntry {
	if !a.logprobs {
		return nil
	}
	out := a.lps[a.lpSent:]
	a.lpSent = len(a.lps)
	if out == nil {
		out = []contentEntry{}
	}
	return out
}

// outcome is how a generation ended.
type outcome struct {
	reason          string // finish_reason: "stop" or "length"
	stats           engine.Stats
	reasoningTokens int
	err             error
	sent            bool       // some text was emitted before err
	stopString      string     // the stop string that ended the reply
	calls           []toolCall // the tool calls the reply made
	malformed       []string   // why a <tool_call> block stayed text
}

// read drains events, handing emit each piece of text to send (thinking: the
// model's reasoning, which a chat answer keeps apart from its content) and
// emitCall each tool call; both return false when the client is gone. Stop
// strings apply to the content only: a model reasoning about a stop string
// does not end its reply. Tool calls are read from both (a <tool_call> also
// ends Qwen3.5's reasoning).
func (a *answer) read(events <-chan engine.Event, emit func(text string, thinking bool) bool, emitCall func(index int, c toolCall) bool) outcome {
	var o outcome
	stopped, gone := false, false
	send := func(text string, thinking bool) {
		if text == "" || stopped || gone {
			return
		}
		o.sent = true
		if !emit(text, thinking) {
			gone = true
			a.cancel()
		}
	}
	// pass sends text that holds no tool call: reasoning as it is, content
	// through the stop strings.
	pass := func(text string, thinking bool) {
		if thinking && a.kind == "chat.completion" {
			send(text, true)
			return
		}
		if stopped {
			return
		}
		out, hit := a.stop.add(text)
		send(out, false)
		if hit {
			stopped = true
			a.cancel() // the rest is drained: the final event carries the stats
		}
	}
	scanners := map[bool]*toolScanner{}
	if a.tools != nil {
		scanners[false], scanners[true] = &toolScanner{tools: a.tools}, &toolScanner{tools: a.tools}
	}
	scanned := func(out string, calls []toolCall, malformed []string, thinking bool) {
		pass(out, thinking)
		o.malformed = append(o.malformed, malformed...)
		for _, c := range calls {
			if stopped || gone {
				return
			}
			o.calls = append(o.calls, c)
			o.sent = true
			if !emitCall(len(o.calls)-1, c) {
				gone = true
				a.cancel()
			}
		}
	}
	if sc := scanners[false]; sc != nil && a.prefix != "" {
		out, calls, malformed := sc.add(a.prefix)
		scanned(out, calls, malformed, false)
	}
	for ev := range events {
		switch ev.Kind {
		case engine.EventToken:
			if ev.Thinking {
				o.reasoningTokens++
			}
			if ev.Logprobs != nil && !(ev.Thinking && a.kind == "chat.completion") {
				a.lps = append(a.lps, contentEntryOf(ev.Logprobs))
			}
			if sc := scanners[ev.Thinking]; sc != nil {
				out, calls, malformed := sc.add(ev.Text)
				scanned(out, calls, malformed, ev.Thinking)
			} else {
				pass(ev.Text, ev.Thinking)
			}
		case engine.EventStats:
			o.stats = ev.Stats
		case engine.EventDone:
			o.stats = ev.Stats
			o.reason = finishReason(ev.Reason)
		case engine.EventError:
			o.err = ev.Err
		}
	}
	if o.err == nil && !stopped {
		for _, thinking := range []bool{true, false} {
			if sc := scanners[thinking]; sc != nil {
				out, malformed := sc.flush()
				scanned(out, nil, malformed, thinking)
			}
		}
	}
	switch {
	case stopped:
		o.reason, o.err, o.stopString = "stop", nil, a.stop.hit
	case o.err == nil:
		send(a.stop.flush(), false)
	}
	if len(o.calls) > 0 && o.reason == "stop" {
		o.reason = "tool_calls"
	}
	return o
}

// finishReason is OpenAI's name for how a reply ended.
func finishReason(r string) string {
	switch r {
	case engine.ReasonLength, engine.ReasonContext:
		return "length"
	default:
		return "stop"
	}
}

// errorStatus is the HTTP status and code of a generation's error.
func errorStatus(err error) (int, string) {
	var long *engine.PromptTooLongError
	var conv *engine.ConversationError
	var prompt *engine.PromptError
	switch {
	case errors.As(err, &long):
		return http.StatusBadRequest, "context_length_exceeded"
	case errors.As(err, &conv):
		return http.StatusBadRequest, "invalid_conversation"
	case errors.As(err, &prompt):
		return http.StatusBadRequest, "invalid_prompt"
	case errors.Is(err, engine.ErrClosed):
		return http.StatusServiceUnavailable, "model_unloaded"
	default:
		return http.StatusInternalServerError, "generation_failed"
	}
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"` // from the prompt cache
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (o outcome) usage() *usage {
	u := &usage{PromptTokens: o.stats.PromptTokens, CompletionTokens: o.stats.GeneratedTokens,
		TotalTokens: o.stats.PromptTokens + o.stats.GeneratedTokens}
	u.PromptTokensDetails.CachedTokens = o.stats.ReusedPromptTokens
	u.CompletionTokensDetails.ReasoningTokens = o.reasoningTokens
	return u
}

type message struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content,omitempty"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallJSON `json:"tool_calls,omitempty"`
}

// toolCallJSON is a tool call as OpenAI writes it (Index in a stream's
// deltas only).
type toolCallJSON struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func (a *answer) callJSON(index int, c toolCall) toolCallJSON {
	j := toolCallJSON{ID: fmt.Sprintf("call_%s_%d", a.id, index), Type: "function"}
	j.Function.Name, j.Function.Arguments = c.name, c.arguments
	return j
}

// choice is one of a response's choices (always one): a chat answer's
// message or delta, or a completion's text.
type choice struct {
	Index        int      `json:"index"`
	Message      *message `json:"message,omitempty"`
	Delta        *message `json:"delta,omitempty"`
	Text         *string  `json:"text,omitempty"`
	FinishReason *string  `json:"finish_reason"`
	Logprobs     any      `json:"logprobs"`
	// ToolCallError says why text that began <tool_call> is in the content
	// rather than a call (Bagel's own field).
	ToolCallError string `json:"tool_call_error,omitempty"`
}

type response struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   *usage   `json:"usage,omitempty"`
}

func (a *answer) response(object string, c []choice, u *usage) response {
	return response{ID: a.id, Object: object, Created: a.created, Model: a.model, Choices: c, Usage: u}
}

// whole answers with one JSON object once the reply is complete.
func (a *answer) whole(w http.ResponseWriter, events <-chan engine.Event) outcome {
	var content, reasoning strings.Builder
	o := a.read(events, func(text string, thinking bool) bool {
		if thinking {
			reasoning.WriteString(text)
		} else {
			content.WriteString(text)
		}
		return true
	}, func(int, toolCall) bool { return true })
	if o.err != nil {
		status, code := errorStatus(o.err)
		apiError(w, status, code, o.err.Error())
		return o
	}
	text := content.String()
	c := choice{FinishReason: &o.reason, ToolCallError: strings.Join(o.malformed, "; ")}
	c.Logprobs = a.logprobsObject(a.unsentLogprobs(), 0)
	if a.kind == "chat.completion" {
		c.Message = &message{Role: "assistant", Content: &text, ReasoningContent: reasoning.String()}
		for i, call := range o.calls {
			c.Message.ToolCalls = append(c.Message.ToolCalls, a.callJSON(i, call))
		}
		if len(o.calls) > 0 && strings.TrimSpace(text) == "" {
			c.Message.Content = nil // OpenAI's null beside tool calls
		}
	} else {
		c.Text = &text
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(a.response(a.kind, []choice{c}, o.usage()))
	return o
}

// stream answers with server-sent events, a chunk a piece of text, as
// OpenAI's streaming does: the first chunk gives the role, the last the
// finish_reason, then (include_usage) one with the usage and no choices, then
// "data: [DONE]". Nothing is written before the first event, so a request
// the engine refuses (a prompt longer than the context) still gets its
// status; an error after that is an "error" event (the SDKs raise it).
func (a *answer) stream(w http.ResponseWriter, events <-chan engine.Event, includeUsage bool) outcome {
	object := "chat.completion.chunk"
	if a.kind == "text_completion" {
		object = "text_completion"
	}
	s := newSSE(w)
	write := func(v any) bool { return s.send("", v) }
	begin := func() bool {
		if !s.open() {
			return true
		}
		if a.kind == "chat.completion" {
			empty := ""
			return write(a.response(object, []choice{{Delta: &message{Role: "assistant", Content: &empty}}}, nil))
		}
		return true
	}
	offset := 0 // a completion's text so far, for its logprobs' text_offset
	piece := func(text string, thinking bool) choice {
		if a.kind != "chat.completion" {
			c := choice{Text: &text, Logprobs: a.logprobsObject(a.unsentLogprobs(), offset)}
			offset += len(text)
			return c
		}
		if thinking {
			return choice{Delta: &message{ReasoningContent: text}}
		}
		return choice{Delta: &message{Content: &text}, Logprobs: a.logprobsObject(a.unsentLogprobs(), 0)}
	}
	o := a.read(events, func(text string, thinking bool) bool {
		return begin() && write(a.response(object, []choice{piece(text, thinking)}, nil))
	}, func(index int, c toolCall) bool {
		call := a.callJSON(index, c)
		call.Index = &index
		return begin() && write(a.response(object, []choice{{Delta: &message{ToolCalls: []toolCallJSON{call}}}}, nil))
	})
	if o.err != nil {
		status, code := errorStatus(o.err)
		if !s.started {
			apiError(w, status, code, o.err.Error())
			return o
		}
		write(map[string]any{"error": map[string]any{"message": o.err.Error(), "type": "server_error", "code": code}})
		return o
	}
	if !begin() {
		return o
	}
	last := piece("", false)
	if last.Delta != nil {
		last.Delta = &message{}
	}
	last.FinishReason = &o.reason
	last.ToolCallError = strings.Join(o.malformed, "; ")
	write(a.response(object, []choice{last}, nil))
	if includeUsage {
		write(a.response(object, []choice{}, o.usage()))
	}
	s.done()
	return o
}

// logprobsObject is a choice's logprobs for entries (nil: none asked).
func (a *answer) logprobsObject(entries []contentEntry, offset int) any {
	if entries == nil {
		return nil
	}
	if a.kind == "chat.completion" {
		return chatLogprobs(entries)
	}
	return completionLogprobs(entries, offset)
}
