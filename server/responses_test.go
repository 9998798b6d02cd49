package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"bagel/engine"
)

// TestSDKResponses: the Responses API through the official SDK, whole and
// streamed: the reasoning and the message as output items, the usage with
// the reused prompt, and the stream's events adding up to the whole answer.
func TestSDKResponses(t *testing.T) {
	eng := &fakeEngine{script: hello, ctxLen: 4096}
	ts := serve(t, eng, Options{})
	c := client(ts.URL)
	params := responses.ResponseNewParams{Model: "tiny", Instructions: openai.String("Be brief."),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hi")}}
	resp, err := c.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != "Hello, world!" || resp.Status != "completed" || len(resp.Output) != 2 {
		t.Fatalf("output %q status %q, %d items; want \"Hello, world!\", completed, 2 items", resp.OutputText(), resp.Status, len(resp.Output))
	}
	r := resp.Output[0].AsReasoning()
	if resp.Output[0].Type != "reasoning" || len(r.Content) != 1 || r.Content[0].Text != "The user greets. Reply kindly." {
		t.Errorf("first item %+v, want the reasoning", resp.Output[0])
	}
	u := resp.Usage
	if u.InputTokens != 12 || u.InputTokensDetails.CachedTokens != 5 || u.OutputTokens != 5 || u.OutputTokensDetails.ReasoningTokens != 2 || u.TotalTokens != 17 {
		t.Errorf("usage %+v", u)
	}
	msgs := eng.requests()[0].Messages
	if len(msgs) != 2 || msgs[0].Role != "system" || msgs[0].Content != "Be brief." || msgs[1].Content != "Hi" || !eng.requests()[0].EnableThinking {
		t.Errorf("engine got %+v", msgs)
	}

	stream := c.Responses.NewStreaming(context.Background(), params)
	var text, reasoning strings.Builder
	var kinds []string
	var final responses.Response
	seq := int64(0)
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != seq {
			t.Errorf("event %d has sequence_number %d", seq, ev.SequenceNumber)
		}
		seq++
		kinds = append(kinds, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.reasoning_text.delta":
			reasoning.WriteString(ev.Delta)
		case "response.completed":
			final = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	want := "response.created response.in_progress response.output_item.added response.reasoning_text.delta response.reasoning_text.delta " +
		"response.reasoning_text.done response.output_item.done response.output_item.added response.content_part.added " +
		"response.output_text.delta response.output_text.delta response.output_text.delta response.output_text.done " +
		"response.content_part.done response.output_item.done response.completed"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("events\n%s\nwant\n%s", got, want)
	}
	if text.String() != "Hello, world!" || reasoning.String() != "The user greets. Reply kindly." {
		t.Errorf("streamed %q and reasoning %q", text.String(), reasoning.String())
	}
	if final.OutputText() != "Hello, world!" || len(final.Output) != 2 || final.Usage.OutputTokens != 5 {
		t.Errorf("completed response %q, %d items, usage %+v", final.OutputText(), len(final.Output), final.Usage)
	}
}

// TestSDKResponsesToolRoundTrip: a function call comes back as a
// function_call item (whole and streamed), and the next request's input —
// the previous output as the SDK turns it into input, and the call's
// output — reaches the engine as an assistant turn with its call and a
// tool turn.
func TestSDKResponsesToolRoundTrip(t *testing.T) {
	eng := &fakeEngine{script: []piece{{"Need weather.", true}, {weatherCall[:20], false}, {weatherCall[20:], false}}, ctxLen: 4096}
	ts := serve(t, eng, Options{})
	c := client(ts.URL)
	var fn struct {
		Function struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Parameters  map[string]any `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(weatherTool, &fn); err != nil {
		t.Fatal(err)
	}
	tools := []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: fn.Function.Name,
		Description: openai.String(fn.Function.Description), Parameters: fn.Function.Parameters, Strict: openai.Bool(false)}}}
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("Weather in São Paulo?", responses.EasyInputMessageRoleUser)}
	params := responses.ResponseNewParams{Model: "tiny", Tools: tools, Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}}
	resp, err := c.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Output) != 2 || resp.Output[1].Type != "function_call" {
		t.Fatalf("output %+v, want reasoning and a function_call", resp.Output)
	}
	call := resp.Output[1].AsFunctionCall()
	if call.Name != "get_weather" || call.Arguments != weatherArgs || call.CallID == "" {
		t.Errorf("call %+v", call)
	}

	stream := c.Responses.NewStreaming(context.Background(), params)
	var args string
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "response.function_call_arguments.done" {
			args = ev.Arguments
		}
	}
	if stream.Err() != nil || args != weatherArgs {
		t.Errorf("streamed arguments %q (%v), want %s", args, stream.Err(), weatherArgs)
	}

	reasoning := resp.Output[0].AsReasoning().ToParam()
	back := call.ToParam()
	out := responses.ResponseInputItemParamOfFunctionCallOutput("31°C, sunny")
	out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
	input = append(input, responses.ResponseInputItemUnionParam{OfReasoning: &reasoning},
		responses.ResponseInputItemUnionParam{OfFunctionCall: &back}, out)
	eng.reply([]piece{{"It is 31°C and sunny.", false}}, nil)
	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
	final, err := c.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if final.OutputText() != "It is 31°C and sunny." {
		t.Errorf("final answer %q", final.OutputText())
	}
	msgs := eng.requests()[2].Messages
	if len(msgs) != 3 || msgs[1].Role != "assistant" || msgs[1].Reasoning != "Need weather." || len(msgs[1].ToolCalls) != 1 ||
		string(msgs[1].ToolCalls[0].Arguments) != weatherArgs || msgs[2].Role != "tool" || msgs[2].Content != "31°C, sunny" {
		t.Errorf("engine got %+v", msgs)
	}
}

// TestResponsesAsCodexSends: a request shaped as Codex sends it (developer
// messages around the user's, a custom apply_patch tool beside function
// tools, store false, reasoning settings): every system and developer text
// joins one system turn, and a call of the custom tool comes back as a
// custom_tool_call with its text as input; sent back, it is the turn's call.
func TestResponsesAsCodexSends(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: hello.txt\n+Hello\n*** End Patch"
	call := "<tool_call>\n<function=apply_patch>\n<parameter=input>\n" + patch + "\n</parameter>\n</function>\n</tool_call>"
	eng := &fakeEngine{script: []piece{{call, false}}, ctxLen: 4096}
	ts := serve(t, eng, Options{})
	body := `{"model":"tiny","instructions":"You are Codex.","store":false,"stream":false,"parallel_tool_calls":false,
		"reasoning":{"effort":"medium","summary":"auto"},"include":["reasoning.encrypted_content"],"prompt_cache_key":"abc",
		"tools":[{"type":"function","name":"shell","description":"Runs a command","strict":false,
			"parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}},"required":["command"]}},
			{"type":"custom","name":"apply_patch","description":"Edit files","format":{"type":"grammar","syntax":"lark","definition":"start: x"}}],
		"tool_choice":"auto",
		"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"Sandbox: workspace-write."}]},
			{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>cwd</environment_context>"}]},
			{"type":"message","role":"user","content":[{"type":"input_text","text":"Add hello.txt"}]}]}`
	resp, out := post(t, ts.URL, "/v1/responses", body)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, out)
	}
	items, _ := out["output"].([]any)
	if len(items) != 1 {
		t.Fatalf("output %v, want one custom_tool_call", out["output"])
	}
	item := items[0].(map[string]any)
	if item["type"] != "custom_tool_call" || item["name"] != "apply_patch" || item["input"] != patch || item["call_id"] == "" {
		t.Errorf("item %v", item)
	}
	req := eng.requests()[0]
	if len(req.Messages) != 3 || req.Messages[0].Role != "system" || req.Messages[0].Content != "You are Codex.\n\nSandbox: workspace-write." {
		t.Errorf("engine got %+v", req.Messages)
	}
	if len(req.Tools) != 2 || !strings.Contains(string(req.Tools[1]), `"input"`) {
		t.Errorf("tools as the template lists them: %s", req.Tools)
	}
	// The call and its output sent back.
	eng.reply([]piece{{"Done.", false}}, nil)
	next := strings.Replace(body, `"text":"Add hello.txt"}]}]`, `"text":"Add hello.txt"}]},`+
		`{"type":"custom_tool_call","call_id":"c1","name":"apply_patch","input":`+jsonString(patch)+`},`+
		`{"type":"custom_tool_call_output","call_id":"c1","output":"Success."}]`, 1)
	if resp, out := post(t, ts.URL, "/v1/responses", next); resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, out)
	}
	msgs := eng.requests()[1].Messages
	if len(msgs) != 5 || len(msgs[3].ToolCalls) != 1 || string(msgs[3].ToolCalls[0].Arguments) != `{"input":`+jsonString(patch)+`}` ||
		msgs[4].Role != "tool" || msgs[4].Content != "Success." {
		t.Errorf("engine got %+v", msgs)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestResponsesEnds: the token limit makes the response incomplete (and
// streams response.incomplete); thinking off by reasoning effort "none";
// a prompt over the context is a 400 even when streaming.
func TestResponsesEnds(t *testing.T) {
	eng := &fakeEngine{script: hello, ctxLen: 4096}
	ts := serve(t, eng, Options{})
	_, out := post(t, ts.URL, "/v1/responses", `{"input":"Hi","max_output_tokens":3,"reasoning":{"effort":"none"}}`)
	details, _ := out["incomplete_details"].(map[string]any)
	if out["status"] != "incomplete" || details["reason"] != "max_output_tokens" {
		t.Errorf("status %v details %v, want incomplete for max_output_tokens", out["status"], out["incomplete_details"])
	}
	if eng.requests()[0].EnableThinking || eng.requests()[0].MaxTokens != 3 {
		t.Errorf("engine got thinking %v max %d", eng.requests()[0].EnableThinking, eng.requests()[0].MaxTokens)
	}
	resp, err := http.Post(ts.URL+"/v1/responses", "application/json", strings.NewReader(`{"input":"Hi","max_output_tokens":3,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	resp.Body.Close()
	if !strings.Contains(b.String(), "event: response.incomplete\n") || strings.Contains(b.String(), "response.completed") {
		t.Errorf("stream ends %q, want response.incomplete", b.String()[max(0, b.Len()-200):])
	}

	long := serve(t, &fakeEngine{err: &engine.PromptTooLongError{Tokens: 900, ContextLength: 512}, ctxLen: 512}, Options{})
	r, out := post(t, long.URL, "/v1/responses", `{"input":"Hi","stream":true}`)
	e, _ := out["error"].(map[string]any)
	if r.StatusCode != 400 || e["code"] != "context_length_exceeded" {
		t.Errorf("too long: %d %v", r.StatusCode, out)
	}
}

// TestResponsesRefusals: what the server cannot do is a 400 that names it.
func TestResponsesRefusals(t *testing.T) {
	ts := serve(t, &fakeEngine{script: hello, ctxLen: 64}, Options{})
	for _, c := range []struct{ body, want string }{
		{`{"input":"Hi","previous_response_id":"resp_1"}`, "stores no responses"},
		{`{"input":"Hi","tools":[{"type":"web_search"}]}`, `hosted tool "web_search"`},
		{`{"input":[{"type":"item_reference","id":"x"}]}`, "item_reference"},
		{`{"input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]}`, `only data: URLs`},
		{`{"input":[{"type":"computer_call"}]}`, `"computer_call" item`},
		{`{"input":"Hi","text":{"format":{"type":"json_schema"}}}`, `text.format "json_schema"`},
		{`{"input":"Hi","tool_choice":"required"}`, `tool_choice "required" asks for a tool call, but the request has no tools`},
		{`{"input":"Hi","max_output_tokens":0}`, "max_output_tokens = 0"},
		{`{"input":[]}`, "input must be a string or a list of items"},
		{`{"input":[{"role":"robot","content":"x"}]}`, `role "robot"`},
		{`{"input":[{"type":"function_call","name":"f","arguments":"[1]"}]}`, "arguments that are a JSON object"},
		{`{"input":"Hi","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"g"}}`, `"g", which is not among the tools`},
		{`{"model":"gpt-5","input":"Hi"}`, `"gpt-5" is not served here`},
	} {
		resp, body := post(t, ts.URL, "/v1/responses", c.body)
		e, _ := body["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if resp.StatusCode/100 != 4 || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %q, want a 4xx with %q", c.body, resp.StatusCode, msg, c.want)
		}
	}
}
