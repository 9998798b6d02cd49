package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

func TestEncodeMatchesReference(t *testing.T) {
	tok := loadQwen3(t)
	r := loadRefs(t)
	if len(r.Encode) == 0 {
		t.Fatal("refs.json.gz has no encode references")
	}
	checkEncodeRefs(t, tok, r.Encode)
}

func TestEncodeQwen35PatternMatchesReference(t *testing.T) {
	r := loadRefs(t)
	pattern, err := os.ReadFile(filepath.Join(testdataDir, "qwen35_split_pattern.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Qwen35Pattern != string(pattern) {
		t.Fatalf("refs were made with pattern %q, testdata has %q", r.Qwen35Pattern, pattern)
	}
	if len(r.EncodeQwen35Pattern) == 0 {
		t.Fatal("refs.json.gz has no Qwen3.5-pattern references")
	}
	checkEncodeRefs(t, loadQwen35Pattern(t), r.EncodeQwen35Pattern)
}

// checkEncodeRefs compares ids and decoded text exactly, and checks that
// decoding gives back the (NFC-normalized) input.
func checkEncodeRefs(t *testing.T, tok *Tokenizer, cases []encodeRef) {
	t.Helper()
	for _, c := range cases {
		got := tok.Encode(c.Text)
		if !slices.Equal(got, c.IDs) {
			t.Errorf("%s: Encode(%.60q)\n got %v\nwant %v", c.Name, c.Text, head(got), head(c.IDs))
		}
		dec := tok.Decode(c.IDs)
		if dec != c.Decoded {
			t.Errorf("%s: Decode = %.60q, reference decode %.60q", c.Name, dec, c.Decoded)
		}
		if want := norm.NFC.String(c.Text); dec != want {
			t.Errorf("%s: round trip gave %.60q, want %.60q", c.Name, dec, want)
		}
	}
}

func head(ids []int32) []int32 {
	if len(ids) > 40 {
		return ids[:40]
	}
	return ids
}

func TestKnownTokens(t *testing.T) {
	tok := loadQwen3(t)
	if got := tok.VocabSize(); got != 151669 {
		t.Errorf("VocabSize = %d, want 151669 (151643 BPE tokens + 26 added)", got)
	}
	for s, want := range map[string]int32{"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645, "<think>": 151667, "</think>": 151668, "Ġthe": 279} {
		id, ok := tok.TokenID(s)
		if !ok || id != want {
			t.Errorf("TokenID(%q) = %d, %v; want %d", s, id, ok, want)
		}
		if got := tok.TokenString(want); got != s {
			t.Errorf("TokenString(%d) = %q, want %q", want, got, s)
		}
	}
	if _, ok := tok.TokenID("no such token"); ok {
		t.Error("TokenID of a missing token reported ok")
	}
	if tok.TokenString(-1) != "" || tok.TokenString(int32(tok.VocabSize())) != "" {
		t.Error("TokenString outside the vocab is not empty")
	}
	if !tok.IsSpecial(151645) || tok.IsSpecial(279) {
		t.Error("IsSpecial wrong for <|im_end|> or Ġthe")
	}
	if id, ok := tok.EOSTokenID(); !ok || id != 151645 {
		t.Errorf("EOSTokenID = %d, %v; want 151645 (<|im_end|>)", id, ok)
	}
	if got := tok.Encode("<|im_start|>user\nHello world<|im_end|>"); !slices.Equal(got, []int32{151644, 872, 198, 9707, 1879, 151645}) {
		t.Errorf("Encode of a chat turn = %v", got)
	}
}

func TestStreamDecoderHoldsBackSplitCharacters(t *testing.T) {
	tok := loadQwen3(t)
	text := "family 👨‍👩‍👧‍👦, thumbs 👍🏽, 中文 and 🙂🙂"
	ids := tok.Encode(text)
	d := tok.NewStreamDecoder()
	var sb strings.Builder
	empty := 0
	for _, id := range ids {
		delta := d.Add(id)
		if !utf8.ValidString(delta) || strings.ContainsRune(delta, utf8.RuneError) {
			t.Fatalf("delta %q after token %d is not clean UTF-8", delta, id)
		}
		if delta == "" {
			empty++
		}
		sb.WriteString(delta)
	}
	sb.WriteString(d.Flush())
	if sb.String() != text {
		t.Fatalf("streamed %q, want %q", sb.String(), text)
	}
	if empty == 0 {
		t.Error("no token was held back; the test text should split emoji across tokens")
	}

	// One byte-level token per byte of 🙂 (F0 9F 99 82): nothing until the last.
	byteToken := func(b byte) int32 { id, _ := tok.TokenID(string(byteToRune[b])); return id }
	for i, b := range []byte("🙂") {
		got := d.Add(byteToken(b))
		if want := map[bool]string{true: "🙂", false: ""}[i == 3]; got != want {
			t.Errorf("byte %d: Add = %q, want %q", i, got, want)
		}
	}
	// Bytes that can never become a character come out as U+FFFD at once;
	// an unfinished sequence comes out as U+FFFD on Flush.
	if got := d.Add(byteToken(0x80)); got != "\uFFFD" {
		t.Errorf("lone continuation byte: Add = %q, want U+FFFD", got)
	}
	if got := d.Add(byteToken(0xE4)); got != "" {
		t.Errorf("start of a 3-byte sequence: Add = %q, want nothing yet", got)
	}
	if got := d.Add(byteToken('a')); got != "\uFFFDa" {
		t.Errorf("interrupted sequence: Add = %q, want U+FFFD a", got)
	}
	d.Add(byteToken(0xF0))
	if got := d.Flush(); got != "\uFFFD" {
		t.Errorf("Flush of an unfinished sequence = %q, want U+FFFD", got)
	}
}

func TestStreamDecoderMatchesDecode(t *testing.T) {
	tok := loadQwen3(t)
	// Every split point of byte-level tokens over a mix of valid and invalid
	// UTF-8 must give the same text as decoding all at once.
	raw := []byte("a\xe4\xb8\xadb\xf0\x9f\x99\x82\xe4\xb8c\xed\xa0\x80\xf4\x90\x80\x80\xc0\xafz\xf0\x9f")
	var ids []int32
	for _, b := range raw {
		id, _ := tok.TokenID(string(byteToRune[b]))
		ids = append(ids, id)
	}
	want := tok.Decode(ids)
	d := tok.NewStreamDecoder()
	var sb strings.Builder
	for _, id := range ids {
		delta := d.Add(id)
		if !utf8.ValidString(delta) {
			t.Fatalf("invalid UTF-8 delta %q", delta)
		}
		sb.WriteString(delta)
	}
	sb.WriteString(d.Flush())
	if sb.String() != want {
		t.Errorf("streamed %q, Decode gave %q", sb.String(), want)
	}
	// from_utf8_lossy's answer for raw: one U+FFFD per maximal invalid subpart.
	if lossy := "a中b🙂\uFFFDc\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFDz\uFFFD"; want != lossy {
		t.Errorf("Decode = %q, want %q", want, lossy)
	}
}

func TestLoadErrors(t *testing.T) {
	write := func(t *testing.T, files map[string]string) string {
		dir := t.TempDir()
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	const byteLevel = `"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}, "decoder": {"type": "ByteLevel"}`
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"missing", map[string]string{}, "tokenizer.json: not found in"},
		{"malformed", map[string]string{"tokenizer.json": `{"model": {`}, "tokenizer.json: malformed JSON"},
		{"wordpiece", map[string]string{"tokenizer.json": `{"model": {"type": "WordPiece", "vocab": {}}, ` + byteLevel + `}`}, "tokenizer.json: tokenizer model WordPiece is not supported"},
		{"no model", map[string]string{"tokenizer.json": `{"added_tokens": []}`}, "tokenizer.json: no model section"},
		{"normalizer", map[string]string{"tokenizer.json": `{"normalizer": {"type": "Lowercase"}, "model": {"type": "BPE", "vocab": {}, "merges": []}, ` + byteLevel + `}`}, "normalizer Lowercase is not supported"},
		{"pretokenizer", map[string]string{"tokenizer.json": `{"pre_tokenizer": {"type": "Whitespace"}, "model": {"type": "BPE", "vocab": {}, "merges": []}, "decoder": {"type": "ByteLevel"}}`}, "pre-tokenizer Whitespace is not supported"},
		{"no byte tokens", map[string]string{"tokenizer.json": `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, ` + byteLevel + `}`}, "vocab has no byte-level token"},
		{"a lone huge id", map[string]string{"tokenizer.json": `{"model": {"type": "BPE", "vocab": {"a": 0, "b": 2147483647}, "merges": []}, ` + byteLevel + `}`}, "token ids run to 2147483647, yet the file names only 2 tokens"},
		{"bad config", map[string]string{"tokenizer.json": string(gunzipFile(t, filepath.Join(testdataDir, "qwen3", "tokenizer.json.gz"))), "tokenizer_config.json": `{"eos_token": `}, "tokenizer_config.json: malformed JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(write(t, c.files))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open error = %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestBadSplitPatternIsAnError(t *testing.T) {
	_, err := parsePreTokenizer(&component{Type: "Sequence", Pretokenizers: []component{
		{Type: "Split", Behavior: "Isolated", Pattern: &pattern{Regex: ptr(`(unclosed`)}},
		{Type: "ByteLevel", UseRegex: ptr(false)},
	}})
	if err == nil || !strings.Contains(err.Error(), "split pattern") {
		t.Fatalf("error = %v, want a split pattern error", err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestEncodeLongInputs(t *testing.T) {
	tok := loadQwen3(t)
	// Long single pieces exercise the heap merge; the results must still
	// round-trip.
	for _, text := range []string{strings.Repeat("a", 100_000), strings.Repeat(" ", 50_000) + "x", strings.Repeat("😀", 10_000)} {
		if got := tok.Decode(tok.Encode(text)); got != text {
			t.Errorf("round trip of %d bytes failed", len(text))
		}
	}
}

// BenchmarkEncode100KB encodes about 100 KB of mixed prose, code and CJK.
func BenchmarkEncode100KB(b *testing.B) {
	tok := loadQwen3(b)
	para := "The quick brown fox jumps over the lazy dog; DON'T panic, it's 3.14159!\n" +
		"func main() {\n\tfmt.Println(\"hello, 世界\")\n}\n" +
		"机器学习是人工智能的一个分支。 Les élèves étudient à l'école. 🙂👍🏽\n\n"
	text := strings.Repeat(para, 100_000/len(para)+1)[:100_000]
	for !utf8.ValidString(text) {
		text = text[:len(text)-1]
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Encode(text)
	}
}
