package server

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	"bagel/engine"
	"bagel/tokenizer"
)

// textOnly is an engine without EncodeImage (as a remote engine is).
type textOnly struct{ f *fakeEngine }

func (e textOnly) Generate(ctx context.Context, req engine.Request) <-chan engine.Event {
	return e.f.Generate(ctx, req)
}
func (e textOnly) PromptTokens(req engine.Request) ([]int32, error) { return e.f.PromptTokens(req) }
func (e textOnly) ContextLength() int                               { return e.f.ContextLength() }
func (e textOnly) ToolCallPrefix(name string) (string, error)       { return e.f.ToolCallPrefix(name) }

// TestImagesInRequests: an image in each API's form reaches the engine as
// one of Request.Images with an image part where the message had it (the
// OpenAI and Anthropic orders kept; Ollama's images before the text), and
// what cannot be read is refused by name: a URL to fetch, broken base64,
// a file that is not an image, an image in an assistant message, an
// engine that reads no images.
func TestImagesInRequests(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "vision", "big.png"))
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString(data)
	eng := &fakeEngine{script: hello, ctxLen: 4096}
	url := serve(t, eng, Options{}).URL
	for _, c := range []struct {
		path, body string
		parts      []tokenizer.Part
	}{
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"text","text":"What is "},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + b64 + `"}},{"type":"text","text":"?"}]}]}`,
			[]tokenizer.Part{{Text: "What is "}, {Image: true}, {Text: "?"}}},
		{"/v1/messages", `{"max_tokens":10,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + b64 + `"}},{"type":"text","text":"Describe it."}]}]}`,
			[]tokenizer.Part{{Image: true}, {Text: "Describe it."}}},
		{"/api/chat", `{"model":"tiny","stream":false,"messages":[{"role":"user","content":"What is it?","images":["` + b64 + `"]}]}`,
			[]tokenizer.Part{{Image: true}, {Text: "What is it?"}}},
		{"/api/generate", `{"model":"tiny","stream":false,"prompt":"And this?","images":["` + b64 + `"]}`,
			[]tokenizer.Part{{Image: true}, {Text: "And this?"}}},
		{"/v1/responses", `{"input":[{"role":"user","content":[{"type":"input_text","text":"Look: "},{"type":"input_image","image_url":"data:image/png;base64,` + b64 + `"}]}]}`,
			[]tokenizer.Part{{Text: "Look: "}, {Image: true}}},
	} {
		before := len(eng.requests())
		resp, out := post(t, url, c.path, c.body)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d %v", c.path, resp.StatusCode, out)
			continue
		}
		reqs := eng.requests()
		if len(reqs) != before+1 {
			t.Fatalf("%s: the engine got %d requests", c.path, len(reqs)-before)
		}
		req := reqs[len(reqs)-1]
		user := req.Messages[len(req.Messages)-1]
		if len(req.Images) != 1 || fmt.Sprint(user.Parts) != fmt.Sprint(c.parts) || user.Content != "" {
			t.Errorf("%s: %d images, parts %+v content %q; want 1 image and parts %+v", c.path, len(req.Images), user.Parts, user.Content, c.parts)
		}
	}

	// count_tokens counts an image as its tokens (the fake's 4 for one pad:
	// 3 more than the text alone).
	count := func(body string) float64 {
		_, out := post(t, url, "/v1/messages/count_tokens", body)
		n, _ := out["input_tokens"].(float64)
		return n
	}
	withImage := count(`{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","data":"` + b64 + `"}},{"type":"text","text":"Describe it."}]}]}`)
	if textOnly := count(`{"messages":[{"role":"user","content":"Describe it."}]}`); withImage != textOnly+4 {
		t.Errorf("count_tokens: %v with the image, %v without; want 4 more (the fake counts words, the image is 4 tokens)", withImage, textOnly)
	}

	// More images than one request may carry.
	var many strings.Builder
	for i := range maxImages + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`{"type":"image_url","image_url":{"url":"data:image/png;base64,` + b64 + `"}}`)
	}
	if resp, out := post(t, url, "/v1/chat/completions", `{"messages":[{"role":"user","content":[`+many.String()+`]}]}`); resp.StatusCode != http.StatusBadRequest ||
		!strings.Contains(fmt.Sprint(out), "17 images in one request: at most 16") {
		t.Errorf("17 images: %d %v", resp.StatusCode, out)
	}

	notPNG := base64.StdEncoding.EncodeToString([]byte("hello"))
	for _, c := range []struct {
		eng        Engine
		path, body string
		want       string
	}{
		{eng, "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]}]}`, "only data: URLs"},
		{eng, "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,@@@"}}]}]}`, "does not decode"},
		{eng, "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + notPNG + `"}}]}]}`, "image 1: image: not a PNG"},
		{eng, "/v1/chat/completions", `{"messages":[{"role":"assistant","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + b64 + `"}}]},{"role":"user","content":"hi"}]}`, "only user messages carry images"},
		{eng, "/v1/messages", `{"max_tokens":10,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.com/cat.png"}}]}]}`, "only a base64 source"},
		{eng, "/api/chat", `{"model":"tiny","messages":[{"role":"user","content":"x","images":["` + notPNG + `"]}]}`, "not a PNG"},
		{eng, "/api/generate", `{"model":"tiny","raw":true,"prompt":"x","images":["` + b64 + `"]}`, "images with raw"},
		{eng, "/v1/responses", `{"input":[{"role":"user","content":[{"type":"input_image","file_id":"file-1"}]}]}`, "stored files are not read"},
		{textOnly{eng}, "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + b64 + `"}}]}]}`, "does not read images"},
	} {
		u := url
		if _, plain := c.eng.(textOnly); plain {
			u = serve(t, c.eng, Options{}).URL
		}
		resp, out := post(t, u, c.path, c.body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(fmt.Sprint(out), c.want) {
			t.Errorf("%s %s: %d %v; want 400 naming %q", c.path, c.body[:min(60, len(c.body))], resp.StatusCode, out, c.want)
		}
	}
}

// TestSDKImages: the official openai and anthropic SDKs send an image the
// way their users do, and the engine gets it.
func TestSDKImages(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "vision", "big.png"))
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString(data)
	eng := &fakeEngine{script: hello, ctxLen: 4096}
	ts := serve(t, eng, Options{})
	_, err = client(ts.URL).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "tiny",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("What is in this picture?"),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64," + b64}),
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = anthropicClient(ts.URL).Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "tiny", MaxTokens: 10,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewImageBlockBase64("image/png", b64), anthropic.NewTextBlock("And this one?"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]tokenizer.Part{{{Text: "What is in this picture?"}, {Image: true}}, {{Image: true}, {Text: "And this one?"}}} {
		req := eng.requests()[i]
		if len(req.Images) != 1 || fmt.Sprint(req.Messages[0].Parts) != fmt.Sprint(want) {
			t.Errorf("request %d: %d images, parts %+v; want %+v", i, len(req.Images), req.Messages[0].Parts, want)
		}
	}
}
