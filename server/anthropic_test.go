package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"

	"bagel/engine"
)

// anthropicClient is the official Anthropic Go SDK pointed at a test server.
func anthropicClient(url string, opts ...aoption.RequestOption) *anthropic.Client {
	c := anthropic.NewClient(append([]aoption.RequestOption{aoption.WithBaseURL(url), aoption.WithAPIKey("unused"),
		aoption.WithMaxRetries(0)}, opts...)...)
	return &c
}

func TestAnthropicMessage(t *testing.T) {
	eng := &fakeEngine{script: hello, ctxLen: 4096}
	ts := serve(t, eng, Options{})
	msg, err := anthropicClient(ts.URL).Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "tiny", MaxTokens: 100, System: []anthropic.TextBlockParam{{Text: "Be brief."}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 2 || msg.Content[0].Type != "thinking" || msg.Content[0].Thinking != "The user greets. Reply kindly." ||
		msg.Content[1].Type != "text" || msg.Content[1].Text != "Hello, world!" {
		t.Fatalf("content %+v: want a thinking block then the text", msg.Content)
	}
	if msg.StopReason != "end_turn" || msg.Role != "assistant" || msg.Model != "tiny" {
		t.Errorf("stop %q role %q model %q", msg.StopReason, msg.Role, msg.Model)
	}
	if u := msg.Usage; u.InputTokens != 7 || u.CacheReadInputTokens != 5 || u.OutputTokens != 5 {
		t.Errorf("usage %+v: want 7 input + 5 read from the cache, 5 output", u)
	}
	req := eng.requests()[0]
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[0].Content != "Be brief." ||
		req.Messages[1].Content != "Hi" || req.MaxTokens != 100 || !req.EnableThinking {
		t.Errorf("engine request %+v", req)
	}
}

func TestAnthropicStream(t *testing.T) {
	eng := &fakeEngine{script: hello, ctxLen: 4096}
	ts := serve(t, eng, Options{})
	stream := anthropicClient(ts.URL).Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
		Model: "tiny", MaxTokens: 100, Thinking: anthropic.ThinkingConfigParamUnion{OfDisabled: &anthropic.ThinkingConfigDisabledParam{}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))},
	})
	var msg anthropic.Message
	kinds := map[string]int{}
	for stream.Next() {
		ev := stream.Current()
		kinds[ev.Type]++
		if err := msg.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 2 || msg.Content[0].Thinking != "The user greets. Reply kindly." || msg.Content[1].Text != "Hello, world!" {
		t.Errorf("streamed content %+v", msg.Content)
	}
	if msg.StopReason != "end_turn" || msg.Usage.OutputTokens != 5 {
		t.Errorf("stop %q usage %+v", msg.StopReason, msg.Usage)
	}
	if kinds["message_start"] != 1 || kinds["content_block_start"] != 2 || kinds["content_block_stop"] != 2 || kinds["message_delta"] != 1 || kinds["message_stop"] != 1 {
		t.Errorf("events %v", kinds)
	}
	if eng.requests()[0].EnableThinking {
		t.Error("thinking disabled, yet on")
	}
}

// TestAnthropicToolUse: a tool call comes back as a tool_use block with
// stop_reason tool_use; the client's tool_result goes to the engine as a
// tool message.
func TestAnthropicToolUse(t *testing.T) {
	eng := &fakeEngine{script: []piece{{"Checking.\n\n", false}, {weatherCall[:20], false}, {weatherCall[20:], false}}, ctxLen: 4096}
	ts := serve(t, eng, Options{})
	c := anthropicClient(ts.URL)
	var fn struct {
		Function struct {
			Name        string
			Description string
			Parameters  struct {
				Properties map[string]any
				Required   []string
			}
		}
	}
	json.Unmarshal(weatherTool, &fn)
	tool := anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{Properties: fn.Function.Parameters.Properties,
		Required: fn.Function.Parameters.Required}, "get_weather")
	params := anthropic.MessageNewParams{Model: "tiny", MaxTokens: 200, Tools: []anthropic.ToolUnionParam{tool},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in São Paulo?"))}}
	for _, streamed := range []bool{false, true} {
		var msg anthropic.Message
		if streamed {
			stream := c.Messages.NewStreaming(context.Background(), params)
			for stream.Next() {
				if err := msg.Accumulate(stream.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
		} else {
			m, err := c.Messages.New(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			msg = *m
		}
		if msg.StopReason != "tool_use" || len(msg.Content) != 2 || msg.Content[0].Text != "Checking.\n\n" || msg.Content[1].Type != "tool_use" {
			t.Fatalf("streamed %v: stop %q content %+v", streamed, msg.StopReason, msg.Content)
		}
		use := msg.Content[1]
		var got, want any
		json.Unmarshal(use.Input, &got)
		json.Unmarshal([]byte(weatherArgs), &want)
		if use.Name != "get_weather" || use.ID == "" || !jsonEqual(got, want) {
			t.Errorf("streamed %v: tool_use %s %s, want get_weather %s", streamed, use.Name, use.Input, weatherArgs)
		}
		if streamed {
			params.Messages = append(params.Messages, msg.ToParam(),
				anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "31°C", false)))
		}
	}
	eng.reply([]piece{{"31°C.", false}}, nil)
	final, err := c.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if final.Content[0].Text != "31°C." || final.StopReason != "end_turn" {
		t.Errorf("final %+v", final)
	}
	msgs := eng.requests()[2].Messages
	if len(msgs) != 3 || len(msgs[1].ToolCalls) != 1 || msgs[1].ToolCalls[0].Name != "get_weather" || msgs[1].Content != "Checking.\n\n" ||
		msgs[2].Role != "tool" || msgs[2].Content != "31°C" {
		t.Errorf("engine got %+v", msgs)
	}
	if tools := eng.requests()[0].Tools; len(tools) != 1 || !strings.HasPrefix(string(tools[0]), `{"type":"function","function":{"name":"get_weather"`) {
		t.Errorf("tools given to the template: %s", tools)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestAnthropicStopSequenceAndCount(t *testing.T) {
	eng := &fakeEngine{script: []piece{{"one two", false}, {" three", false}}, ctxLen: 4096}
	ts := serve(t, eng, Options{})
	c := anthropicClient(ts.URL)
	msg, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "tiny", MaxTokens: 50, StopSequences: []string{"three", "two"},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Count"))}})
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != "stop_sequence" || msg.StopSequence != "two" || msg.Content[0].Text != "one " {
		t.Errorf("stop %q sequence %q text %q; want stop_sequence, two, \"one \"", msg.StopReason, msg.StopSequence, msg.Content[0].Text)
	}
	n, err := c.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{Model: "tiny",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("three words here"))}})
	if err != nil || n.InputTokens != 3 {
		t.Errorf("count_tokens %v %v, want 3", n, err)
	}
}

// TestAnthropicErrors: refusals in Anthropic's error shape, which the SDK reads.
func TestAnthropicErrors(t *testing.T) {
	ts := serve(t, &fakeEngine{err: &engine.PromptTooLongError{Tokens: 900, ContextLength: 512}, ctxLen: 512}, Options{APIKey: "k"})
	params := anthropic.MessageNewParams{Model: "tiny", MaxTokens: 10, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"))}}
	var apiErr *anthropic.Error
	_, err := anthropicClient(ts.URL).Messages.New(context.Background(), params)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Fatalf("no key: %v, want 401", err)
	}
	_, err = anthropicClient(ts.URL, aoption.WithAPIKey("k")).Messages.New(context.Background(), params)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(err.Error(), "the prompt has 900 tokens") {
		t.Fatalf("too long: %v, want 400 naming it", err)
	}
	for _, c := range []struct{ body, want string }{
		{`{"max_tokens":5,"messages":[]}`, "messages is empty"},
		{`{"messages":[{"role":"user","content":"x"}]}`, "max_tokens is required"},
		{`{"max_tokens":5,"messages":[{"role":"system","content":"x"}]}`, `role "system"`},
		{`{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]}`, `only a base64 source is read`},
		{`{"max_tokens":5,"tools":[{"type":"web_search_20250305","name":"web_search"}],"messages":[{"role":"user","content":"x"}]}`, "server tool"},
		{`{"max_tokens":5,"tool_choice":{"type":"tool","name":"g"},"tools":[{"name":"f","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"x"}]}`, `names the function "g", which is not among the tools`},
		{`{"max_tokens":5,"output_format":{"type":"json_schema","schema":{}},"messages":[{"role":"user","content":"x"}]}`, `output_format "json_schema" is not supported`},
		{`{"max_tokens":5,"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"x"}]}`, `tool_choice "any" asks for a tool call, but the request has no tools`},
		{`{"max_tokens":5,"tool_choice":{"type":"tool","name":"f"},"messages":[{"role":"user","content":"x"}]}`, "the request has no tools"},
		{`{"max_tokens":5,"messages":`, "JSON"},
	} {
		resp, body := post(t, ts.URL, "/v1/messages", c.body, "x-api-key: k")
		e, _ := body["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if resp.StatusCode != http.StatusBadRequest || body["type"] != "error" || e["type"] != "invalid_request_error" || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %v, want 400 invalid_request_error with %q", c.body, resp.StatusCode, body, c.want)
		}
	}
}

// TestAnthropicForcedTool: tool_choice "any" and "tool" force a call as
// OpenAI's required and named do; the reply is a tool_use block.
func TestAnthropicForcedTool(t *testing.T) {
	tool := `"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	for choice, prefix := range map[string]string{
		`{"type":"any"}`:                       "<tool_call>\n<function=",
		`{"type":"tool","name":"get_weather"}`: "<tool_call>\n<function=get_weather>\n",
	} {
		call := "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"
		eng := &fakeEngine{script: []piece{{strings.TrimPrefix(call, prefix), false}}, ctxLen: 64}
		ts := serve(t, eng, Options{})
		_, body := post(t, ts.URL, "/v1/messages", `{"max_tokens":50,"tool_choice":`+choice+`,`+tool+`,"messages":[{"role":"user","content":"Weather?"}]}`)
		content, _ := body["content"].([]any)
		if body["stop_reason"] != "tool_use" || len(content) != 1 || content[0].(map[string]any)["type"] != "tool_use" {
			t.Errorf("tool_choice %s: %v", choice, body)
		}
		if req := eng.requests()[0]; req.ReplyPrefix != prefix || req.EnableThinking {
			t.Errorf("tool_choice %s: prefix %q thinking %v", choice, req.ReplyPrefix, req.EnableThinking)
		}
	}
}
