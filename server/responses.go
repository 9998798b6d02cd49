package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"bagel/engine"
	"bagel/tokenizer"
)

// OpenAI's Responses API (POST /v1/responses) as Codex and the openai SDKs
// speak it: the conversation as input items (messages, reasoning, function
// and custom tool calls and their outputs), function and custom tools, the
// reply as output items (reasoning, message, function_call,
// custom_tool_call), whole or streamed as typed events that end with
// response.completed. Nothing is stored: a request carries its whole
// conversation (Codex sends store: false), and previous_response_id is
// refused with a clear error; the prompt cache still reuses the prefix the
// last request computed.

type responsesRequest struct {
	Model             string            `json:"model"`
	Input             json.RawMessage   `json:"input"` // a string or items
	Instructions      string            `json:"instructions"`
	Tools             []json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage   `json:"tool_choice"`
	Stream            bool              `json:"stream"`
	MaxOutputTokens   *int              `json:"max_output_tokens"`
	Temperature       *float64          `json:"temperature"`
	TopP              *float64          `json:"top_p"`
	TopK              *int              `json:"top_k"`
	MinP              *float64          `json:"min_p"`
	RepetitionPenalty *float64          `json:"repetition_penalty"`
	Seed              *int64            `json:"seed"`
	Reasoning         *struct {
		Effort string `json:"effort"`
	} `json:"reasoning"`
	PreviousResponseID string `json:"previous_response_id"`
	Background         bool   `json:"background"`
	Text               *struct {
		Format *struct {
			Type string `json:"type"`
		} `json:"format"`
	} `json:"text"`
	TopLogprobs    *int `json:"top_logprobs"`
	TemplateKwargs struct {
		EnableThinking *bool `json:"enable_thinking"`
	} `json:"chat_template_kwargs"`
}

// respItem is one input item, of any type.
type respItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"` // a message's: a string or parts; a reasoning item's: parts
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"` // a function call's JSON object, as a string
	Input     string          `json:"input"`     // a custom tool call's text
	Output    json.RawMessage `json:"output"`    // a call's output: a string or parts
	Summary   []respPart      `json:"summary"`
}

type respPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL string `json:"image_url"` // input_image: a data: URL
	FileID   string `json:"file_id"`   // input_image: a stored file (not read here)
}

// userContent is a user message's content: its text, and with input_image
// parts, its parts in order and the images' bytes.
func userContent(raw json.RawMessage) (string, []tokenizer.Part, [][]byte, error) {
	var parts []respPart
	if json.Unmarshal(raw, &parts) != nil || !slices.ContainsFunc(parts, func(p respPart) bool { return p.Type == "input_image" }) {
		text, err := partsText(raw)
		return text, nil, nil, err
	}
	var out []tokenizer.Part
	var images [][]byte
	for j, p := range parts {
		switch p.Type {
		case "input_text", "text":
			out = append(out, tokenizer.Part{Text: p.Text})
		case "input_image":
			if p.ImageURL == "" {
				return "", nil, nil, fmt.Errorf("content[%d]: an input_image without a data: URL in image_url (stored files are not read here)", j)
			}
			data, err := imageFromURL(p.ImageURL)
			if err != nil {
				return "", nil, nil, fmt.Errorf("content[%d]: %v", j, err)
			}
			images = append(images, data)
			out = append(out, tokenizer.Part{Image: true})
		default:
			return "", nil, nil, fmt.Errorf("content parts of type %q are not supported in a user message (input_text and input_image)", clip(p.Type))
		}
	}
	return "", out, images, nil
}

// partsText is content or output: a string, or the text of its parts.
func partsText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []respPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content must be a string or a list of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text", "reasoning_text", "summary_text", "refusal":
			b.WriteString(p.Text)
		default:
			return "", fmt.Errorf("content parts of type %q are not supported yet (text only)", clip(p.Type))
		}
	}
	return b.String(), nil
}

// customInput is the one parameter a custom (free-text) tool is offered
// with: Qwen's calls name their parameters, so its text travels as one.
const customInput = "input"

// parseResponses checks a Responses request and builds the generation;
// customs are the custom tools offered (their calls go back as
// custom_tool_call items).
func (s *Server) parseResponses(r responsesRequest) (*generation, map[string]bool, error) {
	bad := func(code, format string, a ...any) (*generation, map[string]bool, error) {
		return nil, nil, &httpError{http.StatusBadRequest, code, fmt.Sprintf(format, a...)}
	}
	switch {
	case r.Model != "" && r.Model != s.model:
		return nil, nil, &httpError{http.StatusNotFound, "model_not_found", fmt.Sprintf("model %q is not served here; this server serves %q (GET /v1/models)", clip(r.Model), s.model)}
	case r.PreviousResponseID != "":
		return bad("unsupported_previous_response", "previous_response_id: this server stores no responses; send the whole conversation in input (store: false)")
	case r.Background:
		return bad("unsupported_background", "background responses are not supported: send the request and read its answer")
	case r.Text != nil && r.Text.Format != nil && r.Text.Format.Type != "" && r.Text.Format.Type != "text":
		return bad("unsupported_format", "text.format %q is not supported yet (plain text only)", clip(r.Text.Format.Type))
	case r.TopLogprobs != nil && *r.TopLogprobs > 0:
		return bad("unsupported_logprobs", "top_logprobs are not served on /v1/responses yet; /v1/chat/completions serves them")
	}
	thinking := r.Reasoning == nil || r.Reasoning.Effort != "none"
	if r.TemplateKwargs.EnableThinking != nil {
		thinking = *r.TemplateKwargs.EnableThinking
	}
	g := &generation{thinkingOn: thinking, endpointKind: "chat.completion"}
	g.req.EnableThinking = thinking

	var items []respItem
	var text string
	if json.Unmarshal(r.Input, &text) == nil {
		items = []respItem{{Type: "message", Role: "user", Content: r.Input}}
	} else if err := json.Unmarshal(r.Input, &items); err != nil || len(items) == 0 {
		return bad("invalid_input", "input must be a string or a list of items, and not empty")
	}
	var system []string
	if r.Instructions != "" {
		system = append(system, r.Instructions)
	}
	var msgs []tokenizer.Message
	reasoning := "" // from reasoning items, for the assistant turn they precede
	// assistant is the assistant turn a call joins: the last message when it
	// is one (its text, then its calls), else a new one.
	assistant := func() *tokenizer.Message {
		if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" {
			return &msgs[n-1]
		}
		msgs = append(msgs, tokenizer.Message{Role: "assistant", Reasoning: reasoning})
		reasoning = ""
		return &msgs[len(msgs)-1]
	}
	var rawImages [][]byte
	for i, it := range items {
		kind := it.Type
		if kind == "" && it.Role != "" {
			kind = "message"
		}
		switch kind {
		case "message":
			if it.Role == "user" {
				text, parts, images, err := userContent(it.Content)
				if err != nil {
					return bad("invalid_content", "input[%d]: %v", i, err)
				}
				rawImages = append(rawImages, images...)
				msgs = append(msgs, tokenizer.Message{Role: "user", Content: text, Parts: parts})
				continue
			}
			content, err := partsText(it.Content)
			if err != nil {
				return bad("invalid_content", "input[%d]: %v", i, err)
			}
			switch it.Role {
			case "system", "developer":
				// Qwen's template takes one system turn, first: every system
				// and developer message joins it, in order.
				system = append(system, content)
			case "user":
				msgs = append(msgs, tokenizer.Message{Role: "user", Content: content})
			case "assistant":
				msgs = append(msgs, tokenizer.Message{Role: "assistant", Content: content, Reasoning: reasoning})
				reasoning = ""
			default:
				return bad("invalid_role", "input[%d] has role %q; want user, assistant, system or developer", i, clip(it.Role))
			}
		case "reasoning":
			for _, p := range it.Summary {
				reasoning += p.Text
			}
			if content, err := partsText(it.Content); err == nil {
				reasoning += content
			}
		case "function_call", "custom_tool_call":
			args := strings.TrimSpace(it.Arguments)
			if kind == "custom_tool_call" {
				b, _ := json.Marshal(map[string]string{customInput: it.Input})
				args = string(b)
			}
			if args == "" {
				args = "{}"
			}
			if it.Name == "" || args[0] != '{' || !json.Valid([]byte(args)) {
				return bad("invalid_function_call", "input[%d] (%s): want a name and arguments that are a JSON object (as a string)", i, kind)
			}
			m := assistant()
			m.ToolCalls = append(m.ToolCalls, tokenizer.ToolCall{Name: it.Name, Arguments: json.RawMessage(args)})
		case "function_call_output", "custom_tool_call_output":
			out, err := partsText(it.Output)
			if err != nil {
				return bad("invalid_output", "input[%d] (%s): %v", i, kind, err)
			}
			msgs = append(msgs, tokenizer.Message{Role: "tool", Content: out})
		case "item_reference":
			return bad("unsupported_item", "input[%d] is an item_reference: this server stores no items; send the item itself", i)
		default:
			return bad("unsupported_item", "input[%d] is a %q item, which this server cannot take (messages, reasoning, function and custom tool calls and their outputs)", i, clip(kind))
		}
	}
	if len(system) > 0 {
		msgs = append([]tokenizer.Message{{Role: "system", Content: strings.Join(system, "\n\n")}}, msgs...)
	}
	g.req.Messages = msgs
	if err := s.keepImages(g, rawImages); err != nil {
		return nil, nil, err
	}

	customs := map[string]bool{}
	if len(r.Tools) > 0 {
		for i, raw := range r.Tools {
			var t struct {
				Type        string          `json:"type"`
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			}
			if err := json.Unmarshal(raw, &t); err != nil {
				return bad("invalid_tools", "tools[%d]: %s", i, jsonText(err))
			}
			switch t.Type {
			case "function":
			case "custom":
				customs[t.Name] = true
				t.Parameters = json.RawMessage(`{"type":"object","properties":{"` + customInput + `":{"type":"string","description":"The tool's input, as free text in the format the tool's description asks for"}},"required":["` + customInput + `"]}`)
			default:
				return bad("unsupported_tool", "tools[%d] is OpenAI's hosted tool %q, which runs on OpenAI's servers; this server runs function and custom tools (turn the tool off in the client)", i, clip(t.Type))
			}
			if t.Name == "" {
				return bad("invalid_tools", "tools[%d]: a %s tool needs a name", i, t.Type)
			}
			if len(t.Parameters) == 0 || string(t.Parameters) == "null" {
				t.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			fn := map[string]any{"type": "function", "function": map[string]any{"name": t.Name, "description": t.Description, "parameters": t.Parameters}}
			b, err := json.Marshal(fn)
			if err != nil {
				return bad("invalid_tools", "tools[%d]: parameters is not JSON", i)
			}
			g.req.Tools = append(g.req.Tools, b)
		}
		var err error
		if g.tools, err = parseTools(g.req.Tools); err != nil {
			return bad("invalid_tools", "%v", err)
		}
		c := toolChoice{mode: "auto"}
		if len(r.ToolChoice) > 0 && string(r.ToolChoice) != "null" {
			var named struct{ Type, Name string }
			if json.Unmarshal(r.ToolChoice, &c.mode) != nil {
				if json.Unmarshal(r.ToolChoice, &named) != nil || (named.Type != "function" && named.Type != "custom") || named.Name == "" {
					return bad("invalid_tool_choice", `tool_choice must be "auto", "none", "required" or {"type": "function", "name": ...}`)
				}
				c = toolChoice{mode: "named", name: named.Name}
			}
		}
		if err := g.chooseTools(c, s.eng.ToolCallPrefix); err != nil {
			return bad("invalid_tool_choice", "%v", err)
		}
	} else if err := choiceWithoutTools(r.ToolChoice); err != nil {
		return nil, nil, err
	}
	if err := s.settle(g, settings{Temperature: r.Temperature, TopP: r.TopP, TopK: r.TopK, MinP: r.MinP,
		RepetitionPenalty: r.RepetitionPenalty, Seed: r.Seed, MaxTokens: r.MaxOutputTokens}); err != nil {
		he := err.(*httpError)
		if he.code == "invalid_max_tokens" {
			he.text = strings.Replace(he.text, "max_tokens", "max_output_tokens", 1)
		}
		return nil, nil, he
	}
	return g, customs, nil
}

// responses is POST /v1/responses.
func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req responsesRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		bodyError(w, err)
		return
	}
	g, customs, err := s.parseResponses(req)
	if err != nil {
		he := err.(*httpError)
		apiError(w, he.status, he.code, he.text)
		return
	}
	s.generate(w, r, start, g, fmt.Sprintf("resp_bagel%d", start.UnixNano()), func(a *answer, events <-chan engine.Event) outcome {
		rb := &respBuilder{a: a, customs: customs, req: req}
		if req.Stream {
			return rb.stream(w, events)
		}
		return rb.whole(w, events)
	})
}
