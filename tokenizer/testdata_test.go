package tokenizer

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Test inputs live in ../testdata/tokenizer (see tools/goldens/TOKENIZER.md):
// the real Qwen3 tokenizer files, gzip-compressed, and refs.json.gz from
// tools/goldens/tokenizer_refs.py.
const testdataDir = "../testdata/tokenizer"

// gunzipFile returns the decompressed contents of a testdata file.
func gunzipFile(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return data
}

// qwen3Dir writes the Qwen3 tokenizer files into a fresh temporary model folder.
func qwen3Dir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		data := gunzipFile(t, filepath.Join(testdataDir, "qwen3", name+".gz"))
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// qwen3Pattern is the split pattern in the Qwen3 tokenizer.json.
const qwen3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// qwen35PatternDir is qwen3Dir with the Qwen3.5 split pattern swapped in.
func qwen35PatternDir(t testing.TB) string {
	t.Helper()
	dir := qwen3Dir(t)
	pattern, err := os.ReadFile(filepath.Join(testdataDir, "qwen35_split_pattern.txt"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tokenizer.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	oldJSON, _ := json.Marshal(qwen3Pattern)
	newJSON, _ := json.Marshal(string(pattern))
	if n := strings.Count(string(data), string(oldJSON)); n != 1 {
		t.Fatalf("Qwen3 pattern found %d times in tokenizer.json, want 1", n)
	}
	data = []byte(strings.Replace(string(data), string(oldJSON), string(newJSON), 1))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Loading the 11 MB tokenizer.json takes a noticeable fraction of a second,
// so the tests share one copy of each tokenizer.
var (
	qwen3Once, qwen35Once sync.Once
	qwen3Tok, qwen35Tok   *Tokenizer
	qwen3Err, qwen35Err   error
)

func loadQwen3(t testing.TB) *Tokenizer {
	t.Helper()
	qwen3Once.Do(func() { qwen3Tok, qwen3Err = Open(qwen3Dir(t)) })
	if qwen3Err != nil {
		t.Fatal(qwen3Err)
	}
	return qwen3Tok
}

func loadQwen35Pattern(t testing.TB) *Tokenizer {
	t.Helper()
	qwen35Once.Do(func() { qwen35Tok, qwen35Err = Open(qwen35PatternDir(t)) })
	if qwen35Err != nil {
		t.Fatal(qwen35Err)
	}
	return qwen35Tok
}

// refs mirrors refs.json.gz.
type refs struct {
	Versions            map[string]string `json:"versions"`
	Errors              []string          `json:"errors"`
	Encode              []encodeRef       `json:"encode"`
	Qwen35Pattern       string            `json:"qwen35_pattern"`
	EncodeQwen35Pattern []encodeRef       `json:"encode_qwen35_pattern"`
	Chat                []chatRef         `json:"chat"`
}

type encodeRef struct {
	Name    string  `json:"name"`
	Text    string  `json:"text"`
	IDs     []int32 `json:"ids"`
	Decoded string  `json:"decoded"`
}

type chatRef struct {
	Template     string `json:"template"`
	Conversation string `json:"conversation"`
	Messages     []struct {
		Role             string  `json:"role"`
		Content          string  `json:"content"`
		ReasoningContent *string `json:"reasoning_content"`
		ToolCalls        []struct {
			Function ToolCall `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools               []json.RawMessage `json:"tools"`
	AddGenerationPrompt bool              `json:"add_generation_prompt"`
	EnableThinking      bool              `json:"enable_thinking"`
	Text                *string           `json:"text"`
	Error               string            `json:"error"`
}

var (
	refsOnce   sync.Once
	loadedRefs refs
)

func loadRefs(t testing.TB) *refs {
	t.Helper()
	path := filepath.Join(testdataDir, "refs.json.gz")
	var err error
	refsOnce.Do(func() { err = json.Unmarshal(gunzipFile(t, path), &loadedRefs) })
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(loadedRefs.Errors) > 0 {
		t.Fatalf("%s was generated with errors: %v", path, loadedRefs.Errors)
	}
	return &loadedRefs
}
