package remote

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"bagel/engine"
)

// chatMessage is a message as the request carries it: its content a string,
// or with images a list of text and image_url parts.
type chatMessage struct {
	Role      string            `json:"role"`
	Content   any               `json:"content"`
	ToolCalls []json.RawMessage `json:"tool_calls,omitempty"`
}

// contentPart is one part of a message's content list.
type contentPart struct {
	Type     string         `json:"type"`
	Text     string         `json:"text,omitempty"`
	ImageURL *contentURLRef `json:"image_url,omitempty"`
}

type contentURLRef struct {
	URL string `json:"url"`
}

// messageContent is m's content as the request carries it: its text, or
// with image parts a list whose images, in order, are the next of images
// (the request's, as the messages hold them), sent as data: URLs.
func messageContent(m engine.Message, images *[]*engine.Image) (any, error) {
	if len(m.Parts) == 0 {
		return m.Content, nil
	}
	var parts []contentPart
	for _, p := range m.Parts {
		if !p.Image {
			parts = append(parts, contentPart{Type: "text", Text: p.Text})
			continue
		}
		if len(*images) == 0 {
			return nil, errors.New("the messages hold more images than the request carries")
		}
		img := (*images)[0]
		*images = (*images)[1:]
		if img.Data() == nil {
			return nil, errors.New("an image without its file's bytes cannot be sent to a remote engine")
		}
		url := "data:" + img.MediaType() + ";base64," + base64.StdEncoding.EncodeToString(img.Data())
		parts = append(parts, contentPart{Type: "image_url", ImageURL: &contentURLRef{URL: url}})
	}
	return parts, nil
}

// body is the request for req: its messages (or raw prompt as one user
// message), its sampling (fields left at their off value are not sent, so
// the server's defaults hold), thinking through chat_template_kwargs, and
// usage in the stream's last chunk.
func (c *Client) body(req engine.Request) ([]byte, error) {
	if len(req.PromptIDs) > 0 {
		return nil, errors.New("a remote engine takes messages, not token ids")
	}
	var msgs []chatMessage
	images := req.Images
	for _, m := range req.Messages {
		content, err := messageContent(m, &images)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, chatMessage{Role: m.Role, Content: content})
	}
	if len(images) > 0 {
		return nil, fmt.Errorf("%d images more than the messages place", len(images))
	}
	if len(msgs) == 0 {
		msgs = []chatMessage{{Role: "user", Content: req.Prompt}}
	}
	b := map[string]any{"model": c.model, "messages": msgs, "stream": true,
		"stream_options":       map[string]any{"include_usage": true},
		"chat_template_kwargs": map[string]any{"enable_thinking": req.EnableThinking}}
	s := req.Sampling
	b["temperature"] = s.Temperature
	if s.TopP > 0 && s.TopP < 1 {
		b["top_p"] = s.TopP
	}
	if s.TopK > 0 {
		b["top_k"] = s.TopK
	}
	if s.MinP > 0 {
		b["min_p"] = s.MinP
	}
	if r := s.RepetitionPenalty; r != 0 && r != 1 {
		b["repetition_penalty"] = r
	}
	if s.PresencePenalty != 0 {
		b["presence_penalty"] = s.PresencePenalty
	}
	if s.FrequencyPenalty != 0 {
		b["frequency_penalty"] = s.FrequencyPenalty
	}
	if s.Seed != 0 {
		b["seed"] = int64(s.Seed & (1<<31 - 1)) // llama-server reads 32 bits, JSON readers 53
	}
	if req.MaxTokens > 0 {
		b["max_tokens"] = req.MaxTokens
	}
	if len(req.Tools) > 0 {
		b["tools"] = req.Tools
	}
	return json.Marshal(b)
}

// chunk is one streamed chunk, of any dialect.
type chunk struct {
	Choices []struct {
		Delta struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// Generate streams the reply to req as the local engine's events: a token
// event a delta (Token 0: the server's ids are not known here), stats now
// and then and at the end, then Done — or Error with what went wrong; the
// text sent before an error stays the caller's. Cancelling ctx closes the
// stream at once (Done, cancelled).
func (c *Client) Generate(ctx context.Context, req engine.Request) <-chan engine.Event {
	out := make(chan engine.Event, 1)
	go func() {
		defer close(out)
		r := &reading{c: c, out: out, ctx: ctx, start: time.Now()}
		r.st = engine.Stats{Backend: "remote: " + c.base.Host, BackendReason: "measured at the client, over the network"}
		if err := r.run(req); err != nil {
			if ctx.Err() != nil {
				r.done(engine.ReasonCancelled)
				return
			}
			r.send(engine.Event{Kind: engine.EventError, Err: err, Stats: r.st})
		}
	}()
	return out
}

// reading is one reply being read.
type reading struct {
	c            *Client
	out          chan engine.Event
	ctx          context.Context
	start        time.Time
	first, last  time.Time
	deltas       int
	st           engine.Stats
	lastStats    time.Time
	finish       string
	usageTokens  int
	thinkingTags bool // the reasoning arrives inside <think>…</think> in the content
	inThink      bool
}

func (r *reading) send(ev engine.Event) bool {
	select {
	case r.out <- ev:
		return true
	case <-r.ctx.Done():
		return false
	}
}

func (r *reading) run(req engine.Request) error {
	body, err := r.c.body(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	hreq, err := r.c.newRequest(ctx, http.MethodPost, "/chat/completions", strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	resp, err := r.c.http.Do(hreq)
	if err != nil {
		return r.c.reach(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return r.c.statusError(resp)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return fmt.Errorf("the server %s answered %q, not a stream of events (is it an OpenAI-compatible API?)", r.c.base.Host, ct)
	}
	// A silent stream is cut after Idle: the watchdog cancels the request,
	// and the read below fails.
	idle := time.AfterFunc(r.c.Idle, cancel)
	defer idle.Stop()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	r.thinkingTags = req.EnableThinking
	for sc.Scan() {
		idle.Reset(r.c.Idle)
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue // comments, event names, blank lines
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			return r.end()
		}
		if err := r.chunk(data); err != nil {
			return err
		}
		if r.ctx.Err() != nil {
			return r.ctx.Err()
		}
	}
	if r.ctx.Err() != nil {
		return r.ctx.Err()
	}
	if ctx.Err() != nil {
		return fmt.Errorf("the server %s sent nothing for %s: the reply was cut off", r.c.base.Host, r.c.Idle)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("the stream from %s broke off: %v", r.c.base.Host, err)
	}
	if r.finish != "" { // no [DONE] (Ollama's /v1 ends so at times): the reply is whole
		return r.end()
	}
	return fmt.Errorf("the stream from %s ended before the reply did (the connection closed)", r.c.base.Host)
}

// chunk reads one data line.
func (r *reading) chunk(data string) error {
	var ch chunk
	if err := json.Unmarshal([]byte(data), &ch); err != nil {
		return fmt.Errorf("the server %s sent an event that is not JSON (%q)", r.c.base.Host, clip(data))
	}
	if len(ch.Error) > 0 && string(ch.Error) != "null" {
		return fmt.Errorf("the server %s stopped the reply: %s", r.c.base.Host, serverMessage([]byte(`{"error":`+string(ch.Error)+`}`)))
	}
	if u := ch.Usage; u != nil {
		r.st.PromptTokens, r.usageTokens = u.PromptTokens, u.CompletionTokens
		if u.PromptTokensDetails != nil {
			r.st.ReusedPromptTokens = u.PromptTokensDetails.CachedTokens
		}
	}
	for _, c := range ch.Choices {
		if c.FinishReason != nil && *c.FinishReason != "" {
			r.finish = *c.FinishReason
		}
		if t := c.Delta.ReasoningContent + c.Delta.Reasoning; t != "" {
			r.token(t, true)
		}
		if t := c.Delta.Content; t != "" {
			r.content(t)
		}
	}
	return nil
}

// content passes text on, reading a leading <think>…</think> as reasoning
// (servers that leave the model's tags in the text).
func (r *reading) content(t string) {
	if r.thinkingTags && r.deltas == 0 && !r.inThink {
		if rest, ok := strings.CutPrefix(strings.TrimLeft(t, " \n"), "<think>"); ok {
			r.inThink, t = true, rest
		} else if strings.TrimSpace(t) != "" {
			r.thinkingTags = false
		}
	}
	if r.inThink {
		before, after, closed := strings.Cut(t, "</think>")
		if before != "" {
			r.token(before, true)
		}
		if !closed {
			return
		}
		r.inThink, r.thinkingTags, t = false, false, strings.TrimLeft(after, "\n")
	}
	if t != "" {
		r.token(t, false)
	}
}

// token sends a delta and keeps the figures.
func (r *reading) token(text string, thinking bool) {
	now := time.Now()
	if r.deltas == 0 {
		r.first = now
		r.st.TimeToFirstToken = now.Sub(r.start)
	}
	r.last = now
	r.deltas++
	r.st.GeneratedTokens = r.deltas
	r.rate()
	r.send(engine.Event{Kind: engine.EventToken, Text: text, Thinking: thinking})
	if now.Sub(r.lastStats) >= 200*time.Millisecond {
		r.lastStats = now
		r.send(engine.Event{Kind: engine.EventStats, Stats: r.st})
	}
}

// rate is the decode rate after the first token, as the client saw it.
func (r *reading) rate() {
	if span := r.last.Sub(r.first).Seconds(); r.deltas > 1 && span > 0 {
		r.st.DecodeTokensPerSec = float64(r.deltas-1) / span
	}
}

// end finishes a whole reply: the server's token count where it gave one.
func (r *reading) end() error {
	if r.usageTokens > 0 {
		r.st.GeneratedTokens = r.usageTokens
		if span := r.last.Sub(r.first).Seconds(); r.usageTokens > 1 && span > 0 {
			r.st.DecodeTokensPerSec = float64(r.usageTokens-1) / span
		}
	}
	r.st.KVLength = r.st.PromptTokens + r.st.GeneratedTokens
	switch r.finish {
	case "length":
		r.done(engine.ReasonLength)
	default:
		r.done(engine.ReasonStop)
	}
	return nil
}

// done sends the final event; after a cancel it takes the place of a
// token the reader left (this goroutine is the only sender, so it cannot
// block), as the engine's does.
func (r *reading) done(reason string) {
	if r.ctx.Err() != nil {
		select {
		case <-r.out:
		default:
		}
	}
	r.out <- engine.Event{Kind: engine.EventDone, Reason: reason, Stats: r.st}
}
