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

// Ollama's API (/api/*) for the tools that speak only it: /api/version,
// /api/tags, /api/ps, /api/show, and /api/chat and /api/generate, which
// stream newline-delimited JSON unless "stream": false. Errors are
// {"error": "..."}.

// ollamaVersion is the Ollama release whose API this matches (clients
// check it before using thinking and tools).
const ollamaVersion = "0.12.0"

type ollamaOptions struct {
	Temperature      *float64 `json:"temperature"`
	TopP             *float64 `json:"top_p"`
	TopK             *int     `json:"top_k"`
	MinP             *float64 `json:"min_p"`
	RepeatPenalty    *float64 `json:"repeat_penalty"`
	PresencePenalty  *float64 `json:"presence_penalty"`
	FrequencyPenalty *float64 `json:"frequency_penalty"`
	Seed             *int64   `json:"seed"`
	NumPredict       *int     `json:"num_predict"` // -1: no limit, -2: fill the context
	Stop             []string `json:"stop"`
}

type ollamaMessage struct {
	Role      string           `json:"role"`
	Content   string           `json:"content"`
	Thinking  string           `json:"thinking,omitempty"`
	Images    []string         `json:"images,omitempty"`
	ToolCalls []ollamaToolCall `json:"tool_calls,omitempty"`
}

type ollamaToolCall struct {
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"` // an object
	} `json:"function"`
}

type ollamaRequest struct {
	Model    string            `json:"model"`
	Messages []ollamaMessage   `json:"messages"` // /api/chat
	Prompt   *string           `json:"prompt"`   // /api/generate
	System   string            `json:"system"`   // /api/generate
	Raw      bool              `json:"raw"`      // /api/generate: the prompt without the template
	Images   []string          `json:"images"`   // /api/generate: base64 images the prompt is about
	Tools    []json.RawMessage `json:"tools"`
	Stream   *bool             `json:"stream"` // default true
	Think    json.RawMessage   `json:"think"`  // true, false, or "low"/"medium"/"high" (on)
	Format   json.RawMessage   `json:"format"`
	Options  ollamaOptions     `json:"options"`
}

// ollamaModel answers the names Ollama clients use for our model: the id,
// with or without ":latest".
func (s *Server) ollamaModel(name string) bool {
	return name == s.model || strings.TrimSuffix(name, ":latest") == s.model
}

func (s *Server) ollamaVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]string{"version": ollamaVersion})
}

// ollamaTags is /api/tags (and /api/ps): the one model served.
func (s *Server) ollamaTags(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]any{"models": []any{map[string]any{
		"name": s.model, "model": s.model, "modified_at": time.Unix(0, 0).UTC().Format(time.RFC3339), "size": 0, "digest": "",
		"details": map[string]any{"format": "mlx", "family": "qwen"}}}})
}

// ollamaShow is /api/show: the context length where clients look for it
// (model_info[ARCH.context_length], ARCH = general.architecture).
func (s *Server) ollamaShow(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string `json:"model"`
		Name  string `json:"name"` // older clients
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		bodyError(w, err)
		return
	}
	if name := req.Model + req.Name; !s.ollamaModel(name) {
		apiError(w, http.StatusNotFound, "not_found", fmt.Sprintf("model %q not found; this server serves %q", clip(name), s.model))
		return
	}
	writeJSON(w, map[string]any{
		"modelfile": "", "parameters": "", "template": "",
		"details":      map[string]any{"format": "mlx", "family": "qwen"},
		"model_info":   map[string]any{"general.architecture": "bagel", "bagel.context_length": s.eng.ContextLength()},
		"capabilities": []string{"completion", "tools", "thinking"},
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// parseOllama checks a chat (chat) or generate request that asks for a
// reply (not ollamaLoadsOnly).
func (s *Server) parseOllama(r ollamaRequest, chat bool) (*generation, error) {
	bad := func(format string, a ...any) (*generation, error) {
		return nil, &httpError{http.StatusBadRequest, "invalid_request", fmt.Sprintf(format, a...)}
	}
	if !s.ollamaModel(r.Model) {
		return nil, &httpError{http.StatusNotFound, "not_found", fmt.Sprintf("model %q not found; this server serves %q", clip(r.Model), s.model)}
	}
	if len(r.Format) > 0 && string(r.Format) != "null" && string(r.Format) != `""` {
		return bad("format (structured output) is not supported yet")
	}
	g := &generation{stops: r.Options.Stop, endpointKind: "chat.completion"}
	g.req.EnableThinking = true
	if string(r.Think) == "false" {
		g.req.EnableThinking = false
	}
	if chat {
		var rawImages [][]byte
		for i, m := range r.Messages {
			if len(m.Images) > 0 && m.Role != "user" {
				return bad("messages[%d] (%s) holds images: only user messages carry images", i, m.Role)
			}
			switch m.Role {
			case "system", "user", "assistant", "tool":
			default:
				return bad("messages[%d] has role %q; want system, user, assistant or tool", i, clip(m.Role))
			}
			msg := tokenizer.Message{Role: m.Role, Content: m.Content, Reasoning: m.Thinking}
			for j, b64 := range m.Images { // the images, then the text (as Ollama's own template puts them)
				data, err := imageFromBase64(b64)
				if err != nil {
					return bad("messages[%d].images[%d]: %v", i, j, err)
				}
				rawImages = append(rawImages, data)
				msg.Parts = append(msg.Parts, tokenizer.Part{Image: true})
			}
			if len(msg.Parts) > 0 {
				msg.Parts, msg.Content = append(msg.Parts, tokenizer.Part{Text: m.Content}), ""
			}
			for j, c := range m.ToolCalls {
				args := json.RawMessage(strings.TrimSpace(string(c.Function.Arguments)))
				if len(args) == 0 {
					args = json.RawMessage("{}")
				}
				if m.Role != "assistant" || c.Function.Name == "" || args[0] != '{' || !json.Valid(args) {
					return bad("messages[%d].tool_calls[%d]: want an assistant's call with a function name and an arguments object", i, j)
				}
				msg.ToolCalls = append(msg.ToolCalls, tokenizer.ToolCall{Name: c.Function.Name, Arguments: args})
			}
			g.req.Messages = append(g.req.Messages, msg)
		}
		if len(r.Tools) > 0 {
			tools, err := parseTools(r.Tools)
			if err != nil {
				return bad("%v", err)
			}
			g.tools, g.req.Tools = tools, r.Tools
		}
		if err := s.keepImages(g, rawImages); err != nil {
			return nil, err
		}
	} else {
		if r.Raw && len(r.Images) > 0 {
			return bad("images with raw: the template places images (leave raw out)")
		}
		if r.Raw {
			g.req.Prompt, g.endpointKind, g.req.EnableThinking = *r.Prompt, "text_completion", false
		} else {
			if r.System != "" {
				g.req.Messages = append(g.req.Messages, tokenizer.Message{Role: "system", Content: r.System})
			}
			user := tokenizer.Message{Role: "user", Content: *r.Prompt}
			var rawImages [][]byte
			for j, b64 := range r.Images {
				data, err := imageFromBase64(b64)
				if err != nil {
					return bad("images[%d]: %v", j, err)
				}
				rawImages = append(rawImages, data)
				user.Parts = append(user.Parts, tokenizer.Part{Image: true})
			}
			if len(user.Parts) > 0 {
				user.Parts, user.Content = append(user.Parts, tokenizer.Part{Text: *r.Prompt}), ""
			}
			g.req.Messages = append(g.req.Messages, user)
			if err := s.keepImages(g, rawImages); err != nil {
				return nil, err
			}
		}
	}
	var maxTokens *int
	if n := r.Options.NumPredict; n != nil && *n != -1 && *n != -2 {
		maxTokens = n
	}
	o := r.Options
	if err := s.settle(g, settings{Temperature: o.Temperature, TopP: o.TopP, TopK: o.TopK, MinP: o.MinP,
		RepetitionPenalty: o.RepeatPenalty, PresencePenalty: o.PresencePenalty, FrequencyPenalty: o.FrequencyPenalty,
		Seed: o.Seed, MaxTokens: maxTokens}); err != nil {
		return nil, err
	}
	return g, nil
}

func (s *Server) ollamaChat(w http.ResponseWriter, r *http.Request) { s.ollama(w, r, true) }

func (s *Server) ollamaGenerate(w http.ResponseWriter, r *http.Request) { s.ollama(w, r, false) }

// ollamaLoadsOnly says whether r only asks to load the model, as Ollama
// reads a chat without messages or a generate request without a prompt.
func ollamaLoadsOnly(r ollamaRequest, chat bool) bool {
	if chat {
		return len(r.Messages) == 0
	}
	return r.Prompt == nil || *r.Prompt == ""
}

// ollama answers /api/chat (chat) or /api/generate.
func (s *Server) ollama(w http.ResponseWriter, r *http.Request, chat bool) {
	start := time.Now()
	var req ollamaRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		bodyError(w, err)
		return
	}
	if s.ollamaModel(req.Model) && ollamaLoadsOnly(req, chat) {
		// Ollama's way to load a model ahead of its first request (clients
		// send it to warm a model up): the model here is loaded while the
		// server runs, so the answer is at once, with no reply generated.
		m := map[string]any{"model": req.Model, "created_at": time.Now().UTC().Format(time.RFC3339Nano), "done": true, "done_reason": "load"}
		if chat {
			m["message"] = ollamaMessage{Role: "assistant"}
		} else {
			m["response"] = ""
		}
		writeJSON(w, m)
		return
	}
	g, err := s.parseOllama(req, chat)
	if err != nil {
		he := err.(*httpError)
		apiError(w, he.status, he.code, he.text)
		return
	}
	s.generate(w, r, start, g, "", func(a *answer, events <-chan engine.Event) outcome {
		return a.ollamaReply(w, events, chat, req.Stream == nil || *req.Stream, start)
	})
}

// ollamaReply writes the reply: a JSON line a piece of text ("done": false)
// and a last line with done_reason and the counts; or, not streaming, the
// whole reply as one object. A chat's pieces are messages (content,
// thinking, tool_calls); a generate's are "response" and "thinking".
func (a *answer) ollamaReply(w http.ResponseWriter, events <-chan engine.Event, chat, streaming bool, start time.Time) outcome {
	out := newStreamWriter(w)
	started := false
	var content, thinking strings.Builder
	var calls []ollamaToolCall
	line := func(text string, isThinking bool, call *ollamaToolCall) map[string]any {
		m := map[string]any{"model": a.model, "created_at": time.Now().UTC().Format(time.RFC3339Nano), "done": false}
		switch {
		case chat:
			msg := ollamaMessage{Role: "assistant"}
			if isThinking {
				msg.Thinking = text
			} else {
				msg.Content = text
			}
			if call != nil {
				msg.ToolCalls = []ollamaToolCall{*call}
			}
			m["message"] = msg
		case isThinking:
			m["response"], m["thinking"] = "", text
		default:
			m["response"] = text
		}
		return m
	}
	write := func(v any) bool {
		if !started {
			started = true
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
		}
		b, err := json.Marshal(v)
		return err == nil && out.write(append(b, '\n')) // one line
	}
	o := a.read(events, func(text string, isThinking bool) bool {
		if !streaming {
			if isThinking {
				thinking.WriteString(text)
			} else {
				content.WriteString(text)
			}
			return true
		}
		return write(line(text, isThinking, nil))
	}, func(_ int, c toolCall) bool {
		var call ollamaToolCall
		call.Function.Name, call.Function.Arguments = c.name, json.RawMessage(c.arguments)
		if !streaming {
			calls = append(calls, call)
			return true
		}
		return write(line("", false, &call))
	})
	if o.err != nil {
		status, code := errorStatus(o.err)
		if !started {
			apiError(w, status, code, o.err.Error())
		} else {
			write(map[string]string{"error": o.err.Error()})
		}
		return o
	}
	last := line("", false, nil)
	if !streaming {
		last = line(content.String(), false, nil)
		if chat {
			msg := last["message"].(ollamaMessage)
			msg.Thinking, msg.ToolCalls = thinking.String(), calls
			last["message"] = msg
		} else if thinking.Len() > 0 {
			last["thinking"] = thinking.String()
		}
	}
	reason := o.reason
	if reason == "tool_calls" {
		reason = "stop"
	}
	st := o.stats
	decode := time.Duration(0)
	if st.DecodeTokensPerSec > 0 {
		decode = time.Duration(float64(st.GeneratedTokens) / st.DecodeTokensPerSec * float64(time.Second))
	}
	last["done"], last["done_reason"] = true, reason
	last["total_duration"] = time.Since(start).Nanoseconds()
	last["load_duration"] = 0
	last["prompt_eval_count"], last["prompt_eval_duration"] = st.PromptTokens, st.TimeToFirstToken.Nanoseconds()
	last["eval_count"], last["eval_duration"] = st.GeneratedTokens, decode.Nanoseconds()
	if len(o.malformed) > 0 {
		last["tool_call_error"] = strings.Join(o.malformed, "; ")
	}
	write(last)
	return o
}
