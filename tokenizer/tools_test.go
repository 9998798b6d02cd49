package tokenizer

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPythonPrinting: numbers and strings as Python's str and json.dumps
// print them (the tool-call goldens cover the common cases; these are the
// edges).
func TestPythonPrinting(t *testing.T) {
	for in, want := range map[string]string{
		`5`: "5", `-0`: "-0", `123456789012345678901234567890`: "123456789012345678901234567890",
		`1.0`: "1.0", `1E5`: "100000.0", `1e15`: "1000000000000000.0", `1e16`: "1e+16", `0.0001`: "0.0001",
		`0.00001`: "1e-05", `-2.50`: "-2.5", `1e400`: "inf", `true`: "True", `null`: "None", `"x\ny"`: "x\ny",
		`{"b":[1,"é\u0001"],"a":{}}`: `{"b": [1, "é\u0001"], "a": {}}`,
	} {
		got, err := pyString(json.RawMessage(in))
		if err != nil || got != want {
			t.Errorf("pyString(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestToolsRefusedWhereTheTemplateCannot(t *testing.T) {
	templates := templateSources(t)
	user := Message{Role: "user", Content: "hi"}
	for name, c := range map[string]struct {
		tmpl string
		msgs []Message
		opts RenderOptions
		want string
	}{
		"a tool not JSON, Qwen3":       {"qwen3", []Message{user}, RenderOptions{Tools: []json.RawMessage{json.RawMessage(`{`)}}, "tool 0 is not JSON"},
		"a call without a name, Qwen3": {"qwen3", []Message{user, {Role: "assistant", ToolCalls: []ToolCall{{}}}}, RenderOptions{}, "without a name"},
		"a user's tool call":           {"qwen35", []Message{{Role: "user", Content: "x", ToolCalls: []ToolCall{{Name: "f"}}}}, RenderOptions{}, "only an assistant turn calls tools"},
		"a call without a name":        {"qwen35", []Message{user, {Role: "assistant", ToolCalls: []ToolCall{{}}}}, RenderOptions{}, "without a name"},
		"arguments not a object":       {"qwen35", []Message{user, {Role: "assistant", ToolCalls: []ToolCall{{Name: "f", Arguments: json.RawMessage(`[1]`)}}}}, RenderOptions{}, "not a JSON object"},
		"a tool not JSON":              {"qwen35", []Message{user}, RenderOptions{Tools: []json.RawMessage{json.RawMessage(`{`)}}, "tool 0 is not JSON"},
	} {
		_, err := templates[c.tmpl].Render(c.msgs, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
	}
}
