package server

import (
	"context"
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
