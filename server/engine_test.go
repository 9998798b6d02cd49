package server

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"

	"bagel/engine"
	"bagel/internal/testmodel"
)

// TestRealEngineReusesTheConversation serves the tiny MoE checkpoint on the
// CPU: a second turn of the same chat reads its first turn's prompt from the
// prompt cache, and the usage says so (prompt_tokens_details.cached_tokens).
func TestRealEngineReusesTheConversation(t *testing.T) {
	ts := serveTinyMoE(t, 512)
	c := client(ts.URL)
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are terse."), openai.UserMessage("Name a colour.")}
	first, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "tiny", Messages: msgs,
		MaxTokens: openai.Int(6), Temperature: openai.Float(0)})
	if err != nil {
		t.Fatal(err)
	}
	if first.Usage.CompletionTokens != 6 || first.Choices[0].FinishReason != "length" {
		t.Errorf("first turn: %d tokens, finish %q; want 6, length", first.Usage.CompletionTokens, first.Choices[0].FinishReason)
	}
	msgs = append(msgs, openai.AssistantMessage(first.Choices[0].Message.Content), openai.UserMessage("Another."))
	second, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "tiny", Messages: msgs,
		MaxTokens: openai.Int(4), Temperature: openai.Float(0)})
	if err != nil {
		t.Fatal(err)
	}
	cached, prompt := second.Usage.PromptTokensDetails.CachedTokens, second.Usage.PromptTokens
	if cached < 10 || cached >= int64(prompt) || int64(prompt) <= first.Usage.PromptTokens {
		t.Errorf("second turn: %d of %d prompt tokens cached (first turn's prompt: %d); want the first turn's conversation reused",
			cached, prompt, first.Usage.PromptTokens)
	}
}

// TestRealEngineQwen3Tools: the tiny model's template is Qwen3's, whose
// tool list is JSON in the system turn and whose calls are JSON objects: the
// tools reach the prompt, a forced call begins with Qwen3's opening, and a
// conversation the template refuses is a 400, not a 500.
func TestRealEngineQwen3Tools(t *testing.T) {
	ts := serveTinyMoE(t, 1024)
	prompt := func(body string) (float64, map[string]any) {
		resp, out := post(t, ts.URL, "/v1/chat/completions", body)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %v", resp.StatusCode, out)
		}
		return out["usage"].(map[string]any)["prompt_tokens"].(float64), out
	}
	plain, _ := prompt(`{"max_tokens":1,` + hi + `}`)
	withTools, _ := prompt(`{"max_tokens":1,"tools":[` + string(weatherTool) + `],` + hi + `}`)
	if withTools < plain+100 {
		t.Errorf("prompt %v tokens with the tool, %v without: want the tool list", withTools, plain)
	}
	_, out := prompt(`{"max_tokens":3,"temperature":0,"tool_choice":{"type":"function","function":{"name":"get_weather"}},"tools":[` + string(weatherTool) + `],` + hi + `}`)
	ch := out["choices"].([]any)[0].(map[string]any)
	content, _ := ch["message"].(map[string]any)["content"].(string)
	if !strings.HasPrefix(content, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ") {
		t.Errorf("a forced call under Qwen3's template begins %q", content)
	}
	resp, body := post(t, ts.URL, "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`)
	if resp.StatusCode != 400 {
		t.Errorf("a conversation ending with the assistant: %d %v, want 400", resp.StatusCode, body)
	}
}

// TestRealEngineListsTheTools: under a Qwen3.5 template the tools reach the
// prompt (hundreds of tokens of tool list and instructions).
func TestRealEngineListsTheTools(t *testing.T) {
	e, err := engine.Load(qwen35Model(t), engine.Options{Backend: "cpu", ContextLength: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ts := serve(t, e, Options{})
	prompt := func(body string) float64 {
		resp, out := post(t, ts.URL, "/v1/chat/completions", body)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %v", resp.StatusCode, out)
		}
		return out["usage"].(map[string]any)["prompt_tokens"].(float64)
	}
	plain := prompt(`{"max_tokens":1,` + hi + `}`)
	withTools := prompt(`{"max_tokens":1,"tools":[` + string(weatherTool) + `],` + hi + `}`)
	if withTools < plain+200 {
		t.Errorf("prompt %v tokens with the tool, %v without: want the tool list and its instructions", withTools, plain)
	}
}

// TestRealEngineResponsesAndForcedCalls: the Responses API over the tiny
// model reuses the first request's conversation in the second (Codex
// resends it whole each turn); a named tool_choice under the Qwen3.5
// template puts the call's start into the prompt, after which the random
// model's text is the call's remainder (never closed here: flagged text that
// begins with the forced markup).
func TestRealEngineResponsesAndForcedCalls(t *testing.T) {
	e, err := engine.Load(qwen35Model(t), engine.Options{Backend: "cpu", ContextLength: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ts := serve(t, e, Options{})
	first := `{"instructions":"You are terse.","max_output_tokens":4,"temperature":0,"reasoning":{"effort":"none"},"input":[{"role":"user","content":"Name a colour."}]}`
	resp, out := post(t, ts.URL, "/v1/responses", first)
	if resp.StatusCode != 200 || out["status"] != "incomplete" {
		t.Fatalf("%d %v", resp.StatusCode, out)
	}
	reply := out["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"].(string)
	second := strings.Replace(first, `"content":"Name a colour."}]`, `"content":"Name a colour."},{"role":"assistant","content":`+jsonString(reply)+`},{"role":"user","content":"Another."}]`, 1)
	_, out = post(t, ts.URL, "/v1/responses", second)
	u := out["usage"].(map[string]any)
	if cached := u["input_tokens_details"].(map[string]any)["cached_tokens"].(float64); cached < 10 {
		t.Errorf("second request: %v of %v input tokens cached; want the first's conversation reused", cached, u["input_tokens"])
	}

	auto := `{"max_tokens":3,"temperature":0,"tools":[` + string(weatherTool) + `],` + hi + `}`
	_, plain := post(t, ts.URL, "/v1/chat/completions", auto)
	named := strings.Replace(auto, `"tools"`, `"tool_choice":{"type":"function","function":{"name":"get_weather"}},"tools"`, 1)
	_, forced := post(t, ts.URL, "/v1/chat/completions", named)
	ch := forced["choices"].([]any)[0].(map[string]any)
	content, _ := ch["message"].(map[string]any)["content"].(string)
	if !strings.HasPrefix(content, "<tool_call>\n<function=get_weather>\n") || ch["tool_call_error"] == nil {
		t.Errorf("a forced call the model does not finish: content %q, tool_call_error %v", content, ch["tool_call_error"])
	}
	// The named call's prompt: the think block closed (thinking off) and the
	// call's opening markup, a dozen tokens more than auto's.
	grow := forced["usage"].(map[string]any)["prompt_tokens"].(float64) - plain["usage"].(map[string]any)["prompt_tokens"].(float64)
	if grow < 8 || grow > 20 {
		t.Errorf("the forced prompt is %v tokens longer than auto's, want the call's markup and a closed think block", grow)
	}
}

// TestRealEngineLogprobs: the tiny model's reply with logprobs has an entry
// per token whose top choice is the token itself (greedy), their bytes
// spelling the reply's text.
func TestRealEngineLogprobs(t *testing.T) {
	ts := serveTinyMoE(t, 256)
	resp, err := client(ts.URL).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "tiny",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}, MaxTokens: openai.Int(5), Temperature: openai.Float(0),
		Logprobs: openai.Bool(true), TopLogprobs: openai.Int(3), ReasoningEffort: "none"})
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	var text []byte
	for _, e := range ch.Logprobs.Content {
		if len(e.TopLogprobs) != 3 || e.TopLogprobs[0].Token != e.Token || e.TopLogprobs[0].Logprob != e.Logprob {
			t.Errorf("entry %+v: a greedy token tops its position", e)
		}
		for _, b := range e.Bytes {
			text = append(text, byte(b))
		}
	}
	// A character cut by the token limit is one replacement character in
	// the text, its bytes as they are in the entries.
	if len(ch.Logprobs.Content) != 5 || strings.ToValidUTF8(string(text), "\uFFFD") != ch.Message.Content {
		t.Errorf("%d entries spelling %q; the reply %q", len(ch.Logprobs.Content), text, ch.Message.Content)
	}
}

// TestParallelLogprobs: with --parallel, requests asking for logprobs step
// together in the engine's batch (engine.Parallel), each reply and its
// entries those the same request gets from a server that serves one at a
// time, through the openai SDK.
func TestParallelLogprobs(t *testing.T) {
	e, err := engine.Load(testmodel.Dir(t, "tiny-moe"), engine.Options{Backend: "cpu", ContextLength: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ask := func(url, text string) *openai.ChatCompletion {
		resp, err := client(url).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "tiny",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}, MaxTokens: openai.Int(6), Temperature: openai.Float(0),
			Logprobs: openai.Bool(true), TopLogprobs: openai.Int(2), ReasoningEffort: "none"})
		if err != nil {
			t.Error(err)
			return nil
		}
		return resp
	}
	questions := []string{"Hi", "Name a colour.", "Why bagels?"}
	alone := make([]*openai.ChatCompletion, len(questions))
	one := serve(t, e, Options{})
	for i, q := range questions {
		alone[i] = ask(one.URL, q)
	}
	p, err := e.Parallel(len(questions), 256)
	if err != nil {
		t.Fatal(err)
	}
	many := serve(t, p, Options{Parallel: len(questions), Queue: 4})
	got := make([]*openai.ChatCompletion, len(questions))
	var wg sync.WaitGroup
	for i, q := range questions {
		wg.Go(func() { got[i] = ask(many.URL, q) })
	}
	wg.Wait()
	for i := range questions {
		if got[i] == nil || alone[i] == nil {
			continue
		}
		g, w := got[i].Choices[0], alone[i].Choices[0]
		if g.Message.Content != w.Message.Content || len(g.Logprobs.Content) != 6 || len(g.Logprobs.Content) != len(w.Logprobs.Content) {
			t.Errorf("question %d: %q with %d entries, alone %q with %d", i, g.Message.Content, len(g.Logprobs.Content), w.Message.Content, len(w.Logprobs.Content))
			continue
		}
		for j, entry := range g.Logprobs.Content {
			if want := w.Logprobs.Content[j]; entry.Token != want.Token || entry.Logprob != want.Logprob || len(entry.TopLogprobs) != 2 ||
				entry.TopLogprobs[1].Token != want.TopLogprobs[1].Token || entry.TopLogprobs[1].Logprob != want.TopLogprobs[1].Logprob {
				t.Errorf("question %d, token %d: %+v, alone %+v", i, j, entry, want)
			}
		}
	}
	if p.Tokens() != int64(6*len(questions)) {
		t.Errorf("the batch sent %d tokens of the replies' %d", p.Tokens(), 6*len(questions))
	}
}

// qwen35Model is the tiny MoE checkpoint with the Qwen3.5 chat template (its
// own is Qwen3's).
func qwen35Model(t *testing.T) string {
	t.Helper()
	dir := testmodel.Dir(t, "tiny-moe")
	src, err := os.ReadFile(filepath.Join(testmodel.Root(t), "tokenizer", "templates", "qwen35.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRealEnginePromptErrorsAreTheClients: a prompt the model cannot read (a
// token id outside the vocabulary, an empty text) is the client's to fix: a
// 400 that names it, not a server error.
func TestRealEnginePromptErrorsAreTheClients(t *testing.T) {
	ts := serveTinyMoE(t, 256)
	for _, c := range []struct{ name, body, want string }{
		{"a token id outside the vocabulary", `{"prompt":[1,2,999999999],"max_tokens":2}`, "token id 999999999 is outside the vocabulary"},
		{"an empty prompt", `{"prompt":"","max_tokens":2}`, "the prompt is empty"},
	} {
		for _, streamed := range []string{"false", "true"} {
			resp, body := post(t, ts.URL, "/v1/completions", strings.Replace(c.body, "{", `{"stream":`+streamed+",", 1))
			apiErr, _ := body["error"].(map[string]any)
			msg, _ := apiErr["message"].(string)
			if resp.StatusCode != 400 || apiErr["code"] != "invalid_prompt" || !strings.Contains(msg, c.want) {
				t.Errorf("%s (stream %s): %d %v; want 400 invalid_prompt with %q", c.name, streamed, resp.StatusCode, body, c.want)
			}
		}
	}
}

// serveTinyMoE serves the tiny MoE checkpoint on the CPU with a context of
// contextLength tokens, the engine closed after the server.
func serveTinyMoE(t *testing.T, contextLength int) *httptest.Server {
	t.Helper()
	e, err := engine.Load(testmodel.Dir(t, "tiny-moe"), engine.Options{Backend: "cpu", ContextLength: contextLength})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return serve(t, e, Options{})
}
