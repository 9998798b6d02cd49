package server

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"bagel/engine"
)

// client is the official OpenAI Go SDK pointed at a test server.
func client(url string, opts ...option.RequestOption) *openai.Client {
	c := openai.NewClient(append([]option.RequestOption{option.WithBaseURL(url + "/v1/"), option.WithAPIKey("unused"),
		option.WithMaxRetries(0)}, opts...)...)
	return &c
}

func asError(err error, target any) bool { return err != nil && errors.As(err, target) }

func TestSDKChatCompletion(t *testing.T) {
	eng := &fakeEngine{script: hello, ctxLen: 4096}
	ts := serve(t, eng, Options{})
	c := client(ts.URL)
	resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "tiny",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.DeveloperMessage("Be brief."), openai.UserMessage("Hi"),
			openai.AssistantMessage("Hello."), openai.UserMessage("Again?"),
		},
		Temperature: openai.Float(0.5),
		Seed:        openai.Int(7),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 1 {
		t.Fatalf("%d choices, want 1", len(resp.Choices))
	}
	ch := resp.Choices[0]
	if ch.Message.Content != "Hello, world!" || ch.FinishReason != "stop" || ch.Message.Role != "assistant" {
		t.Errorf("message %q, finish %q, role %q; want \"Hello, world!\", stop, assistant", ch.Message.Content, ch.FinishReason, ch.Message.Role)
	}
	var reasoning string
	if f, ok := ch.Message.JSON.ExtraFields["reasoning_content"]; !ok || json.Unmarshal([]byte(f.Raw()), &reasoning) != nil || reasoning != "The user greets. Reply kindly." {
		t.Errorf("reasoning_content %q, want the thinking tokens' text", reasoning)
	}
	u := resp.Usage
	if u.PromptTokens != 12 || u.CompletionTokens != 5 || u.TotalTokens != 17 || u.PromptTokensDetails.CachedTokens != 5 || u.CompletionTokensDetails.ReasoningTokens != 2 {
		t.Errorf("usage %+v: want 12 prompt (5 cached), 5 completion (2 reasoning), 17 total", u)
	}
	if resp.Object != "chat.completion" || resp.Model != "tiny" || resp.ID == "" {
		t.Errorf("object %q model %q id %q", resp.Object, resp.Model, resp.ID)
	}
	req := eng.requests()[0]
	roles := ""
	for _, m := range req.Messages {
		roles += m.Role + " "
	}
	if roles != "system user assistant user " || req.Messages[3].Content != "Again?" {
		t.Errorf("engine got roles %q (%+v): developer becomes system", roles, req.Messages)
	}
	if !req.EnableThinking || req.Sampling.Temperature != 0.5 || req.Sampling.Seed != 7 || req.MaxTokens != 4096 {
		t.Errorf("engine request thinking %v temperature %g seed %d max tokens %d: want thinking on (Qwen's default), 0.5, 7, the context",
			req.EnableThinking, req.Sampling.Temperature, req.Sampling.Seed, req.MaxTokens)
	}
}

func TestSDKChatStream(t *testing.T) {
	eng := &fakeEngine{script: hello, ctxLen: 4096}
	ts := serve(t, eng, Options{})
	c := client(ts.URL)
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:           "tiny",
		Messages:        []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")},
		StreamOptions:   openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		ReasoningEffort: shared.ReasoningEffortNone,
	})
	var acc openai.ChatCompletionAccumulator
	var reasoning string
	chunks := 0
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		chunks++
		if len(chunk.Choices) > 0 {
			if f, ok := chunk.Choices[0].Delta.JSON.ExtraFields["reasoning_content"]; ok {
				var s string
				json.Unmarshal([]byte(f.Raw()), &s)
				reasoning += s
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != "Hello, world!" {
		t.Errorf("streamed content %q, want \"Hello, world!\"", got)
	}
	if reasoning != "The user greets. Reply kindly." {
		t.Errorf("streamed reasoning %q", reasoning)
	}
	if acc.Choices[0].FinishReason != "stop" {
		t.Errorf("finish_reason %q, want stop", acc.Choices[0].FinishReason)
	}
	if acc.Usage.PromptTokens != 12 || acc.Usage.CompletionTokens != 5 || acc.Usage.PromptTokensDetails.CachedTokens != 5 {
		t.Errorf("streamed usage %+v", acc.Usage)
	}
	// role chunk, 5 pieces, the finish chunk, the usage chunk
	if chunks != 8 {
		t.Errorf("%d chunks, want 8", chunks)
	}
	if eng.requests()[0].EnableThinking {
		t.Error(`reasoning_effort "none" left thinking on`)
	}
}

func TestSDKCompletion(t *testing.T) {
	eng := &fakeEngine{script: []piece{{"1, 2", false}, {", 3", false}}, ctxLen: 100}
	ts := serve(t, eng, Options{})
	c := client(ts.URL)
	resp, err := c.Completions.New(context.Background(), openai.CompletionNewParams{
		Model:     "tiny",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("Count: 0, ")},
		MaxTokens: openai.Int(1),
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Text != "1, 2" || resp.Choices[0].FinishReason != "length" || resp.Object != "text_completion" {
		t.Errorf("text %q finish %q object %q; want \"1, 2\", length, text_completion", resp.Choices[0].Text, resp.Choices[0].FinishReason, resp.Object)
	}
	req := eng.requests()[0]
	if req.Prompt != "Count: 0, " || len(req.Messages) != 0 || req.EnableThinking || req.MaxTokens != 1 {
		t.Errorf("engine request %+v: want the raw prompt, no template, thinking off, 1 token", req)
	}
	// Token ids as the prompt go to the engine as they are.
	if _, err := c.Completions.New(context.Background(), openai.CompletionNewParams{Model: "tiny",
		Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: []int64{9707, 11}}}); err != nil {
		t.Fatal(err)
	}
	if ids := eng.requests()[1].PromptIDs; len(ids) != 2 || ids[0] != 9707 {
		t.Errorf("prompt ids %v, want [9707 11]", ids)
	}
}

func TestSDKModels(t *testing.T) {
	ts := serve(t, &fakeEngine{ctxLen: 10}, Options{})
	page, err := client(ts.URL).Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != "tiny" {
		t.Errorf("models %+v, want one, \"tiny\"", page.Data)
	}
}

func TestSDKAPIKey(t *testing.T) {
	ts := serve(t, &fakeEngine{script: hello, ctxLen: 10}, Options{APIKey: "s3cret"})
	params := openai.ChatCompletionNewParams{Model: "tiny", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}}
	_, err := client(ts.URL).Chat.Completions.New(context.Background(), params)
	var apiErr *openai.Error
	if !asError(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Fatalf("a wrong key: %v, want 401", err)
	}
	if _, err := client(ts.URL, option.WithAPIKey("s3cret")).Chat.Completions.New(context.Background(), params); err != nil {
		t.Fatalf("the right key: %v", err)
	}
}

// TestEngineErrorsKeepTheirStatus: a prompt longer than the context is the
// client's to fix (400, OpenAI's context_length_exceeded), streamed or not.
func TestEngineErrorsKeepTheirStatus(t *testing.T) {
	ts := serve(t, &fakeEngine{err: &engine.PromptTooLongError{Tokens: 900, ContextLength: 512}, ctxLen: 512}, Options{})
	params := openai.ChatCompletionNewParams{Model: "tiny", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("long")}}
	_, err := client(ts.URL).Chat.Completions.New(context.Background(), params)
	var apiErr *openai.Error
	if !asError(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "context_length_exceeded" {
		t.Fatalf("%v: want 400 context_length_exceeded", err)
	}
	stream := client(ts.URL).Chat.Completions.NewStreaming(context.Background(), params)
	for stream.Next() {
	}
	if !asError(stream.Err(), &apiErr) || apiErr.StatusCode != 400 {
		t.Fatalf("streamed: %v, want 400", stream.Err())
	}
}

// TestSDKLogprobs: logprobs with top_logprobs come back for each content
// token (not the reasoning's), whole and streamed, in OpenAI's shape; a
// completion's in the legacy parallel lists.
func TestSDKLogprobs(t *testing.T) {
	eng := &fakeEngine{script: hello, ctxLen: 4096}
	ts := serve(t, eng, Options{})
	c := client(ts.URL)
	params := openai.ChatCompletionNewParams{Model: "tiny", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")},
		Logprobs: openai.Bool(true), TopLogprobs: openai.Int(2)}
	resp, err := c.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	lp := resp.Choices[0].Logprobs.Content
	if len(lp) != 3 || lp[0].Token != "Hello" || lp[1].Token != ", world" || lp[0].Logprob != -0.25 || len(lp[0].TopLogprobs) != 2 ||
		lp[0].TopLogprobs[1].Token != "y" || len(lp[2].Bytes) != 1 || lp[2].Bytes[0] != '!' {
		t.Errorf("logprobs %+v", lp)
	}
	if r := eng.requests()[0]; !r.Logprobs || r.TopLogprobs != 2 {
		t.Errorf("the engine got logprobs %v top %d", r.Logprobs, r.TopLogprobs)
	}
	stream := c.Chat.Completions.NewStreaming(context.Background(), params)
	var tokens []string
	for stream.Next() {
		for _, ch := range stream.Current().Choices {
			for _, e := range ch.Logprobs.Content {
				tokens = append(tokens, e.Token)
			}
		}
	}
	if stream.Err() != nil || strings.Join(tokens, "|") != "Hello|, world|!" {
		t.Errorf("streamed logprobs %q (%v)", tokens, stream.Err())
	}
	_, body := post(t, ts.URL, "/v1/completions", `{"prompt":"Hi","logprobs":1}`)
	legacy := body["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)
	if toks := legacy["tokens"].([]any); len(toks) != 5 || legacy["text_offset"].([]any)[1].(float64) != float64(len("The user greets.")) {
		t.Errorf("completion logprobs %v", legacy)
	}
}
