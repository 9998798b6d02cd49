package tokenizer

import (
	"encoding/json"
	"fmt"
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

// tinyTokenizerJSON is a byte-level BPE of the 256 byte tokens, two merges
// ("h e", "he l") and one special token: a seed small enough to mutate.
func tinyTokenizerJSON() string {
	var vocab strings.Builder
	vocab.WriteString("{")
	for b := 0; b < 256; b++ {
		q, _ := json.Marshal(string(byteToRune[b]))
		fmt.Fprintf(&vocab, "%s:%d,", q, b)
	}
	vocab.WriteString(`"he":256,"hel":257}`)
	return `{"added_tokens":[{"id":258,"content":"<|end|>","special":true}],` +
		`"normalizer":{"type":"NFC"},` +
		`"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"\\s+|\\w+|[^\\s\\w]+"},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]},` +
		`"decoder":{"type":"ByteLevel"},` +
		`"model":{"type":"BPE","vocab":` + vocab.String() + `,"merges":["h e","he l"]}}`
}

// FuzzParseTokenizer: any tokenizer.json a model folder may hold is refused
// with an error, or loads into a tokenizer whose ids stay inside its
// vocabulary and which does not use more memory than the file could
// describe (a lone huge id must not allocate gigabytes).
func FuzzParseTokenizer(f *testing.F) {
	f.Add([]byte(tinyTokenizerJSON()))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":2147483647},"merges":[]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := parseTokenizer(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		if tok.VocabSize() > len(data)+maxIDGap {
			t.Fatalf("%d bytes of file give %d ids", len(data), tok.VocabSize())
		}
		for _, s := range []string{"hello <|end|> world", "  x\n", "日本"} {
			for _, id := range tok.Encode(s) {
				if id < 0 || int(id) >= tok.VocabSize() {
					t.Fatalf("%q: id %d outside the vocabulary of %d", s, id, tok.VocabSize())
				}
			}
			tok.Decode(tok.Encode(s))
		}
	})
}
