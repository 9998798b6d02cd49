package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

var weatherTool = json.RawMessage(`{"type":"function","function":{"name":"get_weather","description":"Weather of a city",
	"parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"metric":{"type":"boolean"},
	"hours":{"type":"array"},"zip":{"type":["string","null"]}},"required":["city"]}}}`)

const weatherCall = "<tool_call>\n<function=get_weather>\n<parameter=city>\nSão Paulo\n</parameter>\n<parameter=days>\n3\n</parameter>\n" +
	"<parameter=metric>\nTrue\n</parameter>\n<parameter=hours>\n[6, 12]\n</parameter>\n<parameter=zip>\n01000\n</parameter>\n</function>\n</tool_call>"

const weatherArgs = `{"city":"São Paulo","days":3,"metric":true,"hours":[6,12],"zip":"01000"}`

// TestToolScannerAnySplit: however the model's text is cut into tokens, the
// scanner finds the same call and lets the same text through.
func TestToolScannerAnySplit(t *testing.T) {
	tools, err := parseTools([]json.RawMessage{weatherTool})
	if err != nil {
		t.Fatal(err)
	}
	reply := "Let me check <tools> first.\n\n" + weatherCall + "\n"
	for cut := 0; cut <= len(reply); cut++ {
		sc := &toolScanner{tools: tools}
		var text strings.Builder
		var calls []toolCall
		for _, part := range []string{reply[:cut], reply[cut:]} {
			out, c, bad := sc.add(part)
			if len(bad) > 0 {
				t.Fatalf("cut %d: malformed %v", cut, bad)
			}
			text.WriteString(out)
			calls = append(calls, c...)
		}
		out, bad := sc.flush()
		text.WriteString(out)
		if len(bad) > 0 || len(calls) != 1 || calls[0].name != "get_weather" || calls[0].arguments != weatherArgs ||
			text.String() != "Let me check <tools> first.\n\n\n" {
			t.Fatalf("cut %d: text %q calls %+v malformed %v", cut, text.String(), calls, bad)
		}
	}
}

func TestMalformedToolCallsStayText(t *testing.T) {
	tools, _ := parseTools([]json.RawMessage{weatherTool})
	for _, c := range []struct{ reply, why string }{
		{"<tool_call>\n<function=launch>\n</function>\n</tool_call>", `"launch", which the request did not offer`},
		{"<tool_call>\nget_weather(city=X)\n</tool_call>", "without <function=NAME>"},
		{"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": [1]}\n</tool_call>", "not a JSON object"},
		{"<tool_call>\n{\"name\": \"launch\", \"arguments\": {}}\n</tool_call>", `"launch", which the request did not offer`},
		{"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}\n</tool_call>", "JSON does not parse"},
		{"<tool_call>\n<function=get_weather>\n<parameter=city>\nX\n</function>\n</tool_call>", "has no </parameter>"},
		{"<tool_call>\n<function=get_weather>\ncity=X\n</function>\n</tool_call>", "text outside <parameter=KEY>"},
		{"<tool_call>\n<function=get_weather>\n<parameter=city>\nX\n</parameter>\n<parameter=city>\nY\n</parameter>\n</function>\n</tool_call>", "given twice"},
		{"<tool_call>\n<function=get_weather>\n<parameter=city>\nX", "never closed"},
	} {
		sc := &toolScanner{tools: tools}
		out, calls, bad := sc.add(c.reply)
		rest, bad2 := sc.flush()
		bad = append(bad, bad2...)
		if len(calls) != 0 || out+rest != c.reply || len(bad) != 1 || !strings.Contains(bad[0], c.why) {
			t.Errorf("%q: text %q calls %v malformed %v; want the text back and %q", c.reply, out+rest, calls, bad, c.why)
		}
	}
}

// TestSDKToolRoundTrip: the model's call comes back as tool_calls with
// finish_reason tool_calls, whole and streamed; the client's next request,
// with the call and its result, reaches the engine as the template needs it.
func TestSDKToolRoundTrip(t *testing.T) {
	var script []piece
	script = append(script, piece{"I should look it up.", true})
	for i := 0; i < len(weatherCall); i += 7 { // tokens that cut the tags anywhere
		script = append(script, piece{weatherCall[i:min(i+7, len(weatherCall))], false})
	}
	eng := &fakeEngine{script: script, ctxLen: 4096}
	ts := serve(t, eng, Options{})
	c := client(ts.URL)
	var tool openai.ChatCompletionToolUnionParam
	if err := json.Unmarshal(weatherTool, &tool); err != nil {
		t.Fatal(err)
	}
	params := openai.ChatCompletionNewParams{Model: "tiny", Tools: []openai.ChatCompletionToolUnionParam{tool},
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in São Paulo?")}}
	resp, err := c.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 || ch.Message.Content != "" {
		t.Fatalf("finish %q, %d calls, content %q: want tool_calls, one, none", ch.FinishReason, len(ch.Message.ToolCalls), ch.Message.Content)
	}
	call := ch.Message.ToolCalls[0]
	if call.Function.Name != "get_weather" || call.Function.Arguments != weatherArgs || call.ID == "" || call.Type != "function" {
		t.Errorf("call %+v, want get_weather %s", call.Function, weatherArgs)
	}
	if got := eng.requests()[0].Tools; len(got) != 1 || !json.Valid(got[0]) {
		t.Errorf("engine got tools %s", got)
	}

	stream := c.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	sc := acc.Choices[0]
	if sc.FinishReason != "tool_calls" || len(sc.Message.ToolCalls) != 1 || sc.Message.ToolCalls[0].Function.Arguments != weatherArgs {
		t.Errorf("streamed: finish %q calls %+v", sc.FinishReason, sc.Message.ToolCalls)
	}

	// The next turn: the call and its result.
	params.Messages = append(params.Messages, resp.Choices[0].Message.ToParam(), openai.ToolMessage("31°C, sunny", call.ID))
	eng.reply([]piece{{"It is 31°C and sunny.", false}}, nil)
	final, err := c.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if final.Choices[0].Message.Content != "It is 31°C and sunny." || final.Choices[0].FinishReason != "stop" {
		t.Errorf("final answer %q finish %q", final.Choices[0].Message.Content, final.Choices[0].FinishReason)
	}
	msgs := eng.requests()[2].Messages
	if len(msgs) != 3 || msgs[1].Role != "assistant" || len(msgs[1].ToolCalls) != 1 || msgs[1].ToolCalls[0].Name != "get_weather" ||
		string(msgs[1].ToolCalls[0].Arguments) != weatherArgs || msgs[2].Role != "tool" || msgs[2].Content != "31°C, sunny" {
		t.Errorf("engine got %+v", msgs)
	}
}

func TestToolRequestsRefused(t *testing.T) {
	ts := serve(t, &fakeEngine{script: hello, ctxLen: 64}, Options{})
	tools := `"tools":[` + string(weatherTool) + `],`
	for _, c := range []struct{ body, want string }{
		{`{"tools":[{"type":"function"}],` + hi + `}`, `tools[0]: want {"type": "function"`},
		{`{"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}],` + hi + `}`, `a second function named "f"`},
		{`{` + tools + `"tool_choice":"always",` + hi + `}`, `tool_choice "always": want auto, none, required or a function`},
		{`{` + tools + `"tool_choice":{"type":"function","function":{"name":"get_time"}},` + hi + `}`, `names the function "get_time", which is not among the tools`},
		{`{` + tools + `"tool_choice":{"type":"function"},` + hi + `}`, `tool_choice must be "auto", "none", "required" or {"type": "function"`},
		{`{"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"[1]"}}]},{"role":"tool","content":"1"}]}`, "arguments that are a JSON object"},
		{`{"messages":[{"role":"user","content":"x","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, "only an assistant message has them"},
	} {
		resp, body := post(t, ts.URL, "/v1/chat/completions", c.body)
		msg, _ := body["error"].(map[string]any)["message"].(string)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %q, want 400 with %q", c.body, resp.StatusCode, msg, c.want)
		}
	}
	// tool_choice none: the tools are not shown to the model, and a reply
	// that looks like a call is text.
	eng := &fakeEngine{script: []piece{{weatherCall, false}}, ctxLen: 64}
	ts = serve(t, eng, Options{})
	_, body := post(t, ts.URL, "/v1/chat/completions", `{`+tools+`"tool_choice":"none",`+hi+`}`)
	ch := body["choices"].([]any)[0].(map[string]any)
	if ch["finish_reason"] != "stop" || ch["message"].(map[string]any)["content"] != weatherCall || len(eng.requests()[0].Tools) != 0 {
		t.Errorf("tool_choice none: %v", ch)
	}
}

// TestMalformedCallIsFlaggedText: a call of a function not offered reaches
// the client as text with tool_call_error, finish_reason stop, status 200.
func TestMalformedCallIsFlaggedText(t *testing.T) {
	bad := "<tool_call>\n<function=rm_rf>\n</function>\n</tool_call>"
	ts := serve(t, &fakeEngine{script: []piece{{bad, false}}, ctxLen: 64}, Options{})
	resp, body := post(t, ts.URL, "/v1/chat/completions", `{"tools":[`+string(weatherTool)+`],`+hi+`}`)
	ch := body["choices"].([]any)[0].(map[string]any)
	if resp.StatusCode != 200 || ch["finish_reason"] != "stop" || ch["message"].(map[string]any)["content"] != bad ||
		!strings.Contains(ch["tool_call_error"].(string), `"rm_rf", which the request did not offer`) {
		t.Errorf("%d %v", resp.StatusCode, ch)
	}
}

// TestForcedToolCalls: tool_choice "required" and a named function begin
// the reply with the call's markup (thinking off), and the model's
// continuation completes the call; a forced call the model leaves unclosed
// is flagged text that begins with the forced markup.
func TestForcedToolCalls(t *testing.T) {
	rest := strings.TrimPrefix(weatherCall, "<tool_call>\n<function=get_weather>\n")
	for _, c := range []struct {
		choice, prefix, reply string
	}{
		{`"required"`, "<tool_call>\n<function=", "get_weather>\n" + rest},
		{`{"type":"function","function":{"name":"get_weather"}}`, "<tool_call>\n<function=get_weather>\n", rest},
	} {
		eng := &fakeEngine{script: []piece{{c.reply[:9], false}, {c.reply[9:], false}}, ctxLen: 64}
		ts := serve(t, eng, Options{})
		_, body := post(t, ts.URL, "/v1/chat/completions", `{"tools":[`+string(weatherTool)+`],"tool_choice":`+c.choice+`,`+hi+`}`)
		ch := body["choices"].([]any)[0].(map[string]any)
		calls, _ := ch["message"].(map[string]any)["tool_calls"].([]any)
		if ch["finish_reason"] != "tool_calls" || len(calls) != 1 ||
			calls[0].(map[string]any)["function"].(map[string]any)["arguments"] != weatherArgs {
			t.Errorf("tool_choice %s: %v", c.choice, ch)
		}
		req := eng.requests()[0]
		if req.ReplyPrefix != c.prefix || req.EnableThinking {
			t.Errorf("tool_choice %s: the engine got prefix %q thinking %v, want %q without thinking", c.choice, req.ReplyPrefix, req.EnableThinking, c.prefix)
		}
	}
	eng := &fakeEngine{script: []piece{{"get_weather>\n<parameter=city>\nParis", false}}, ctxLen: 64}
	ts := serve(t, eng, Options{})
	_, body := post(t, ts.URL, "/v1/chat/completions", `{"tools":[`+string(weatherTool)+`],"tool_choice":"required",`+hi+`}`)
	ch := body["choices"].([]any)[0].(map[string]any)
	if ch["message"].(map[string]any)["content"] != "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis" ||
		!strings.Contains(ch["tool_call_error"].(string), "never closed") {
		t.Errorf("an unclosed forced call: %v", ch)
	}
}

// TestQwen3JSONCalls: Qwen3's calls — a JSON object with the name and the
// arguments (an object, or a string holding one) — are read as Qwen3.5's
// are, split anywhere.
func TestQwen3JSONCalls(t *testing.T) {
	tools, _ := parseTools([]json.RawMessage{weatherTool})
	for _, reply := range []string{
		"Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"São Paulo\", \"days\": 3}}\n</tool_call>",
		"Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"São Paulo\\\", \\\"days\\\": 3}\"}\n</tool_call>",
	} {
		for cut := 0; cut <= len(reply); cut += 7 {
			sc := &toolScanner{tools: tools}
			out1, calls1, bad1 := sc.add(reply[:cut])
			out2, calls2, bad2 := sc.add(reply[cut:])
			rest, bad3 := sc.flush()
			calls := append(calls1, calls2...)
			if out1+out2+rest != "Checking.\n" || len(bad1)+len(bad2)+len(bad3) != 0 || len(calls) != 1 ||
				calls[0].name != "get_weather" || calls[0].arguments != `{"city":"São Paulo","days":3}` {
				t.Fatalf("%q cut at %d: text %q calls %v", reply, cut, out1+out2+rest, calls)
			}
		}
	}
}
