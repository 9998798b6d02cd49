package server

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// post sends body to path with the headers given ("Name: value").
func post(t *testing.T, url, path, body string, headers ...string) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &out)
	return resp, out
}

const hi = `"messages":[{"role":"user","content":"Hi"}]`

// TestBadRequestsAreNamed: every request the server refuses gets OpenAI's
// error object with a status and a message that names the problem.
func TestBadRequestsAreNamed(t *testing.T) {
	ts := serve(t, &fakeEngine{script: hello, ctxLen: 64}, Options{MaxBody: 4096})
	for _, c := range []struct {
		name, path, body string
		headers          []string
		status           int
		want             string // in the error's message
	}{
		{"not JSON", "/v1/chat/completions", `{"messages":`, nil, 400, "JSON"},
		{"a field of the wrong type", "/v1/chat/completions", `{"messages":"Hi"}`, nil, 400, "messages"},
		{"no messages", "/v1/chat/completions", `{"messages":[]}`, nil, 400, "messages is empty"},
		{"another model", "/v1/chat/completions", `{"model":"gpt-9",` + hi + `}`, nil, 404, `"gpt-9" is not served here`},
		{"n = 3", "/v1/chat/completions", `{"n":3,` + hi + `}`, nil, 400, "n = 3"},
		{"JSON mode", "/v1/chat/completions", `{"response_format":{"type":"json_object"},` + hi + `}`, nil, 400, `response_format "json_object" is not supported`},
		{"a JSON schema", "/v1/chat/completions", `{"response_format":{"type":"json_schema","json_schema":{"name":"x"}},` + hi + `}`, nil, 400, `response_format "json_schema"`},
		{"a call required without tools", "/v1/chat/completions", `{"tool_choice":"required",` + hi + `}`, nil, 400, `tool_choice "required" asks for a tool call, but the request has no tools`},
		{"a named call without tools", "/v1/chat/completions", `{"tool_choice":{"type":"function","function":{"name":"f"}},` + hi + `}`, nil, 400, "the request has no tools"},
		{"best of 3", "/v1/completions", `{"prompt":"a","best_of":3}`, nil, 400, "best_of = 3"},
		{"echo", "/v1/completions", `{"prompt":"a","echo":true}`, nil, 400, "echo is not supported"},
		{"a suffix", "/v1/completions", `{"prompt":"a","suffix":"b"}`, nil, 400, "suffix"},
		{"tools", "/v1/chat/completions", `{"tools":[{"type":"function"}],` + hi + `}`, nil, 400, "tools"},
		{"logprobs not a bool", "/v1/chat/completions", `{"logprobs":"yes",` + hi + `}`, nil, 400, "logprobs must be true or false"},
		{"too many top logprobs", "/v1/chat/completions", `{"logprobs":true,"top_logprobs":30,` + hi + `}`, nil, 400, "top_logprobs = 30"},
		{"top logprobs alone", "/v1/chat/completions", `{"top_logprobs":2,` + hi + `}`, nil, 400, "top_logprobs needs logprobs"},
		{"completion logprobs not a count", "/v1/completions", `{"prompt":"a","logprobs":true}`, nil, 400, "logprobs must be a whole number"},
		{"an odd role", "/v1/chat/completions", `{"messages":[{"role":"robot","content":"x"}]}`, nil, 400, `role "robot"`},
		{"an image to fetch", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, nil, 400, `only data: URLs`},
		{"max_tokens 0", "/v1/chat/completions", `{"max_tokens":0,` + hi + `}`, nil, 400, "max_tokens = 0"},
		{"a negative temperature", "/v1/chat/completions", `{"temperature":-1,` + hi + `}`, nil, 400, "temperature"},
		{"an empty stop", "/v1/chat/completions", `{"stop":"",` + hi + `}`, nil, 400, "stop string is empty"},
		{"a stop string of 2000 bytes", "/v1/chat/completions", `{"stop":"` + strings.Repeat("x", 2000) + `",` + hi + `}`, nil, 400, "a stop string of 2000 bytes: at most 1024"},
		{"a stop of numbers", "/v1/chat/completions", `{"stop":[1,2],` + hi + `}`, nil, 400, "stop must be a string"},
		{"presence penalty out of range", "/v1/chat/completions", `{"presence_penalty":3,` + hi + `}`, nil, 400, "presence penalty must be between"},
		{"no prompt", "/v1/completions", `{}`, nil, 400, "prompt is missing"},
		{"two prompts", "/v1/completions", `{"prompt":["a","b"]}`, nil, 400, "one prompt a request"},
		{"a huge body", "/v1/chat/completions", `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, nil, 413, "larger than 4096 bytes"},
		{"a rebinding page's Host", "/v1/chat/completions", `{` + hi + `}`, []string{"Host: evil.example:8484"}, 403, `Host "evil.example:8484"`},
		{"a web page", "/v1/chat/completions", `{` + hi + `}`, []string{"Origin: https://evil.example"}, 403, "web pages"},
		{"no such endpoint", "/v1/embeddings", `{}`, nil, 404, "no endpoint POST /v1/embeddings"},
	} {
		resp, body := post(t, ts.URL, c.path, c.body, c.headers...)
		e, _ := body["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if resp.StatusCode != c.status || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %q; want %d and a message with %q", c.name, resp.StatusCode, msg, c.status, c.want)
		}
	}
}

// TestPlainOptionsAreServed: the options the server refuses in their other
// values are served at their plain ones (text, one completion, no echo, no
// suffix), as clients send them by default.
func TestPlainOptionsAreServed(t *testing.T) {
	ts := serve(t, &fakeEngine{script: hello, ctxLen: 64}, Options{})
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"response_format":{"type":"text"},` + hi + `}`},
		{"/v1/chat/completions", `{"response_format":null,` + hi + `}`},
		{"/v1/chat/completions", `{"tool_choice":"auto",` + hi + `}`},
		{"/v1/chat/completions", `{"tool_choice":"none",` + hi + `}`},
		{"/v1/completions", `{"prompt":"a","best_of":1,"echo":false,"suffix":null}`},
		{"/v1/completions", `{"prompt":"a","suffix":""}`},
	} {
		if resp, body := post(t, ts.URL, c.path, c.body); resp.StatusCode != 200 {
			t.Errorf("%s %s: %d %v; want 200", c.path, c.body, resp.StatusCode, body)
		}
	}
}

func TestAllowedOriginGetsCORS(t *testing.T) {
	ts := serve(t, &fakeEngine{script: hello, ctxLen: 64}, Options{AllowOrigins: []string{"http://localhost:3000"}})
	resp, _ := post(t, ts.URL, "/v1/chat/completions", `{`+hi+`}`, "Origin: http://localhost:3000")
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" {
		t.Errorf("%d, Allow-Origin %q: want 200 and the origin", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
}

func TestNonLoopbackNeedsAKey(t *testing.T) {
	for _, host := range []string{"0.0.0.0", "192.168.1.20", "::"} {
		if _, err := New(&fakeEngine{}, "tiny", Options{Host: host}); err == nil || !strings.Contains(err.Error(), "API key") {
			t.Errorf("host %s without a key: %v, want an error asking for an API key", host, err)
		}
	}
	for _, host := range []string{"127.0.0.1", "localhost", "::1", "[::1]"} {
		if err := (Options{Host: host}).Check(); err != nil {
			t.Errorf("host %s: %v", host, err)
		}
	}
	if err := (Options{Host: "0.0.0.0", APIKey: "k"}).Check(); err != nil {
		t.Errorf("0.0.0.0 with a key: %v", err)
	}
}

// TestStopStrings: a stop string split across tokens ends the reply before
// it, the generation stops, and nothing past it is sent, streamed or not.
func TestStopStrings(t *testing.T) {
	// The gate lets the engine give the three tokens that reach the stop
	// string and no more, so the generation can end only by being stopped.
	script := []piece{{"Once", false}, {" upon a ti", false}, {"me, the", false}, {" end", false}}
	eng := &fakeEngine{script: script, gate: threeTokens(), ctxLen: 64}
	ts := serve(t, eng, Options{})
	_, body := post(t, ts.URL, "/v1/chat/completions", `{"stop":["time","never"],`+hi+`}`)
	ch := body["choices"].([]any)[0].(map[string]any)
	if got := ch["message"].(map[string]any)["content"]; got != "Once upon a " || ch["finish_reason"] != "stop" {
		t.Errorf("content %q finish %v; want \"Once upon a \", stop", got, ch["finish_reason"])
	}
	if eng.cancels() != 1 {
		t.Errorf("%d generations cancelled; the stop string should end the one", eng.cancels())
	}
	eng.reply(script, threeTokens())
	events := stream(t, ts.URL, `{"stream":true,"stop":"time",`+hi+`}`)
	if text := deltas(events); text != "Once upon a " {
		t.Errorf("streamed %q, want \"Once upon a \"", text)
	}
	if eng.cancels() != 2 {
		t.Errorf("%d generations cancelled; the streamed stop should end the second", eng.cancels())
	}
	// A tail that only begins a stop string is sent once the reply ends.
	eng.reply([]piece{{"it is ti", false}}, nil)
	if text := deltas(stream(t, ts.URL, `{"stream":true,"stop":"time",`+hi+`}`)); text != "it is ti" {
		t.Errorf("streamed %q, want the held-back tail too", text)
	}
}

// threeTokens is a gate that lets a fake engine give three tokens.
func threeTokens() chan struct{} {
	g := make(chan struct{}, 3)
	for range 3 {
		g <- struct{}{}
	}
	return g
}

// stream posts a streaming request and returns its data lines.
func stream(t *testing.T, url, body string) []string {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q, want text/event-stream", ct)
	}
	var data []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, d)
		}
	}
	if len(data) == 0 || data[len(data)-1] != "[DONE]" {
		t.Fatalf("stream %q does not end with [DONE]", data)
	}
	return data
}

// deltas is the content a chat stream carried.
func deltas(data []string) string {
	var b strings.Builder
	for _, d := range data {
		var c struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(d), &c) == nil && len(c.Choices) > 0 {
			b.WriteString(c.Choices[0].Delta.Content)
		}
	}
	return b.String()
}

// TestQueue: one request generates, Queue wait in order, more get 429 with
// Retry-After; a client that leaves stops its generation and the next one
// runs.
func TestQueue(t *testing.T) {
	eng := &fakeEngine{script: hello, ctxLen: 64, gate: make(chan struct{})}
	ts, s := serveBoth(t, eng, Options{Queue: 1})
	results := make(chan int, 2)
	go func() {
		resp, _ := post(t, ts.URL, "/v1/chat/completions", `{`+hi+`}`)
		results <- resp.StatusCode
	}()
	waitFor(t, func() bool { return len(eng.requests()) == 1 }) // the first generates (held at its first token)
	go func() {
		resp, _ := post(t, ts.URL, "/v1/chat/completions", `{`+hi+`}`)
		results <- resp.StatusCode
	}()
	// The second waits (Queue 1); a third is turned away.
	waitFor(t, func() bool { return s.waiting.Load() == 1 })
	third, _ := post(t, ts.URL, "/v1/chat/completions", `{`+hi+`}`)
	if third.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a third request: %d, want 429", third.StatusCode)
	}
	if third.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	if n := len(eng.requests()); n != 1 {
		t.Fatalf("%d generations started; the queued request must wait", n)
	}
	close(eng.gate) // both run to the end, one after the other
	for range 2 {
		if code := <-results; code != 200 {
			t.Errorf("a queued request got %d", code)
		}
	}
}

// TestParallelRunsThatManyAtOnce: with Parallel 2, two requests generate
// at once (the engine sees both before either ends) and a third waits.
func TestParallelRunsThatManyAtOnce(t *testing.T) {
	eng := &fakeEngine{script: hello, ctxLen: 64, gate: make(chan struct{})}
	ts, s := serveBoth(t, eng, Options{Queue: 4, Parallel: 2})
	results := make(chan int, 3)
	for range 3 {
		go func() {
			resp, _ := post(t, ts.URL, "/v1/chat/completions", `{`+hi+`}`)
			results <- resp.StatusCode
		}()
	}
	waitFor(t, func() bool { return len(eng.requests()) == 2 && s.waiting.Load() == 1 })
	if running, waiting := s.Busy(); running != 2 || waiting != 1 {
		t.Errorf("Busy = %d running, %d waiting; want 2, 1", running, waiting)
	}
	close(eng.gate)
	for range 3 {
		if code := <-results; code != 200 {
			t.Errorf("a request got %d", code)
		}
	}
}

func TestClientGoneStopsTheGeneration(t *testing.T) {
	eng := &fakeEngine{script: hello, ctxLen: 64, gate: make(chan struct{}, 1)}
	ts := serve(t, eng, Options{})
	eng.gate <- struct{}{} // one token, then it waits
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true,`+hi+`}`))
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	if !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first line %q", line)
	}
	resp.Body.Close() // the client leaves mid-reply
	waitFor(t, func() bool { return eng.cancels() == 1 })
	// The engine's turn passed on: the next request is answered.
	eng.reply([]piece{{"ok", false}}, nil)
	if r, body := post(t, ts.URL, "/v1/chat/completions", `{`+hi+`}`); r.StatusCode != 200 {
		t.Errorf("the next request: %d %v", r.StatusCode, body)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCloseStopsTheGenerations: Busy counts the request generating and the
// ones waiting (and Options.Busy hears each change); Close stops the
// generation under way, so an app that turns its server off or unloads the
// model is not held by a client's long reply.
func TestCloseStopsTheGenerations(t *testing.T) {
	eng := &fakeEngine{script: hello, gate: make(chan struct{}), ctxLen: 64}
	var mu sync.Mutex
	var heard [][2]int
	ts, s := serveBoth(t, eng, Options{Busy: func(running, waiting int) {
		mu.Lock()
		heard = append(heard, [2]int{running, waiting})
		mu.Unlock()
	}})
	done := make(chan int, 2)
	for range 2 {
		go func() {
			resp, _ := post(t, ts.URL, "/v1/chat/completions", `{`+hi+`}`)
			done <- resp.StatusCode
		}()
	}
	waitFor(t, func() bool { r, w := s.Busy(); return r == 1 && w == 1 })
	s.Close()
	for range 2 {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("a request still runs after Close")
		}
	}
	if eng.cancels() != 1 {
		t.Errorf("%d generations stopped by Close, want the one running", eng.cancels())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heard) == 0 || heard[len(heard)-1] != [2]int{0, 0} {
		t.Errorf("Busy heard %v, ending with 0 running and 0 waiting", heard)
	}
}

// TestPenaltiesReachTheEngine: presence_penalty and frequency_penalty are the
// engine's (OpenAI's and Ollama's names).
func TestPenaltiesReachTheEngine(t *testing.T) {
	eng := &fakeEngine{script: hello, ctxLen: 64}
	ts := serve(t, eng, Options{})
	post(t, ts.URL, "/v1/chat/completions", `{"presence_penalty":0.5,"frequency_penalty":0.25,`+hi+`}`)
	if resp, body := post(t, ts.URL, "/api/chat", `{"model":"tiny","stream":false,"options":{"presence_penalty":1.5,"frequency_penalty":-0.5},`+hi+`}`); resp.StatusCode != 200 {
		t.Fatalf("/api/chat: %d %v", resp.StatusCode, body)
	}
	for i, want := range [][2]float64{{0.5, 0.25}, {1.5, -0.5}} {
		s := eng.requests()[i].Sampling
		if s.PresencePenalty != want[0] || s.FrequencyPenalty != want[1] {
			t.Errorf("request %d: presence %g frequency %g, want %v", i, s.PresencePenalty, s.FrequencyPenalty, want)
		}
	}
}
