package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzEncodeDecode: any text encodes to ids inside the vocabulary, decodes
// back to a string, and the streaming decoder gives the same text as Decode.
func FuzzEncodeDecode(f *testing.F) {
	tok, err := Open(qwen3Dir(f))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"Hello world", "<|im_start|>user\nhi<|im_end|>", "  \t\n", "日本語のテキスト", "\xff\xfe", "a\u0301"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s)
		for _, id := range ids {
			if id < 0 || int(id) >= tok.VocabSize() {
				t.Fatalf("%q: id %d outside the vocabulary", s, id)
			}
		}
		whole := tok.Decode(ids)
		d := tok.NewStreamDecoder()
		var streamed strings.Builder
		for _, id := range ids {
			streamed.WriteString(d.Add(id))
		}
		streamed.WriteString(d.Flush())
		if streamed.String() != whole {
			t.Fatalf("%q: streamed %q, decoded %q", s, streamed.String(), whole)
		}
		if utf8.ValidString(s) && !utf8.ValidString(whole) {
			t.Fatalf("%q: valid text decodes to invalid UTF-8 %q", s, whole)
		}
	})
}

// FuzzRenderTemplate: any message contents render without a panic.
func FuzzRenderTemplate(f *testing.F) {
	tok, err := Open(qwen3Dir(f))
	if err != nil {
		f.Fatal(err)
	}
	tmpl, err := tok.Template()
	if err != nil {
		f.Fatal(err)
	}
	f.Add("system prompt", "Hi <think>x</think>", "user")
	f.Add("", "{{ bad }}", "assistant")
	f.Fuzz(func(t *testing.T, system, content, role string) {
		msgs := []Message{{Role: "system", Content: system}, {Role: role, Content: content}}
		_, _ = tmpl.Render(msgs, RenderOptions{AddGenerationPrompt: true, EnableThinking: len(content)%2 == 0})
	})
}
