package server

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// ndjson posts body to path and returns the response's JSON lines.
func ndjson(t *testing.T, url, path, body string) (*http.Response, []map[string]any) {
	t.Helper()
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	return resp, lines
}

func TestOllamaChatStream(t *testing.T) {
	eng := &fakeEngine{script: hello, ctxLen: 4096}
	ts := serve(t, eng, Options{})
	resp, lines := ndjson(t, ts.URL, "/api/chat", `{"model":"tiny:latest","messages":[{"role":"user","content":"Hi"}],"options":{"temperature":0.2,"num_predict":50,"repeat_penalty":1.1}}`)
	if resp.Header.Get("Content-Type") != "application/x-ndjson" || len(lines) != 6 {
		t.Fatalf("%s, %d lines: want NDJSON, 5 pieces and the last", resp.Header.Get("Content-Type"), len(lines))
	}
	var content, thinking string
	for _, l := range lines[:5] {
		m := l["message"].(map[string]any)
		c, _ := m["content"].(string)
		th, _ := m["thinking"].(string)
		content, thinking = content+c, thinking+th
		if l["done"] != false {
			t.Errorf("a piece with done %v", l["done"])
		}
	}
	if content != "Hello, world!" || thinking != "The user greets. Reply kindly." {
		t.Errorf("content %q thinking %q", content, thinking)
	}
	last := lines[5]
	if last["done"] != true || last["done_reason"] != "stop" || last["eval_count"] != 5.0 || last["prompt_eval_count"] != 12.0 {
		t.Errorf("last line %v", last)
	}
	req := eng.requests()[0]
	if req.Sampling.Temperature != 0.2 || req.MaxTokens != 50 || req.Sampling.RepetitionPenalty != 1.1 || !req.EnableThinking {
		t.Errorf("engine request %+v", req)
	}
}

func TestOllamaWholeAndGenerate(t *testing.T) {
	eng := &fakeEngine{script: hello, ctxLen: 4096}
	ts := serve(t, eng, Options{})
	_, lines := ndjson(t, ts.URL, "/api/chat", `{"model":"tiny","stream":false,"think":false,"messages":[{"role":"user","content":"Hi"}]}`)
	if len(lines) != 1 {
		t.Fatalf("%d lines, want one object", len(lines))
	}
	m := lines[0]["message"].(map[string]any)
	if m["content"] != "Hello, world!" || m["thinking"] != "The user greets. Reply kindly." || lines[0]["done"] != true {
		t.Errorf("whole reply %v", lines[0])
	}
	if eng.requests()[0].EnableThinking {
		t.Error(`"think": false left thinking on`)
	}
	_, lines = ndjson(t, ts.URL, "/api/generate", `{"model":"tiny","system":"Be brief.","prompt":"Hi","stream":false}`)
	if lines[0]["response"] != "Hello, world!" || lines[0]["thinking"] != "The user greets. Reply kindly." {
		t.Errorf("generate %v", lines[0])
	}
	if msgs := eng.requests()[1].Messages; len(msgs) != 2 || msgs[0].Content != "Be brief." || msgs[1].Content != "Hi" {
		t.Errorf("generate's conversation %+v", msgs)
	}
	_, lines = ndjson(t, ts.URL, "/api/generate", `{"model":"tiny","prompt":"1, 2,","raw":true,"options":{"num_predict":2}}`)
	if r := eng.requests()[2]; r.Prompt != "1, 2," || len(r.Messages) != 0 || r.MaxTokens != 2 || lines[len(lines)-1]["done_reason"] != "length" {
		t.Errorf("raw generate %+v, last %v", r, lines[len(lines)-1])
	}
}

func TestOllamaToolCalls(t *testing.T) {
	eng := &fakeEngine{script: []piece{{weatherCall, false}}, ctxLen: 4096}
	ts := serve(t, eng, Options{})
	_, lines := ndjson(t, ts.URL, "/api/chat", `{"model":"tiny","stream":false,"tools":[`+string(weatherTool)+`],"messages":[{"role":"user","content":"Weather?"}]}`)
	calls, _ := lines[0]["message"].(map[string]any)["tool_calls"].([]any)
	if len(calls) != 1 {
		t.Fatalf("reply %v: want one tool call", lines[0])
	}
	fn := calls[0].(map[string]any)["function"].(map[string]any)
	args, _ := json.Marshal(fn["arguments"])
	var want any
	json.Unmarshal([]byte(weatherArgs), &want)
	wantText, _ := json.Marshal(want)
	if fn["name"] != "get_weather" || string(args) != string(wantText) {
		t.Errorf("call %v, want get_weather %s", fn, wantText)
	}
	// The call and its result go back as Ollama sends them.
	eng.reply([]piece{{"31°C.", false}}, nil)
	body := `{"model":"tiny","stream":false,"tools":[` + string(weatherTool) + `],"messages":[{"role":"user","content":"Weather?"},
		{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},
		{"role":"tool","content":"31°C"}]}`
	_, lines = ndjson(t, ts.URL, "/api/chat", body)
	msgs := eng.requests()[1].Messages
	if lines[0]["message"].(map[string]any)["content"] != "31°C." || len(msgs[1].ToolCalls) != 1 || string(msgs[1].ToolCalls[0].Arguments) != `{"city":"Paris"}` || msgs[2].Role != "tool" {
		t.Errorf("round trip: %v, engine got %+v", lines[0], msgs)
	}
}

func TestOllamaInfoAndErrors(t *testing.T) {
	ts := serve(t, &fakeEngine{script: hello, ctxLen: 4096}, Options{})
	for path, want := range map[string]string{"/api/version": `"version":"0.12.0"`, "/api/tags": `"name":"tiny"`, "/api/ps": `"model":"tiny"`, "/": "Bagel is running"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b := new(strings.Builder)
		bufio.NewReader(resp.Body).WriteTo(b)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(b.String(), want) {
			t.Errorf("GET %s: %d %q, want %q", path, resp.StatusCode, b, want)
		}
	}
	_, show := post(t, ts.URL, "/api/show", `{"model":"tiny"}`)
	info, _ := show["model_info"].(map[string]any)
	if arch, _ := info["general.architecture"].(string); info[arch+".context_length"] != 4096.0 {
		t.Errorf("show %v: want the context length under ARCH.context_length", show)
	}
	for _, c := range []struct {
		path, body string
		status     int
		want       string
	}{
		{"/api/show", `{"model":"llama3"}`, 404, `model "llama3" not found`},
		{"/api/chat", `{"model":"llama3","messages":[{"role":"user","content":"x"}]}`, 404, `model "llama3" not found`},
		{"/api/chat", `{"model":"tiny","format":"json","messages":[{"role":"user","content":"x"}]}`, 400, "format"},
		{"/api/chat", `{"model":"tiny","messages":[{"role":"user","content":"x","images":["aGk="]}]}`, 400, "not a PNG, JPEG, GIF or WebP"},
		{"/api/chat", `{"model":"tiny","messages":[{"role":"user","content":"x"}],"options":{"temperature":-3}}`, 400, "temperature"},
		{"/api/chat", `{"model":`, 400, "JSON"},
		{"/api/pull", `{"model":"tiny"}`, 404, "no endpoint"},
	} {
		resp, body := post(t, ts.URL, c.path, c.body)
		msg, _ := body["error"].(string)
		if resp.StatusCode != c.status || !strings.Contains(msg, c.want) {
			t.Errorf("%s %s: %d %v, want %d and {\"error\"} with %q", c.path, c.body, resp.StatusCode, body, c.status, c.want)
		}
	}
}

// TestOllamaLoadRequests: a chat without messages or a generate request
// without a prompt is Ollama's request to load the model: answered at once
// with done_reason "load", streamed or not, and nothing generated.
func TestOllamaLoadRequests(t *testing.T) {
	eng := &fakeEngine{script: hello, ctxLen: 4096}
	ts := serve(t, eng, Options{})
	for _, c := range []struct{ path, body string }{
		{"/api/chat", `{"model":"tiny","messages":[]}`},
		{"/api/chat", `{"model":"tiny:latest"}`},
		{"/api/generate", `{"model":"tiny"}`},
		{"/api/generate", `{"model":"tiny","prompt":"","stream":false}`},
	} {
		resp, lines := ndjson(t, ts.URL, c.path, c.body)
		if resp.StatusCode != 200 || len(lines) != 1 || lines[0]["done"] != true || lines[0]["done_reason"] != "load" {
			t.Errorf("%s %s: %d %v; want one line, done with done_reason load", c.path, c.body, resp.StatusCode, lines)
			continue
		}
		if msg, _ := lines[0]["message"].(map[string]any); c.path == "/api/chat" && (msg["role"] != "assistant" || msg["content"] != "") {
			t.Errorf("%s %s: message %v; want the assistant's, empty", c.path, c.body, lines[0]["message"])
		}
		if r, ok := lines[0]["response"]; c.path == "/api/generate" && (!ok || r != "") {
			t.Errorf("%s %s: response %v; want an empty one", c.path, c.body, r)
		}
	}
	if n := len(eng.requests()); n != 0 {
		t.Errorf("%d requests reached the engine; want none", n)
	}
	if resp, body := post(t, ts.URL, "/api/generate", `{"model":"llama3"}`); resp.StatusCode != 404 {
		t.Errorf("loading another model: %d %v; want 404", resp.StatusCode, body)
	}
}
