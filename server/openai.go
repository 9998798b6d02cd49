package server

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"bagel/engine"
	"bagel/internal/jsonmsg"
	"bagel/tokenizer"
)

// chatRequest is the part of OpenAI's chat completion request the server
// reads. Pointers tell a field left out from a zero.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	TopK                *int            `json:"top_k"`
	MinP                *float64        `json:"min_p"`
	RepetitionPenalty   *float64        `json:"repetition_penalty"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	Seed                *int64          `json:"seed"`
	Stop                stopList        `json:"stop"`
	N                   *int            `json:"n"`
	Logprobs            json.RawMessage `json:"logprobs"` // chat: true or false; completions: a count
	TopLogprobs         *int            `json:"top_logprobs"`
	// IgnoreEOS decodes past the model's stop tokens until max_tokens (vLLM's
	// and llama-server's extension; benchmarks use it).
	IgnoreEOS       bool              `json:"ignore_eos"`
	Tools           []json.RawMessage `json:"tools"`
	ToolChoice      json.RawMessage   `json:"tool_choice"`
	ReasoningEffort string            `json:"reasoning_effort"`
	TemplateKwargs  struct {
		EnableThinking *bool `json:"enable_thinking"`
	} `json:"chat_template_kwargs"`
	// ResponseFormat asks for structured output; only plain text is served
	// (as /v1/responses' text.format and Ollama's format).
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	// Prompt is /v1/completions' raw prompt; Echo, Suffix and BestOf are
	// its options this server refuses rather than ignores.
	Prompt *prompt `json:"prompt"`
	Echo   bool    `json:"echo"`
	Suffix *string `json:"suffix"`
	BestOf *int    `json:"best_of"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chatMessage is one message; content is a string or a list of parts.
type chatMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent string          `json:"reasoning_content"`
	Reasoning        string          `json:"reasoning"`
	ToolCalls        []struct {
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"` // a JSON object, as a string
		} `json:"function"`
	} `json:"tool_calls"`
}

// stopList is "stop": a string or a list of strings.
type stopList []string

func (s *stopList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = stopList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("stop must be a string or a list of strings")
	}
	*s = many
	return nil
}

// prompt is a completion's prompt: a string, a list of one string, or a
// list of token ids (one prompt a request: the server writes one choice).
type prompt struct {
	text string
	ids  []int32
}

func (p *prompt) UnmarshalJSON(b []byte) error {
	if json.Unmarshal(b, &p.text) == nil {
		return nil
	}
	var texts []string
	if json.Unmarshal(b, &texts) == nil {
		if len(texts) != 1 {
			return fmt.Errorf("prompt: one prompt a request, got %d", len(texts))
		}
		p.text = texts[0]
		return nil
	}
	var ids []int64
	if err := json.Unmarshal(b, &ids); err != nil {
		return fmt.Errorf("prompt must be a string, a list of one string, or a list of token ids")
	}
	for _, id := range ids {
		if id < 0 || id > math.MaxInt32 {
			return fmt.Errorf("prompt token id %d is out of range", id)
		}
		p.ids = append(p.ids, int32(id))
	}
	if len(p.ids) == 0 {
		return fmt.Errorf("prompt is an empty list")
	}
	return nil
}

// content is a message's content: a string, or the text of its parts; with
// image_url parts, its parts in order and the images' bytes.
func (m chatMessage) content() (text string, parts []tokenizer.Part, images [][]byte, err error) {
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return "", nil, nil, nil
	}
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return s, nil, nil, nil
	}
	var list []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL *struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(m.Content, &list); err != nil {
		return "", nil, nil, fmt.Errorf("a message's content must be a string or a list of parts")
	}
	var b strings.Builder
	for j, p := range list {
		switch {
		case p.Type == "text":
			b.WriteString(p.Text)
			parts = append(parts, tokenizer.Part{Text: p.Text})
		case p.Type == "image_url" && p.ImageURL != nil:
			data, err := imageFromURL(p.ImageURL.URL)
			if err != nil {
				return "", nil, nil, fmt.Errorf("content[%d]: %v", j, err)
			}
			images = append(images, data)
			parts = append(parts, tokenizer.Part{Image: true})
		case p.Type == "image_url":
			return "", nil, nil, fmt.Errorf("content[%d]: an image_url part without its image_url object", j)
		default:
			return "", nil, nil, fmt.Errorf("content parts of type %q are not supported (text and image_url)", clip(p.Type))
		}
	}
	if len(images) == 0 {
		parts = nil
	}
	return b.String(), parts, images, nil
}

// generation is a request as the engine takes it, with what the answer
// needs besides.
type generation struct {
	req          engine.Request
	stops        []string
	streamUsage  bool
	thinkingOn   bool
	endpointKind string      // "chat.completion" or "text_completion"
	images       [][]byte    // the request's images, run through the tower before its turn (images.go)
	tools        toolSchemas // the functions offered (nil: no tool calls are read from the reply)
}

// parse checks a request and builds the engine's; a problem is a 4xx message.
func (s *Server) parse(r chatRequest, chat bool) (*generation, error) {
	if r.Model != "" && r.Model != s.model {
		return nil, &httpError{http.StatusNotFound, "model_not_found", fmt.Sprintf("model %q is not served here; this server serves %q (GET /v1/models)", clip(r.Model), s.model)}
	}
	bad := func(code, msg string) (*generation, error) {
		return nil, &httpError{http.StatusBadRequest, code, msg}
	}
	switch {
	case r.N != nil && *r.N != 1:
		return bad("unsupported_n", fmt.Sprintf("n = %d: this server writes one choice a request", *r.N))
	case r.ResponseFormat != nil && r.ResponseFormat.Type != "" && r.ResponseFormat.Type != "text":
		return bad("unsupported_response_format", fmt.Sprintf("response_format %q is not supported yet (plain text only): ask for JSON in the prompt", clip(r.ResponseFormat.Type)))
	case r.BestOf != nil && *r.BestOf != 1:
		return bad("unsupported_best_of", fmt.Sprintf("best_of = %d: this server writes one completion a request", *r.BestOf))
	case r.Echo:
		return bad("unsupported_echo", "echo is not supported: the completion's text is the reply alone")
	case r.Suffix != nil && *r.Suffix != "":
		return bad("unsupported_suffix", "suffix (text after the insertion) is not supported: the prompt is continued at its end only")
	}
	thinking := true
	if r.TemplateKwargs.EnableThinking != nil {
		thinking = *r.TemplateKwargs.EnableThinking
	}
	if r.ReasoningEffort == "none" {
		thinking = false
	}
	g := &generation{thinkingOn: thinking, stops: r.Stop, endpointKind: "chat.completion"}
	g.req.EnableThinking, g.req.IgnoreStop = thinking, r.IgnoreEOS
	if err := parseLogprobs(r.Logprobs, r.TopLogprobs, chat, g); err != nil {
		return nil, err
	}
	g.streamUsage = r.StreamOptions != nil && r.StreamOptions.IncludeUsage
	if chat {
		if len(r.Messages) == 0 {
			return bad("empty_messages", "messages is empty: send at least one user message")
		}
		var rawImages [][]byte
		var err error
		for i, m := range r.Messages {
			text, parts, images, err := m.content()
			if err != nil {
				return bad("invalid_content", fmt.Sprintf("messages[%d]: %v", i, err))
			}
			if len(images) > 0 && m.Role != "user" {
				return bad("invalid_content", fmt.Sprintf("messages[%d] (%s) holds an image: only user messages carry images", i, m.Role))
			}
			rawImages = append(rawImages, images...)
			switch m.Role {
			case "developer":
				m.Role = "system"
			case "system", "user", "assistant":
			case "tool":
			default:
				return bad("invalid_role", fmt.Sprintf("messages[%d] has role %q; want system, developer, user, assistant or tool", i, clip(m.Role)))
			}
			reasoning := m.ReasoningContent
			if reasoning == "" {
				reasoning = m.Reasoning
			}
			msg := tokenizer.Message{Role: m.Role, Content: text, Reasoning: reasoning}
			if parts != nil {
				msg.Content, msg.Parts = "", parts
			}
			for j, c := range m.ToolCalls {
				if m.Role != "assistant" {
					return bad("invalid_tool_calls", fmt.Sprintf("messages[%d] (%s) has tool_calls; only an assistant message has them", i, m.Role))
				}
				args := strings.TrimSpace(c.Function.Arguments)
				if args == "" {
					args = "{}"
				}
				if c.Function.Name == "" || args[0] != '{' || !json.Valid([]byte(args)) {
					return bad("invalid_tool_calls", fmt.Sprintf("messages[%d].tool_calls[%d]: want a function name and arguments that are a JSON object (as a string)", i, j))
				}
				msg.ToolCalls = append(msg.ToolCalls, tokenizer.ToolCall{Name: c.Function.Name, Arguments: json.RawMessage(args)})
			}
			g.req.Messages = append(g.req.Messages, msg)
		}
		if err := s.parseToolChoice(r, g); err != nil {
			return nil, err
		}
		if err = s.keepImages(g, rawImages); err != nil {
			return nil, err
		}
	} else {
		if r.Prompt == nil {
			return bad("missing_prompt", "prompt is missing")
		}
		g.req.Prompt, g.req.PromptIDs, g.endpointKind = r.Prompt.text, r.Prompt.ids, "text_completion"
		g.req.EnableThinking = false
	}
	maxTokens := r.MaxTokens
	if r.MaxCompletionTokens != nil {
		maxTokens = r.MaxCompletionTokens
	}
	if err := s.settle(g, settings{Temperature: r.Temperature, TopP: r.TopP, TopK: r.TopK, MinP: r.MinP,
		RepetitionPenalty: r.RepetitionPenalty, PresencePenalty: r.PresencePenalty, FrequencyPenalty: r.FrequencyPenalty,
		Seed: r.Seed, MaxTokens: maxTokens}); err != nil {
		return nil, err
	}
	return g, nil
}

// maxStopBytes bounds a stop string (stop strings are words and markers).
const maxStopBytes = 1024

// settings are the request fields every API shares; nil: the model's default.
type settings struct {
	Temperature, TopP, MinP, RepetitionPenalty *float64
	PresencePenalty, FrequencyPenalty          *float64
	TopK                                       *int
	Seed                                       *int64
	MaxTokens                                  *int
}

// settle sets g's sampling (the model's recommended, then what the request
// gives), its token limit (at most the context) and checks its stop strings.
func (s *Server) settle(g *generation, r settings) error {
	bad := func(code, msg string) error { return &httpError{http.StatusBadRequest, code, msg} }
	g.req.Sampling = engine.RecommendedSampling(g.req.EnableThinking)
	g.req.Sampling.Seed = uint64(time.Now().UnixNano())
	if r.Temperature != nil {
		g.req.Sampling.Temperature = *r.Temperature
	}
	if r.TopP != nil {
		g.req.Sampling.TopP = *r.TopP
	}
	if r.TopK != nil {
		g.req.Sampling.TopK = *r.TopK
	}
	if r.MinP != nil {
		g.req.Sampling.MinP = *r.MinP
	}
	if r.RepetitionPenalty != nil {
		g.req.Sampling.RepetitionPenalty = *r.RepetitionPenalty
	}
	if r.PresencePenalty != nil {
		g.req.Sampling.PresencePenalty = *r.PresencePenalty
	}
	if r.FrequencyPenalty != nil {
		g.req.Sampling.FrequencyPenalty = *r.FrequencyPenalty
	}
	if r.Seed != nil {
		g.req.Sampling.Seed = uint64(*r.Seed)
	}
	if err := g.req.Sampling.Validate(); err != nil {
		return bad("invalid_sampling", err.Error())
	}
	limit := s.eng.ContextLength()
	g.req.MaxTokens = limit // until a stop token, at most the context
	if n := r.MaxTokens; n != nil {
		if *n < 1 {
			return bad("invalid_max_tokens", fmt.Sprintf("max_tokens = %d: want 1 or more", *n))
		}
		g.req.MaxTokens = min(*n, limit)
	}
	for _, st := range g.stops {
		if st == "" {
			return bad("invalid_stop", "a stop string is empty")
		}
		// The stopper holds back and checks, each token, every end of the
		// text that could still begin a stop string: a long one costs each
		// token that much more.
		if len(st) > maxStopBytes {
			return bad("invalid_stop", fmt.Sprintf("a stop string of %d bytes: at most %d", len(st), maxStopBytes))
		}
	}
	if len(g.stops) > 16 {
		return bad("invalid_stop", "at most 16 stop strings")
	}
	return nil
}

// choiceWithoutTools refuses the tool_choice of a request without tools
// where it asks for a call ("required", a named function); "auto" and
// "none" ask nothing of it.
func choiceWithoutTools(choice json.RawMessage) error {
	var mode string
	if t := strings.TrimSpace(string(choice)); t != "" && t != "null" && (json.Unmarshal(choice, &mode) != nil || (mode != "auto" && mode != "none")) {
		return &httpError{http.StatusBadRequest, "invalid_tool_choice", fmt.Sprintf("tool_choice %s asks for a tool call, but the request has no tools", clip(t))}
	}
	return nil
}

// parseToolChoice reads tools and tool_choice: "auto" (the default),
// "none", "required", or {"type": "function", "function": {"name": NAME}}.
func (s *Server) parseToolChoice(r chatRequest, g *generation) error {
	if len(r.Tools) == 0 {
		return choiceWithoutTools(r.ToolChoice)
	}
	c := toolChoice{mode: "auto"}
	if len(r.ToolChoice) > 0 && string(r.ToolChoice) != "null" {
		var named struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(r.ToolChoice, &c.mode) != nil {
			if json.Unmarshal(r.ToolChoice, &named) != nil || named.Type != "function" || named.Function.Name == "" {
				return &httpError{http.StatusBadRequest, "invalid_tool_choice", `tool_choice must be "auto", "none", "required" or {"type": "function", "function": {"name": ...}}`}
			}
			c = toolChoice{mode: "named", name: named.Function.Name}
		}
	}
	tools, err := parseTools(r.Tools)
	if err != nil {
		return &httpError{http.StatusBadRequest, "invalid_tools", err.Error()}
	}
	g.tools, g.req.Tools = tools, r.Tools
	if err := g.chooseTools(c, s.eng.ToolCallPrefix); err != nil {
		return &httpError{http.StatusBadRequest, "invalid_tool_choice", err.Error()}
	}
	return nil
}

type httpError struct {
	status     int
	code, text string
}

func (e *httpError) Error() string { return e.text }

func jsonText(err error) string { return jsonmsg.Explain(err, nil).Error() }

// models is GET /v1/models.
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{
		map[string]any{"id": s.model, "object": "model", "created": 0, "owned_by": "bagel"}}})
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) { s.complete(w, r, true) }

func (s *Server) completions(w http.ResponseWriter, r *http.Request) { s.complete(w, r, false) }

// complete answers a chat completion (chat) or a completion.
func (s *Server) complete(w http.ResponseWriter, r *http.Request, chat bool) {
	start := time.Now()
	var req chatRequest
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&req); err != nil {
		bodyError(w, err)
		return
	}
	g, err := s.parse(req, chat)
	if err != nil {
		he := err.(*httpError)
		apiError(w, he.status, he.code, he.text)
		return
	}
	s.generate(w, r, start, g, fmt.Sprintf("bagel-%d", start.UnixNano()), func(a *answer, events <-chan engine.Event) outcome {
		if req.Stream {
			return a.stream(w, events, g.streamUsage)
		}
		return a.whole(w, events)
	})
}

// logRequest gives the log its line for a generation.
func (s *Server) logRequest(r *http.Request, start time.Time, o outcome) {
	if s.opt.Log == nil {
		return
	}
	status := http.StatusOK
	if o.err != nil && !o.sent {
		status, _ = errorStatus(o.err)
	}
	st := o.stats
	s.opt.Log(Entry{Time: start, Endpoint: r.URL.Path, Client: r.RemoteAddr, Status: status, PromptTokens: st.PromptTokens,
		ReusedTokens: st.ReusedPromptTokens, GeneratedTokens: st.GeneratedTokens, TokensPerSecond: finite(st.DecodeTokensPerSec)})
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}
