package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bagel/engine"
	"bagel/internal/testmodel"
	"bagel/switches"
)

// runCLI runs one command line and returns its exit status, stdout and stderr.
func runCLI(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestServeModelID(t *testing.T) {
	for _, c := range []struct{ arg, dir, want string }{
		{"Qwen/Qwen3.5-4B-MLX-4bit", "/home/u/.cache/huggingface/hub/models--Qwen--Qwen3.5-4B-MLX-4bit/snapshots/abc", "Qwen/Qwen3.5-4B-MLX-4bit"},
		{"Qwen/Qwen3.5-4B@main", "/c/models--Qwen--Qwen3.5-4B/snapshots/abc", "Qwen/Qwen3.5-4B"},
		{"/c/models--mlx-community--Qwen3.5-9B/snapshots/abc", "/c/models--mlx-community--Qwen3.5-9B/snapshots/abc", "mlx-community/Qwen3.5-9B"},
		{"models/my-qwen/", "models/my-qwen/", "my-qwen"},
	} {
		if got := modelID(c.arg, c.dir); got != c.want {
			t.Errorf("modelID(%q, %q) = %q, want %q", c.arg, c.dir, got, c.want)
		}
	}
}

// TestUsageAndErrors: the exit status and message of help, an unknown command
// and missing or bad flags, none of which needs a model.
func TestUsageAndErrors(t *testing.T) {
	cases := []struct {
		args   []string
		code   int
		stderr string // a part of it
	}{
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"tokenize", "--text", "hi"}, 1, "bagel tokenize: -m DIR is required"},
		{[]string{"score"}, 1, "-m DIR and --ids are required"},
		{[]string{"score", "-m", "x"}, 1, "--ids is required"},
		{[]string{"template", "-m", "x"}, 1, "--messages FILE is required"},
		{[]string{"detokenize", "-m", "x", "--ids", "1,a"}, 1, `--ids: "a" is not a token id`},
		{[]string{"generate", "--no-such-flag"}, 1, "flag provided but not defined"},
		{[]string{"generate", "-m", "x", "--temp", "Inf"}, 1, "--temp +Inf: want a number ≥ 0"},
		{[]string{"generate", "-m", "x", "--repetition-penalty", "0"}, 1, "--repetition-penalty 0: want a number > 0 and at most 100 (1: off)"},
		{[]string{"generate", "-m", "x", "--repetition-penalty", "1e308"}, 1, "--repetition-penalty 1e+308: want a number > 0 and at most 100"},
		{[]string{"generate", "-m", "x", "-p", "a", "b"}, 1, "the message is given twice"},
		{[]string{"replay", "-m", "x", "--messages", "f", "--prompt-cache-mb", "9999999999999"}, 1, "--prompt-cache-mb 9999999999999: want 0 (the default) to 1048576"},
		{[]string{"generate", "-m", "x", "--context", "-5"}, 1, "--context -5"},
		{[]string{"generate", "-m", "x", "--top-p", "1.5"}, 1, "--top-p 1.5"},
		{[]string{"score", "-m", "x", "--ids", "1", "--top", "0"}, 1, "--top 0: want 1 or more"},
		{[]string{"score", "-m", "x", "--ids", "1", "--top", "-5"}, 1, "--top -5"},
		{[]string{"score", "-m", "x", "--ids", "1", "--prefill", "-1"}, 1, "--prefill -1"},
		{[]string{"synth", "--like", "qwen3.5-35b-a3b", "--experts", "-1", "--out", "x"}, 1, "--experts -1"},
		{[]string{"generate", "-m", "x", "--speculative", "maybe"}, 1, `--speculative "maybe": want off, ngram, tree or mtp`},
		{[]string{"generate", "-m", "x", "--speculative", "tree", "--tree-width", "9"}, 1, "--tree-width 9: want 2 to 3"},
		{[]string{"generate", "-m", "x", "--draft", "16"}, 1, "--draft 16: want 0 (the default) to 15"},
		{[]string{"serve", "-m", "x", "--host", "0.0.0.0"}, 1, "serving on 0.0.0.0 (not this machine alone) needs an API key"},
		{[]string{"serve", "-m", "x", "--port", "70000"}, 1, "--port 70000: want 0 (any free port) to 65535"},
		{[]string{"serve", "-m", "x", "--queue", "0"}, 1, "--queue 0: want 1 to 1024"},
		{[]string{"serve", "-m", "x", "extra"}, 1, `unexpected arguments "extra"`},
		{[]string{"serve", "-m", "x", "--parallel", "17"}, 1, "--parallel 17: want 1 to 16"},
		{[]string{"synth", "--like", "dense-small", "--vision", "--vision-depth", "99", "--out", "x"}, 1, "--vision-depth 99: want 1 to 64 blocks"},
		{[]string{"serve", "-m", "x", "--parallel", "2", "--parallel-context", "-1"}, 1, "--parallel-context -1: want 0"},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(c.args...)
		if code != c.code || !strings.Contains(stderr, c.stderr) {
			t.Errorf("bagel %s: exit %d, stderr %q; want exit %d and %q", strings.Join(c.args, " "), code, stderr, c.code, c.stderr)
		}
	}
}

// TestHelpAsPeopleUseIt: help asked for goes to stdout (`bagel help | less`),
// `bagel help COMMAND` is the command's help, flags print as the README
// writes them (-m DIR, --max-tokens), a command's help names its arguments,
// and a command without flags says so.
func TestHelpAsPeopleUseIt(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string // in stdout
	}{
		{[]string{"help"}, []string{"Commands:", "bagel help COMMAND"}},
		{[]string{"--help"}, []string{"Commands:"}},
		{[]string{"help", "generate"}, []string{"usage: bagel generate [flags] [MESSAGE]", "  --max-tokens int", "  -m DIR", "  -p string"}},
		{[]string{"generate", "-h"}, []string{"--max-tokens"}},
		{[]string{"pull", "-h"}, []string{"usage: bagel pull [flags] ORG/NAME[@REVISION]", "--any"}},
		{[]string{"models", "-h"}, []string{"usage: bagel models", "--remote URL"}},
	} {
		code, stdout, stderr := runCLI(c.args...)
		if code != 0 || stderr != "" {
			t.Errorf("bagel %s: exit %d, stderr %q", strings.Join(c.args, " "), code, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("bagel %s: stdout lacks %q:\n%s", strings.Join(c.args, " "), w, stdout)
			}
		}
		if strings.Contains(stdout, "\n  -max-tokens") {
			t.Errorf("bagel %s: a long flag with one dash", strings.Join(c.args, " "))
		}
	}
}

// TestCommandsOnTinyModel runs every command against the tiny test model and
// checks the output formats of ARCHITECTURE.md.
func TestCommandsOnTinyModel(t *testing.T) {
	dir := testmodel.Dir(t, "tiny-moe")

	code, out, stderr := runCLI("tokenize", "-m", dir, "--text", "Hello world")
	var ids []int
	if code != 0 || json.Unmarshal([]byte(out), &ids) != nil || len(ids) == 0 {
		t.Fatalf("tokenize: exit %d, %q, %s", code, out, stderr)
	}
	idList := strings.Trim(strings.ReplaceAll(strings.TrimSpace(out), " ", ""), "[]")
	if code, out, stderr := runCLI("detokenize", "-m", dir, "--ids", idList); code != 0 || out != "Hello world\n" {
		t.Errorf("detokenize %s: exit %d, %q, %s", idList, code, out, stderr)
	}
	if code, _, stderr := runCLI("detokenize", "-m", dir, "--ids", "99999999"); code != 1 || !strings.Contains(stderr, "outside the vocabulary") {
		t.Errorf("detokenize of an id outside the vocabulary: exit %d, %s", code, stderr)
	}

	msgs := filepath.Join(t.TempDir(), "chat.json")
	os.WriteFile(msgs, []byte(`[{"role":"user","content":"Hi"}]`), 0o644)
	code, out, stderr = runCLI("template", "-m", dir, "--messages", msgs, "--no-think")
	if code != 0 || !strings.Contains(out, "<|im_start|>user\nHi<|im_end|>") || !strings.HasSuffix(out, "<|im_start|>assistant\n<think>\n\n</think>\n\n") {
		t.Errorf("template: exit %d, %q, %s", code, out, stderr)
	}

	code, out, stderr = runCLI("score", "-m", dir, "--ids", idList, "--top", "3", "--backend", "cpu")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != len(ids) {
		t.Fatalf("score: exit %d, %d lines for %d ids, %s", code, len(lines), len(ids), stderr)
	}
	var first struct {
		Pos       int       `json:"pos"`
		TopIDs    []int     `json:"top_ids"`
		TopLogits []float64 `json:"top_logits"`
		LSE       *float64  `json:"logsumexp"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.Pos != 0 || len(first.TopIDs) != 3 || len(first.TopLogits) != 3 || first.LSE == nil {
		t.Errorf("score line 0: %s (%v)", lines[0], err)
	}

	// The reply on stdout, the stats line on stderr.
	code, out, stderr = runCLI("generate", "-m", dir, "-p", "Hi", "--max-tokens", "4", "--backend", "cpu", "--no-think")
	if code != 0 || !strings.Contains(stderr, "\n[length] ") || strings.Contains(out, "[length]") {
		t.Errorf("generate: exit %d, %q, %s", code, out, stderr)
	}
	code, out, stderr = runCLI("generate", "-m", dir, "-p", "Hi", "--max-tokens", "6", "--backend", "cpu", "--no-think",
		"--speculative", "ngram", "--draft", "3")
	if code != 0 || !strings.Contains(stderr, "proposed") || !strings.Contains(stderr, "accepted") {
		t.Errorf("generate --speculative ngram: exit %d, %q, %s", code, out, stderr)
	}
	code, out, stderr = runCLI("generate", "-m", dir, "-p", "Hi", "--max-tokens", "6", "--backend", "cpu", "--no-think",
		"--speculative", "tree", "--tree-width", "2")
	if code != 0 || !strings.Contains(stderr, "proposed") {
		t.Errorf("generate --speculative tree: exit %d, %q, %s", code, out, stderr)
	}
	// A token limit past the context says where the reply will end.
	code, _, stderr = runCLI("generate", "-m", dir, "-p", "Hi", "--max-tokens", "99999999", "--backend", "cpu", "--no-think", "--context", "64")
	if code != 0 || !strings.Contains(stderr, "--max-tokens 99999999 is more than the context holds (64 tokens") || !strings.Contains(stderr, "[context]") {
		t.Errorf("generate --max-tokens past the context: exit %d, %s", code, stderr)
	}
	// MTP drafts: refused with the reason on a checkpoint without a head; the
	// demo model's head drafts.
	code, _, stderr = runCLI("generate", "-m", dir, "-p", "Hi", "--max-tokens", "4", "--backend", "cpu", "--speculative", "mtp")
	if code == 0 || !strings.Contains(stderr, "--speculative mtp: this checkpoint has no MTP head") {
		t.Errorf("generate --speculative mtp without a head: exit %d, %s", code, stderr)
	}
	demo := filepath.Join(testmodel.Root(t), "assets", "demo-model")
	code, out, stderr = runCLI("generate", "-m", demo, "--max-tokens", "20", "--backend", "cpu", "--no-think",
		"--speculative", "mtp", "What is a bug?")
	if code != 0 || !strings.Contains(out, "The unit of") || !strings.Contains(stderr, "accepted") {
		t.Errorf("generate --speculative mtp on the demo model: exit %d, %q, %s", code, out, stderr)
	}
	// The message after the flags is the one answered (it used to be ignored
	// for the default -p).
	promptTokens := func(args ...string) string {
		_, _, stderr := runCLI(append([]string{"generate", "-m", dir, "--max-tokens", "1", "--backend", "cpu", "--no-think"}, args...)...)
		return stderr[strings.LastIndex(stderr, "] ")+2:][:strings.Index(stderr[strings.LastIndex(stderr, "] ")+2:], " prompt tokens")]
	}
	if pos, flag := promptTokens("What is a bagel, and why is it boiled before it is baked?"),
		promptTokens("-p", "What is a bagel, and why is it boiled before it is baked?"); pos != flag || pos == promptTokens() {
		t.Errorf("prompt tokens: %s with the message after the flags, %s with -p, %s with the default", pos, flag, promptTokens())
	}
	switches.Reset()
}

// TestScoreCheckFinite: --check-finite reads every layer back and says the
// tiny model is finite (the broken case is engine.TestFindNonFinite's).
func TestScoreCheckFinite(t *testing.T) {
	dir := testmodel.Dir(t, "tiny-moe")
	code, out, stderr := runCLI("score", "-m", dir, "--ids", "9707,11,1246,525", "--backend", "cpu", "--check-finite")
	if code != 0 || !strings.Contains(out, "finite for these 4 ids") {
		t.Fatalf("exit %d, %q, %s", code, out, stderr)
	}
}

func TestPromptProgress(t *testing.T) {
	if p := newPromptProgress(&bytes.Buffer{}); p.w != nil {
		t.Fatal("progress on a buffer (not a terminal): want none")
	}
	var b bytes.Buffer
	p := &promptProgress{w: &b}
	p.show(engine.Stats{PromptTokens: 1000, PrefilledTokens: 400})
	p.show(engine.Stats{PromptTokens: 1000, PrefilledTokens: 1000}) // read: nothing more
	p.clear()
	p.clear() // once
	if got, want := b.String(), "\rreading the prompt… 40%\r\033[K"; got != want {
		t.Fatalf("terminal got %q, want %q", got, want)
	}
}

// TestIsCommand: main opens the window on a folder given alone only when its
// name is no command's.
func TestIsCommand(t *testing.T) {
	for _, name := range []string{"generate", "serve", "help", "-h", "models"} {
		if !IsCommand(name) {
			t.Errorf("%q is a command", name)
		}
	}
	for _, name := range []string{"/tmp/model", "mlx-community/Qwen3.5-35B-A3B-4bit", "./bench-results"} {
		if IsCommand(name) {
			t.Errorf("%q is no command", name)
		}
	}
}
