package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"bagel/engine"
	"bagel/internal/testmodel"
)

// TestRealEngineReusesTheConversation serves the tiny MoE checkpoint on the
// CPU: a second turn of the same chat reads its first turn's prompt from the
// prompt cache, and the usage says so (prompt_tokens_details.cached_tokens).
func TestRealEngineReusesTheConversation(t *testing.T) {
	e, err := engine.Load(testmodel.Dir(t, "tiny-moe"), engine.Options{Backend: "cpu", ContextLength: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ts := serve(t, e, Options{})
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

// TestRealEngineRefusesWhatTheTemplateCannot: the tiny model's template is
// Qwen3's, which Bagel does not give tools: a 400 naming it, not a 500.
func TestRealEngineRefusesWhatTheTemplateCannot(t *testing.T) {
	e, err := engine.Load(testmodel.Dir(t, "tiny-moe"), engine.Options{Backend: "cpu", ContextLength: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ts := serve(t, e, Options{})
	resp, body := post(t, ts.URL, "/v1/chat/completions", `{"tools":[`+string(weatherTool)+`],`+hi+`}`)
	msg, _ := body["error"].(map[string]any)["message"].(string)
	if resp.StatusCode != 400 || !strings.Contains(msg, "Qwen3.5 templates only") {
		t.Errorf("%d %q, want 400 naming the template", resp.StatusCode, msg)
	}
	resp, body = post(t, ts.URL, "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`)
	if resp.StatusCode != 400 {
		t.Errorf("a conversation ending with the assistant: %d %v, want 400", resp.StatusCode, body)
	}
}

// TestRealEngineListsTheTools: under a Qwen3.5 template the tools reach the
// prompt (hundreds of tokens of tool list and instructions).
func TestRealEngineListsTheTools(t *testing.T) {
	dir := testmodel.Dir(t, "tiny-moe")
	src, err := os.ReadFile(filepath.Join(testmodel.Root(t), "tokenizer", "templates", "qwen35.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := engine.Load(dir, engine.Options{Backend: "cpu", ContextLength: 1024})
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
