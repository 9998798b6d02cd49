package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"bagel/engine"
	"bagel/tokenizer"
)

// Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens),
// as Claude Code and the anthropic SDKs speak it: content blocks (text,
// thinking, tool_use, tool_result), a system prompt, stop sequences, and
// streaming as named server-sent events.

type messagesRequest struct {
	Model         string          `json:"model"`
	MaxTokens     *int            `json:"max_tokens"`
	Messages      []anthMessage   `json:"messages"`
	System        json.RawMessage `json:"system"` // a string or text blocks
	StopSequences []string        `json:"stop_sequences"`
	Stream        bool            `json:"stream"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	TopK          *int            `json:"top_k"`
	Thinking      *struct {
		Type string `json:"type"` // "enabled" or "disabled"
	} `json:"thinking"`
	// OutputFormat asks for structured output (a JSON schema), which is
	// refused: only plain text is served.
	OutputFormat *struct {
		Type string `json:"type"`
	} `json:"output_format"`
	Tools      []anthTool `json:"tools"`
	ToolChoice *struct {
		Type string `json:"type"` // auto, any, tool, none
		Name string `json:"name"` // the tool, for "tool"
	} `json:"tool_choice"`
}

type anthMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or blocks
}

// anthBlock is one content block, of any type.
type anthBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // tool_result: a string or text blocks
	IsError   bool            `json:"is_error"`
	Source    *struct {
		Type string `json:"type"` // base64 (url and file are not read)
		Data string `json:"data"`
	} `json:"source"` // image
}

type anthTool struct {
	Type        string          `json:"type"` // "" or "custom"; others are Anthropic's server tools
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// blocks reads content: a string is one text block.
func blocks(raw json.RawMessage) ([]anthBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthBlock{{Type: "text", Text: s}}, nil
	}
	var bs []anthBlock
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, fmt.Errorf("content must be a string or a list of content blocks")
	}
	return bs, nil
}

// textOf joins the text blocks of raw; another kind of block is an error.
func textOf(raw json.RawMessage) (string, error) {
	bs, err := blocks(raw)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, b := range bs {
		if b.Type != "text" {
			return "", fmt.Errorf("blocks of type %q are not supported here (text only)", b.Type)
		}
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n"), nil
}

// anthUserTurn is user message i's blocks as the template's messages: each
// tool_result a tool turn, then the texts and images as one user turn (the
// texts joined by newlines; with images, the blocks in order as parts), and
// the images' bytes.
func anthUserTurn(i int, bs []anthBlock) ([]tokenizer.Message, [][]byte, error) {
	var msgs []tokenizer.Message
	var images [][]byte
	var text []string
	var parts []tokenizer.Part // with images: the blocks in order
	for j, b := range bs {
		switch b.Type {
		case "text":
			text = append(text, b.Text)
			if n := len(parts); n > 0 && !parts[n-1].Image {
				parts[n-1].Text += "\n" + b.Text
			} else {
				parts = append(parts, tokenizer.Part{Text: b.Text})
			}
		case "image":
			if b.Source == nil || b.Source.Type != "base64" {
				return nil, nil, fmt.Errorf("messages[%d].content[%d] (image): only a base64 source is read; this server fetches no URL on a client's behalf", i, j)
			}
			data, err := imageFromBase64(b.Source.Data)
			if err != nil {
				return nil, nil, fmt.Errorf("messages[%d].content[%d] (image): %v", i, j, err)
			}
			images = append(images, data)
			parts = append(parts, tokenizer.Part{Image: true})
		case "tool_result":
			result, err := textOf(b.Content)
			if err != nil {
				return nil, nil, fmt.Errorf("messages[%d].content[%d] (tool_result): %v", i, j, err)
			}
			if b.IsError {
				result = "Error: " + result
			}
			msgs = append(msgs, tokenizer.Message{Role: "tool", Content: result})
		default:
			return nil, nil, fmt.Errorf("messages[%d].content[%d]: blocks of type %q are not supported (text, image and tool_result)", i, j, clip(b.Type))
		}
	}
	if len(images) > 0 {
		msgs = append(msgs, tokenizer.Message{Role: "user", Parts: parts})
	} else if len(text) > 0 {
		msgs = append(msgs, tokenizer.Message{Role: "user", Content: strings.Join(text, "\n")})
	}
	return msgs, images, nil
}

// parseMessages checks a Messages request and builds the generation.
func (s *Server) parseMessages(r messagesRequest) (*generation, error) {
	bad := func(format string, a ...any) (*generation, error) {
		return nil, &httpError{http.StatusBadRequest, "invalid_request_error", fmt.Sprintf(format, a...)}
	}
	if r.Model != "" && r.Model != s.model {
		return nil, &httpError{http.StatusNotFound, "not_found_error", fmt.Sprintf("model %q is not served here; this server serves %q", clip(r.Model), s.model)}
	}
	if len(r.Messages) == 0 {
		return bad("messages is empty: send at least one user message")
	}
	g := &generation{stops: r.StopSequences, endpointKind: "chat.completion"}
	g.req.EnableThinking = r.Thinking == nil || r.Thinking.Type != "disabled" // the model thinks unless told not to
	system, err := textOf(r.System)
	if err != nil {
		return bad("system: %v", err)
	}
	if system != "" {
		g.req.Messages = append(g.req.Messages, tokenizer.Message{Role: "system", Content: system})
	}
	var rawImages [][]byte
	for i, m := range r.Messages {
		bs, err := blocks(m.Content)
		if err != nil {
			return bad("messages[%d]: %v", i, err)
		}
		switch m.Role {
		case "user":
			msgs, images, err := anthUserTurn(i, bs)
			if err != nil {
				return nil, &httpError{http.StatusBadRequest, "invalid_request_error", err.Error()}
			}
			g.req.Messages = append(g.req.Messages, msgs...)
			rawImages = append(rawImages, images...)
		case "assistant":
			msg := tokenizer.Message{Role: "assistant"}
			var text []string
			for j, b := range bs {
				switch b.Type {
				case "text":
					text = append(text, b.Text)
				case "thinking":
					msg.Reasoning += b.Thinking
				case "redacted_thinking":
				case "tool_use":
					input := json.RawMessage(strings.TrimSpace(string(b.Input)))
					if len(input) == 0 {
						input = json.RawMessage("{}")
					}
					if b.Name == "" || input[0] != '{' || !json.Valid(input) {
						return bad("messages[%d].content[%d] (tool_use): want a name and an input object", i, j)
					}
					msg.ToolCalls = append(msg.ToolCalls, tokenizer.ToolCall{Name: b.Name, Arguments: input})
				default:
					return bad("messages[%d].content[%d]: blocks of type %q are not supported in an assistant message", i, j, b.Type)
				}
			}
			msg.Content = strings.Join(text, "")
			g.req.Messages = append(g.req.Messages, msg)
		default:
			return bad("messages[%d] has role %q; want user or assistant (the system prompt goes in system)", i, clip(m.Role))
		}
	}
	if f := r.OutputFormat; f != nil && f.Type != "" && f.Type != "text" {
		return bad("output_format %q is not supported yet (plain text only): ask for JSON in the prompt", clip(f.Type))
	}
	if tc := r.ToolChoice; len(r.Tools) == 0 && tc != nil && (tc.Type == "any" || tc.Type == "tool") {
		return bad("tool_choice %q asks for a tool call, but the request has no tools", tc.Type)
	}
	if len(r.Tools) > 0 {
		for i, t := range r.Tools {
			if t.Type != "" && t.Type != "custom" {
				return bad("tools[%d] is Anthropic's server tool %q, which this server cannot run", i, clip(t.Type))
			}
			if t.Name == "" || len(t.InputSchema) == 0 {
				return bad("tools[%d]: want a name and an input_schema", i)
			}
			// The template lists tools in OpenAI's shape, as vLLM and LM
			// Studio give Qwen its Anthropic tools.
			fn := struct {
				Type     string `json:"type"`
				Function struct {
					Name        string          `json:"name"`
					Description string          `json:"description,omitempty"`
					Parameters  json.RawMessage `json:"parameters"`
				} `json:"function"`
			}{Type: "function"}
			fn.Function.Name, fn.Function.Description, fn.Function.Parameters = t.Name, t.Description, t.InputSchema
			raw, err := json.Marshal(fn)
			if err != nil {
				return bad("tools[%d]: input_schema is not JSON", i)
			}
			g.req.Tools = append(g.req.Tools, raw)
		}
		if g.tools, err = parseTools(g.req.Tools); err != nil {
			return bad("%v", err)
		}
		c := toolChoice{mode: "auto"}
		if tc := r.ToolChoice; tc != nil {
			switch tc.Type {
			case "any":
				c.mode = "required"
			case "tool":
				c = toolChoice{mode: "named", name: tc.Name}
			default:
				c.mode = tc.Type
			}
		}
		if err := g.chooseTools(c, s.eng.ToolCallPrefix); err != nil {
			return bad("%v", err)
		}
	}
	if r.MaxTokens == nil {
		return bad("max_tokens is required")
	}
	if err := s.settle(g, settings{Temperature: r.Temperature, TopP: r.TopP, TopK: r.TopK, MaxTokens: r.MaxTokens}); err != nil {
		return nil, err
	}
	if err := s.keepImages(g, rawImages); err != nil {
		err.(*httpError).code = "invalid_request_error" // Anthropic's kind of error
		return nil, err
	}
	return g, nil
}

// decodeMessages reads and checks a Messages request body; counting (for
// count_tokens) needs no max_tokens.
func (s *Server) decodeMessages(w http.ResponseWriter, r *http.Request, counting bool) (messagesRequest, *generation, bool) {
	var req messagesRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		bodyError(w, err)
		return req, nil, false
	}
	if counting {
		one := 1
		req.MaxTokens = &one
	}
	g, err := s.parseMessages(req)
	if err != nil {
		he := err.(*httpError)
		apiError(w, he.status, he.code, he.text)
		return req, nil, false
	}
	return req, g, true
}

// countTokens is POST /v1/messages/count_tokens: the prompt's length as the
// model would read it.
func (s *Server) countTokens(w http.ResponseWriter, r *http.Request) {
	_, g, ok := s.decodeMessages(w, r, true)
	if !ok {
		return
	}
	ids, err := s.eng.PromptTokens(g.req)
	if err != nil {
		status, code := errorStatus(err)
		apiError(w, status, code, err.Error())
		return
	}
	n := len(ids)
	for i, data := range g.images { // each image's one pad is its tokens
		t, err := s.imageTokens(data)
		if err != nil {
			apiError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("image %d: %v", i+1, err))
			return
		}
		n += t - 1
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]int{"input_tokens": n})
}

// messages is POST /v1/messages.
func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	req, g, ok := s.decodeMessages(w, r, false)
	if !ok {
		return
	}
	s.generate(w, r, start, g, fmt.Sprintf("msg_bagel%d", start.UnixNano()), func(a *answer, events <-chan engine.Event) outcome {
		if req.Stream {
			return a.anthropicStream(w, events)
		}
		return a.anthropicWhole(w, events)
	})
}

// anthContent is a response's content block.
type anthContent struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

type anthUsage struct {
	InputTokens          int `json:"input_tokens"`
	OutputTokens         int `json:"output_tokens"`
	CacheReadInputTokens int `json:"cache_read_input_tokens"` // from the prompt cache
}

// anthUsage counts the prompt's reused tokens apart, as Anthropic's cache reads.
func (o outcome) anthUsage() anthUsage {
	return anthUsage{InputTokens: o.stats.PromptTokens - o.stats.ReusedPromptTokens, OutputTokens: o.stats.GeneratedTokens,
		CacheReadInputTokens: o.stats.ReusedPromptTokens}
}

// stopReason is Anthropic's name for how the reply ended, and the stop
// sequence that ended it.
func (o outcome) stopReason() (string, *string) {
	switch {
	case o.stopString != "":
		return "stop_sequence", &o.stopString
	case o.reason == "length":
		return "max_tokens", nil
	case o.reason == "tool_calls":
		return "tool_use", nil
	}
	return "end_turn", nil
}

func (a *answer) toolUseID(index int) string { return fmt.Sprintf("toolu_%s_%d", a.id, index) }

func textBlock(kind, text string) anthContent {
	if kind == "thinking" {
		sig := ""
		return anthContent{Type: "thinking", Thinking: &text, Signature: &sig}
	}
	return anthContent{Type: "text", Text: &text}
}

// anthropicWhole answers with one message object.
func (a *answer) anthropicWhole(w http.ResponseWriter, events <-chan engine.Event) outcome {
	var content []anthContent
	var texts []*strings.Builder // beside content: the text of each text or thinking block
	o := a.read(events, func(text string, thinking bool) bool {
		kind := "text"
		if thinking {
			kind = "thinking"
		}
		if n := len(content); n == 0 || content[n-1].Type != kind {
			content = append(content, anthContent{Type: kind})
			texts = append(texts, &strings.Builder{})
		}
		texts[len(texts)-1].WriteString(text)
		return true
	}, func(index int, c toolCall) bool {
		content = append(content, anthContent{Type: "tool_use", ID: a.toolUseID(index), Name: c.name, Input: json.RawMessage(c.arguments)})
		texts = append(texts, nil)
		return true
	})
	if o.err != nil {
		status, code := errorStatus(o.err)
		apiError(w, status, code, o.err.Error())
		return o
	}
	for i, b := range texts {
		if b != nil {
			content[i] = textBlock(content[i].Type, b.String())
		}
	}
	if content == nil {
		content = []anthContent{}
	}
	reason, seq := o.stopReason()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": a.id, "type": "message", "role": "assistant", "model": a.model,
		"content": content, "stop_reason": reason, "stop_sequence": seq, "usage": o.anthUsage(), "tool_call_error": nilIfEmpty(o.malformed)})
	return o
}

func nilIfEmpty(why []string) any {
	if len(why) == 0 {
		return nil
	}
	return strings.Join(why, "; ")
}

// anthropicStream answers with Anthropic's events: message_start, then per
// block content_block_start, its deltas, content_block_stop, then
// message_delta (stop reason, usage) and message_stop.
func (a *answer) anthropicStream(w http.ResponseWriter, events <-chan engine.Event) outcome {
	s := newSSE(w)
	open, index := "", -1
	event := s.send
	begin := func() bool {
		if !s.open() {
			return true
		}
		return event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": a.id, "type": "message", "role": "assistant", "model": a.model, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": anthUsage{}}})
	}
	closeBlock := func() bool {
		if open == "" {
			return true
		}
		open = ""
		return event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
	}
	openBlock := func(kind string, block anthContent) bool {
		if !closeBlock() {
			return false
		}
		open, index = kind, index+1
		return event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": block})
	}
	o := a.read(events, func(text string, thinking bool) bool {
		kind, delta := "text", map[string]any{"type": "text_delta", "text": text}
		if thinking {
			kind, delta = "thinking", map[string]any{"type": "thinking_delta", "thinking": text}
		}
		if !begin() || (open != kind && !openBlock(kind, textBlock(kind, ""))) {
			return false
		}
		return event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": delta})
	}, func(i int, c toolCall) bool {
		return begin() && openBlock("tool_use", anthContent{Type: "tool_use", ID: a.toolUseID(i), Name: c.name, Input: json.RawMessage("{}")}) &&
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": c.arguments}}) &&
			closeBlock()
	})
	if o.err != nil {
		status, code := errorStatus(o.err)
		if !s.started {
			apiError(w, status, code, o.err.Error())
			return o
		}
		event("error", map[string]any{"type": "error", "error": map[string]any{"type": anthErrorType(status), "message": o.err.Error()}})
		return o
	}
	if !begin() || !closeBlock() {
		return o
	}
	reason, seq := o.stopReason()
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": reason, "stop_sequence": seq},
		"usage": o.anthUsage(), "tool_call_error": nilIfEmpty(o.malformed)})
	event("message_stop", map[string]any{"type": "message_stop"})
	return o
}

// anthErrorType is Anthropic's error type for an HTTP status.
func anthErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}
