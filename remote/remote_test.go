package remote

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bagel/engine"
	"bagel/internal/testmodel"
	"bagel/server"
	"bagel/tokenizer"
)

// read collects a generation: its text, reasoning, the final event.
func read(t *testing.T, events <-chan engine.Event) (text, reasoning string, last engine.Event) {
	t.Helper()
	for ev := range events {
		switch ev.Kind {
		case engine.EventToken:
			if ev.Thinking {
				reasoning += ev.Text
			} else {
				text += ev.Text
			}
		case engine.EventDone, engine.EventError:
			last = ev
		}
	}
	return text, reasoning, last
}

var hi = engine.Request{Messages: []tokenizer.Message{{Role: "user", Content: "Hi"}}, MaxTokens: 8}

// serveVia serves e as "tiny" through Bagel's server (closed when the test
// ends) and returns a client of it.
func serveVia(t *testing.T, e *engine.Engine) *Client {
	t.Helper()
	s, err := server.New(e, "tiny", server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	c, err := New(ts.URL, "", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAgainstBagelsServer: a greedy reply through another Bagel's server
// (the tiny model on the CPU behind `bagel serve`'s handler) is the local
// engine's, word for word, with the server's token counts.
func TestAgainstBagelsServer(t *testing.T) {
	e, err := engine.Load(testmodel.Dir(t, "tiny-moe"), engine.Options{Backend: "cpu", ContextLength: 256, PromptCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	req := hi
	req.EnableThinking = false
	local, _, _ := read(t, e.Generate(context.Background(), req))
	c := serveVia(t, e)
	models, err := c.Models(context.Background())
	if err != nil || len(models) != 1 || models[0].ID != "tiny" || models[0].OwnedBy != "bagel" {
		t.Fatalf("models %+v (%v)", models, err)
	}
	text, _, last := read(t, c.Generate(context.Background(), req))
	if text != local || last.Kind != engine.EventDone || last.Reason != engine.ReasonLength {
		t.Errorf("remote %q (%v %s %v), local %q", text, last.Kind, last.Reason, last.Err, local)
	}
	if st := last.Stats; st.GeneratedTokens != 8 || st.PromptTokens == 0 || st.TimeToFirstToken <= 0 || !strings.HasPrefix(st.Backend, "remote: 127.0.0.1:") {
		t.Errorf("stats %+v", st)
	}
}

// fake serves one scripted stream: data lines as given.
func fake(t *testing.T, handler http.HandlerFunc) *Client {
	t.Helper()
	ts := httptest.NewServer(handler)
	t.Cleanup(ts.Close)
	c, err := New(ts.URL+"/v1", "key", "m")
	if err != nil {
		t.Fatal(err)
	}
	c.Idle = 300 * time.Millisecond
	return c
}

func stream(lines ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, l := range lines {
			fmt.Fprintf(w, "data: %s\n\n", l)
			w.(http.Flusher).Flush()
		}
	}
}

// TestDialects: the reasoning as reasoning_content (llama-server, SGLang),
// as reasoning (vLLM, Ollama) or between <think> tags in the content; the
// usage chunk's counts, cached tokens among them.
func TestDialects(t *testing.T) {
	usage := `{"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":12}}}`
	for name, lines := range map[string][]string{
		"reasoning_content": {`{"choices":[{"delta":{"role":"assistant","reasoning_content":"Think"}}]}`,
			`{"choices":[{"delta":{"reasoning_content":"ing."}}]}`, `{"choices":[{"delta":{"content":"Hello"}}]}`,
			`{"choices":[{"delta":{"content":"!"},"finish_reason":"stop"}]}`, usage, "[DONE]"},
		"reasoning": {`{"choices":[{"delta":{"reasoning":"Thinking."}}]}`, `{"choices":[{"delta":{"content":"Hello!"}}]}`,
			`{"choices":[{"delta":{},"finish_reason":"stop"}]}`, usage, "[DONE]"},
		"think tags": {`{"choices":[{"delta":{"content":"<think>\nThink"}}]}`, `{"choices":[{"delta":{"content":"ing.</think>\n\nHel"}}]}`,
			`{"choices":[{"delta":{"content":"lo!"},"finish_reason":"stop"}]}`, usage}, // no [DONE]: the finish reason ends it
	} {
		c := fake(t, stream(lines...))
		req := hi
		req.EnableThinking = true
		text, reasoning, last := read(t, c.Generate(context.Background(), req))
		if text != "Hello!" || strings.TrimSpace(reasoning) != "Thinking." || last.Kind != engine.EventDone || last.Reason != engine.ReasonStop {
			t.Errorf("%s: text %q reasoning %q last %v %s %v", name, text, reasoning, last.Kind, last.Reason, last.Err)
		}
		if st := last.Stats; st.PromptTokens != 20 || st.ReusedPromptTokens != 12 || st.GeneratedTokens != 4 {
			t.Errorf("%s: stats %+v", name, st)
		}
	}
}

// TestTheRequest: what the server is sent: the model, the messages, thinking
// through chat_template_kwargs, the sampling that is set, usage asked for,
// the key.
func TestTheRequest(t *testing.T) {
	var got string
	var auth string
	c := fake(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, auth = string(b), r.Header.Get("Authorization")
		stream(`{"choices":[{"delta":{"content":"ok"},"finish_reason":"stop"}]}`, "[DONE]")(w, r)
	})
	req := hi
	req.Sampling = engine.Sampling{Temperature: 0.6, TopP: 0.95, TopK: 20, RepetitionPenalty: 1, Seed: 7}
	read(t, c.Generate(context.Background(), req))
	for _, want := range []string{`"model":"m"`, `"messages":[{"role":"user","content":"Hi"}]`, `"enable_thinking":false`,
		`"temperature":0.6`, `"top_p":0.95`, `"top_k":20`, `"seed":7`, `"max_tokens":8`, `"include_usage":true`, `"stream":true`} {
		if !strings.Contains(got, want) {
			t.Errorf("the request lacks %s: %s", want, got)
		}
	}
	if strings.Contains(got, "repetition_penalty") || auth != "Bearer key" {
		t.Errorf("request %s, Authorization %q", got, auth)
	}
}

// TestFaults: every way a server can fail is a clear error, promptly,
// with the text sent before it kept by the reader.
func TestFaults(t *testing.T) {
	status := func(code int, body string, headers ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			for _, h := range headers {
				k, v, _ := strings.Cut(h, ": ")
				w.Header().Set(k, v)
			}
			w.WriteHeader(code)
			fmt.Fprint(w, body)
		}
	}
	hang := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"Par\"}}]}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	for _, c := range []struct {
		name    string
		handler http.HandlerFunc
		want    string
		partial string
	}{
		{"401", status(401, `{"error":{"message":"Invalid API key"}}`), "401 Unauthorized: Invalid API key (check the API key)", ""},
		{"404", status(404, `{"error":"model 'm' not found"}`), `model 'm' not found (is the model "m" served there`, ""},
		{"429", status(429, `{"error":{"message":"busy"}}`, "Retry-After: 3"), "try again after 3 s", ""},
		{"500", status(500, `oops`), "500 Internal Server Error: oops (a fault on the server's side)", ""},
		{"HTML", status(502, `<html><head><title>502 Bad Gateway</title></head></html>`), `an HTML page titled "502 Bad Gateway"`, ""},
		{"not a stream", status(200, `{"choices":[]}`, "Content-Type: application/json"), "not a stream of events", ""},
		{"cut off", stream(`{"choices":[{"delta":{"content":"Par"}}]}`), "ended before the reply did", "Par"},
		{"never ends", hang, "sent nothing for 300ms", "Par"},
		{"not JSON", stream(`{"choices":[{"delta":{"content":"Par"}}]}`, `{oops`), "an event that is not JSON", "Par"},
		{"error mid-stream", stream(`{"choices":[{"delta":{"content":"Par"}}]}`, `{"error":{"message":"out of memory"}}`), "stopped the reply: out of memory", "Par"},
	} {
		cl := fake(t, c.handler)
		start := time.Now()
		text, _, last := read(t, cl.Generate(context.Background(), hi))
		if last.Kind != engine.EventError || !strings.Contains(last.Err.Error(), c.want) || text != c.partial {
			t.Errorf("%s: %v %v, text %q; want an error with %q after %q", c.name, last.Kind, last.Err, text, c.want, c.partial)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s: took %s", c.name, took)
		}
	}

	// Nothing listening: refused.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	cl, _ := New("http://"+addr, "", "m")
	if _, _, last := read(t, cl.Generate(context.Background(), hi)); last.Err == nil || !strings.Contains(last.Err.Error(), "refused the connection") {
		t.Errorf("refused: %v", last.Err)
	}
	// A model list without end: refused by name, not read until memory runs out.
	defer func(was int64) { maxModelListBytes = was }(maxModelListBytes)
	maxModelListBytes = 1 << 20
	endless := fake(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object": "list", "data": [`)
		for {
			if _, err := io.WriteString(w, `{"id": "m", "object": "model"},`); err != nil {
				return
			}
		}
	})
	if _, err := endless.Models(context.Background()); err == nil || !strings.Contains(err.Error(), "model list runs past 1 MB") {
		t.Errorf("an endless model list: %v", err)
	}
	// A certificate the client does not trust.
	tls := httptest.NewTLSServer(stream())
	defer tls.Close()
	cl, _ = New(tls.URL, "", "m")
	if _, err := cl.Models(context.Background()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("TLS: %v", err)
	}
}

// TestCancelClosesTheStream: Esc on a remote reply ends it at once,
// cancelled, however long the server would go on.
func TestCancelClosesTheStream(t *testing.T) {
	closed := make(chan struct{})
	c := fake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; ; i++ {
			if _, err := fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n"); err != nil {
				break
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				close(closed)
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := c.Generate(ctx, hi)
	for ev := range events {
		if ev.Kind == engine.EventToken {
			cancel()
			break
		}
	}
	var last engine.Event
	for ev := range events {
		last = ev
	}
	if last.Kind != engine.EventDone || last.Reason != engine.ReasonCancelled {
		t.Errorf("after cancel: %v %s %v", last.Kind, last.Reason, last.Err)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Error("the server's stream was not closed")
	}
}

// TestAddresses: plain http only to this machine or a private network;
// the API's root found with or without /v1.
func TestAddresses(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:8484", "http://localhost:1234/v1", "http://192.168.1.20:8000/v1/", "http://mac-studio.local:8484", "https://api.example.com/v1"} {
		c, err := New(ok, "", "m")
		if err != nil || !strings.HasSuffix(c.endpoint("/models"), "/v1/models") {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"http://api.example.com/v1": "use https",
		"ftp://host":                "not a server address",
		"localhost:8080":            "not a server address",
	} {
		if _, err := New(bad, "", "m"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", bad, err, want)
		}
	}
}

// TestImagesToARemoteEngine: an image sent through the remote client to
// another Bagel's server reaches its model as an image_url part (a data:
// URL) and the greedy reply is the local engine's to the same image; a
// broken image is refused before anything is sent.
func TestImagesToARemoteEngine(t *testing.T) {
	dir := testmodel.VisionChat(t)
	e, err := engine.Load(dir, engine.Options{Backend: "cpu", ContextLength: 256, PromptCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	data, err := os.ReadFile(filepath.Join(testmodel.Root(t), "testdata", "vision", "big.png"))
	if err != nil {
		t.Fatal(err)
	}
	msgs := []tokenizer.Message{{Role: "user", Parts: []tokenizer.Part{{Image: true}, {Text: "What is it?"}}}}
	local, err := e.EncodeImage(data)
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := read(t, e.Generate(context.Background(), engine.Request{Messages: msgs, Images: []*engine.Image{local}, MaxTokens: 8}))
	c := serveVia(t, e)
	img, err := engine.NewRemoteImage(data)
	if err != nil {
		t.Fatal(err)
	}
	got, _, last := read(t, c.Generate(context.Background(), engine.Request{Messages: msgs, Images: []*engine.Image{img}, MaxTokens: 8}))
	if last.Kind != engine.EventDone || got != want {
		t.Errorf("through the server: %q (%v); the engine alone: %q", got, last.Err, want)
	}
	if _, err := engine.NewRemoteImage([]byte("\x89PNG\r\n\x1a\nbroken")); err == nil {
		t.Error("a broken image was taken for a remote engine")
	}
}
