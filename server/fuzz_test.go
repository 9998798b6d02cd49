package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fuzzEndpoints are the routes that read a body a client wrote.
var fuzzEndpoints = []string{
	"/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/messages",
	"/v1/messages/count_tokens", "/api/chat", "/api/generate", "/api/show",
}

// FuzzRequestBodies sends any body to every route that reads one: the
// server must not panic, must answer 200 or a 4xx (nothing a client sends
// is the server's fault), and every refusal must carry its API's error
// object with a message that says what was wrong.
func FuzzRequestBodies(f *testing.F) {
	tools := `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}}}}}]`
	png := "data:image/png;base64,iVBORw0KGgo="
	for _, seed := range []struct {
		route int
		body  string
	}{
		{0, `{"messages":[{"role":"user","content":"Hi"}]}`},
		{0, `{"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Hi"}]}`},
		{0, `{"logprobs":true,"top_logprobs":2,"max_tokens":3,"stop":["!"],"messages":[{"role":"user","content":"Hi"}]}`},
		{0, `{` + tools + `,"tool_choice":"auto","messages":[{"role":"user","content":"Hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":\"x\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"42"}]}`},
		{0, `{"messages":[{"role":"user","content":[{"type":"text","text":"What is it?"},{"type":"image_url","image_url":{"url":"` + png + `"}}]}]}`},
		{0, `{"response_format":{"type":"json_object"},"reasoning_effort":"none","seed":7,"temperature":0.5,"top_p":0.9,"messages":[{"role":"user","content":"Hi"}]}`},
		{1, `{"prompt":"Once upon","max_tokens":4,"logprobs":2,"echo":false}`},
		{2, `{"input":"Hi","max_output_tokens":3,"stream":true}`},
		{2, `{"instructions":"You are terse.","reasoning":{"effort":"none"},"input":[{"role":"user","content":"Name a colour."},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"ok"}],"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]}`},
		{3, `{"model":"tiny","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`},
		{3, `{"max_tokens":5,"stream":true,"thinking":{"type":"enabled","budget_tokens":1024},"system":[{"type":"text","text":"Be kind."}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"done"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]}`},
		{4, `{"messages":[{"role":"user","content":"count me"}],"tools":[{"name":"f","input_schema":{"type":"object"}}]}`},
		{5, `{"model":"tiny","messages":[{"role":"user","content":"Hi","images":["iVBORw0KGgo="]}],"options":{"num_predict":3,"temperature":0}}`},
		{5, `{"model":"tiny","stream":false,"think":false,"format":"json","messages":[{"role":"user","content":"Hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`},
		{6, `{"model":"tiny","prompt":"Hi","system":"Be terse.","raw":false,"options":{"stop":["."],"seed":1}}`},
		{7, `{"model":"tiny"}`},
	} {
		f.Add(uint8(seed.route), []byte(seed.body))
	}
	s, err := New(&fakeEngine{script: hello, ctxLen: 256}, "tiny", Options{MaxBody: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := fuzzEndpoints[int(route)%len(fuzzEndpoints)]
		req := httptest.NewRequest(http.MethodPost, "http://localhost"+path, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code == http.StatusOK {
			return
		}
		if rec.Code < 400 || rec.Code >= 500 {
			t.Fatalf("POST %s %q: status %d (%s); want 200 or a 4xx", path, body, rec.Code, rec.Body.Bytes())
		}
		if msg := errorMessage(path, rec.Body.Bytes()); strings.TrimSpace(msg) == "" {
			t.Fatalf("POST %s %q: %d without an error message: %s", path, body, rec.Code, rec.Body.Bytes())
		}
	})
}

// errorMessage is the message of an error body in the shape of path's API.
func errorMessage(path string, b []byte) string {
	var out struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(b, &out) != nil {
		return ""
	}
	if strings.HasPrefix(path, "/api/") { // Ollama: {"error": "..."}
		var msg string
		json.Unmarshal(out.Error, &msg)
		return msg
	}
	var e struct {
		Message string `json:"message"`
	}
	json.Unmarshal(out.Error, &e) // OpenAI and Anthropic: {"error": {"message": ...}}
	return e.Message
}

// FuzzToolScanner streams any reply text through the tool-call scanner in
// pieces cut where the fuzzer says: the text and calls must not depend on
// where the pieces were cut (a tag split across tokens), every call's
// arguments must be one JSON object, and no text may be lost: the text sent
// with the calls' blocks taken out is the reply.
func FuzzToolScanner(f *testing.F) {
	for _, seed := range []string{
		"Sure.<tool_call>\n<function=f>\n<parameter=a>\nx\n</parameter>\n<parameter=n>\n3\n</parameter>\n</function>\n</tool_call>done",
		`<tool_call>{"name": "f", "arguments": {"a": "x"}}</tool_call><tool_call>{"name":"g","arguments":"{}"}</tool_call>`,
		"<tool_call>\n<function=f>\n<parameter=o>\n{\"k\": [1, 2]}\n</parameter>\n</function>\n</tool_call><tool_c",
		"a <tool_call><function=nope></function></tool_call> b <tool_call>never closed",
	} {
		f.Add(seed, []byte{3, 7, 1, 12})
	}
	scan := func(text string, cuts []byte) (string, []toolCall) {
		s := toolScanner{tools: fuzzTools}
		var out strings.Builder
		var calls []toolCall
		for len(text) > 0 {
			n := len(text)
			if len(cuts) > 0 {
				n, cuts = min(n, int(cuts[0])+1), cuts[1:]
			}
			o, c, _ := s.add(text[:n])
			out.WriteString(o)
			calls = append(calls, c...)
			text = text[n:]
		}
		o, _ := s.flush()
		out.WriteString(o)
		return out.String(), calls
	}
	f.Fuzz(func(t *testing.T, text string, cuts []byte) {
		whole, wholeCalls := scan(text, nil)
		out, calls := scan(text, cuts)
		if out != whole || len(calls) != len(wholeCalls) {
			t.Fatalf("%q cut at %v: text %q, %d calls; all at once %q, %d calls", text, cuts, out, len(calls), whole, len(wholeCalls))
		}
		for i, c := range calls {
			if c != wholeCalls[i] {
				t.Fatalf("%q cut at %v: call %d %+v; all at once %+v", text, cuts, i, c, wholeCalls[i])
			}
			var args map[string]any
			if err := json.Unmarshal([]byte(c.arguments), &args); err != nil {
				t.Fatalf("%q: call %d's arguments %q are not a JSON object: %v", text, i, c.arguments, err)
			}
		}
		if len(out)+countCallBytes(text, len(calls)) != len(text) {
			t.Fatalf("%q: %d bytes of text and %d calls; the reply has %d bytes", text, len(out), len(calls), len(text))
		}
	})
}

// fuzzTools are the functions FuzzToolScanner's replies may call.
var fuzzTools = toolSchemas{"f": {"a": "string", "n": "integer", "o": "object", "b": "boolean"}, "g": {}}

// countCallBytes is the length of text's first n blocks that parse (each an
// opening tag up to the first closing one, as the scanner finds them): the
// bytes the scanner takes out of the text as calls.
func countCallBytes(text string, n int) int {
	total := 0
	for n > 0 {
		i := strings.Index(text, callOpen)
		if i < 0 {
			break
		}
		rest := text[i+len(callOpen):]
		j := strings.Index(rest, callClose)
		if j < 0 {
			break
		}
		if _, err := fuzzTools.parse(rest[:j]); err == nil {
			total += len(callOpen) + j + len(callClose)
			n--
		}
		text = rest[j+len(callClose):]
	}
	return total
}
