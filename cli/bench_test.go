package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bagel/engine"
	"bagel/internal/testmodel"
	"bagel/switches"
)

// TestSynthThenBench writes a synthetic checkpoint with the tiny test model's
// shapes and benches it on the CPU: every figure is there, with the counts the
// CPU backend reports for the GPU ones.
func TestSynthThenBench(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "synth")
	config := filepath.Join(testmodel.Weights(t, "tiny-moe"), "config.json")
	code, stdout, stderr := runCLI("synth", "--config", config, "--experts", "4", "--out", dir)
	if code != 0 || !strings.Contains(stdout, "4 experts") {
		t.Fatalf("synth: exit %d\n%s\n%s", code, stdout, stderr)
	}
	r, stdout := benchJSON(t, "-m", dir, "--backend", "cpu", "--runs", "1", "--tokens", "4",
		"--prefill", "8", "--long", "40", "--drafts", "1,3")
	names := map[string]bool{}
	for _, x := range r.Results {
		names[x.Name+" "+x.Switch] = true
		if strings.HasPrefix(x.Name, "decode") && (x.DecodeTokPerSec <= 0 || x.DispatchesPerToken <= 0 || x.WeightGBPerSec <= 0) {
			t.Errorf("%s %s: %+v", x.Name, x.Switch, x)
		}
		if strings.HasPrefix(x.Name, "prefill") && x.PrefillTokPerSec <= 0 {
			t.Errorf("%s: %+v", x.Name, x)
		}
		if strings.HasPrefix(x.Name, lookupRow) {
			t.Errorf("a %q row for a checkpoint without a tokenizer: %+v", lookupRow, x)
		}
	}
	// The rows with the decode pipeline switched off come only where the
	// engine pipelines (not the CPU, whose work runs as it is dispatched:
	// engine.CanPipeline, the switch's backends).
	for _, row := range []string{"decode greedy decode-pipeline=off", "decode sampled (t 0.7, top-p 0.95, top-k 20) device-sampling=off decode-pipeline=off"} {
		if names[row] {
			t.Errorf("a %q row on the CPU, which decodes without the pipeline", row)
		}
	}
	for _, want := range []string{"decode greedy ",
		"decode sampled (t 0.7, top-p 0.95, top-k 20) ", "prefill 8 ", "decode after 40 tokens ", "decode greedy fused-add-norm=off",
		"prefill 8 prefill-gemm=off", "prefill 8 prefill-split-attention=off"} { // a prompt switch also times a prompt
		if !names[want] {
			t.Errorf("no %q figure in %v", want, names)
		}
	}
	// The oracle rows, one per --drafts length: every draft of a replayed
	// greedy reply is accepted.
	oracles := map[int]bool{}
	tiledOracle := false
	for _, x := range r.Results {
		var n, a, p int
		if _, err := fmt.Sscanf(x.Name, "decode greedy, oracle drafts of %d (%d/%d accepted)", &n, &a, &p); err == nil {
			if x.Switch == "tiled-gemv=on speculative-ngram=on" {
				// A switch that acts on verifies gets an oracle row of the
				// default draft length with it flipped, and its verify line.
				tiledOracle = n == 4 && a == p && p > 0 && strings.Contains(stdout, x.Name+" with tiled-gemv=on: ")
				continue
			}
			oracles[n] = true
			if x.Mismatch != "" {
				t.Errorf("oracle row %q: %s", x.Name, x.Mismatch)
			}
			if a != p || p == 0 || x.Switch != "speculative-ngram=on" {
				t.Errorf("oracle row %q %s: want every draft accepted", x.Name, x.Switch)
			}
			if x.Verifies == 0 || x.VerifyMs <= 0 || !strings.Contains(stdout, x.Name+": ") {
				t.Errorf("oracle row %q: %d verifies of %g ms, and its line under the table: %v", x.Name, x.Verifies, x.VerifyMs, strings.Contains(stdout, x.Name+": "))
			}
		}
	}
	if !oracles[1] || !oracles[3] || len(oracles) != 2 {
		t.Errorf("oracle rows for draft lengths %v, want 1 and 3 (figures %v)", oracles, names)
	}
	if !tiledOracle {
		t.Errorf("no oracle row of 4 drafts, all accepted, with tiled-gemv=on and its verify line (figures %v)\n%s", names, stdout)
	}
	if r.DecodeWeightBytes <= 0 || r.DecodeWeightBytes >= r.WeightBytes {
		t.Errorf("decode reads %d of %d weight bytes", r.DecodeWeightBytes, r.WeightBytes)
	}
	if !strings.Contains(stdout, "tok/s decode") {
		t.Errorf("no table:\n%s", stdout)
	}
	// The GEMV on each matrix shape (--projections, on by default): the head
	// and an expert stack among them, each with a rate.
	head, stack := false, false
	for _, p := range r.Projections {
		head = head || strings.Contains(p.Name, "lm_head") || strings.Contains(p.Name, "embed_tokens")
		stack = stack || p.Experts == 4
		if p.GBPerSec <= 0 || p.Bytes <= 0 || p.PerToken < 1 {
			t.Errorf("projection %+v", p)
		}
	}
	if !head || !stack || !strings.Contains(stdout, "the decode GEMV on each matrix shape alone") {
		t.Errorf("projections: head %v, expert stack %v, %d shapes\n%s", head, stack, len(r.Projections), stdout)
	}

	for args, want := range map[string]string{
		"synth --out " + dir:                                    "exactly one of --like NAME or --config FILE",
		"synth --like qwen9 --out " + dir:                       `no built-in shape "qwen9"`,
		"synth --like qwen3.5-35b-a3b --experts 4 --out " + dir: "fewer than the 8 experts",
		"bench -m " + dir + " --prefill 12,x":                   `--prefill: "x" is not a token count`,
		"bench -m " + dir + " --streams 0":                      `--streams: "0" is not a number of replies`,
		"bench -m " + dir + " --drafts 2,-1":                    `--drafts: "-1" is not a draft length`,
	} {
		code, _, stderr := runCLI(strings.Fields(args)...)
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, %q", args, code, stderr)
		}
	}
}

// TestSwitchFlags: --no-fused runs the unfused reference, which scores the
// same bits as the fused paths; --switch sets one switch and names a bad one.
func TestSwitchFlags(t *testing.T) {
	t.Cleanup(func() { switches.Reset() })
	dir := testmodel.Weights(t, "tiny-moe")
	score := func(extra ...string) string {
		t.Helper()
		switches.Reset()
		code, out, stderr := runCLI(append([]string{"score", "-m", dir, "--ids", "9707,11,1246,525,3555", "--prefill", "2", "--backend", "cpu"}, extra...)...)
		if code != 0 {
			t.Fatalf("score %v: exit %d, %s", extra, code, stderr)
		}
		return out
	}
	fused, unfused := score(), score("--no-fused")
	if fused != unfused {
		t.Errorf("--no-fused scores differently:\n%s\n%s", fused, unfused)
	}
	if switches.On("fused-add-norm") || switches.On("fused-projections") {
		t.Error("--no-fused left a fused path on")
	}
	score("--no-fused", "--switch", "fused-add-norm=on")
	if !switches.On("fused-add-norm") || switches.On("fused-projections") {
		t.Error("--switch after --no-fused did not turn one path back on")
	}
	for arg, want := range map[string]string{
		"no-such-switch=on":   `unknown engine switch "no-such-switch"`,
		"fused-add-norm=soon": `"fused-add-norm=soon": want NAME=on or NAME=off`,
	} {
		code, _, stderr := runCLI("score", "-m", dir, "--ids", "1,2", "--switch", arg)
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("--switch %s: exit %d, %q", arg, code, stderr)
		}
	}
}

// TestReplayReusesTurns plays three user turns: every turn after the first
// reuses the previous turn's prompt but its generation prompt (a few tokens:
// "<|im_start|>assistant\n" and the empty think block), which the template
// renders differently once the reply is in.
func TestReplayReusesTurns(t *testing.T) {
	dir := testmodel.Dir(t, "tiny-moe")
	script := filepath.Join(t.TempDir(), "chat.json")
	os.WriteFile(script, []byte(`[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},
		{"role":"assistant","content":"ignored"},{"role":"user","content":"Tell me more."},{"role":"user","content":"And then?"}]`), 0o644)
	code, out, stderr := runCLI("replay", "-m", dir, "--messages", script, "--max-tokens", "4", "--backend", "cpu", "--no-think")
	if code != 0 {
		t.Fatalf("replay: exit %d, %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines for 3 user turns:\n%s", len(lines), out)
	}
	prevPrompt := 0
	for i, l := range lines {
		var r struct {
			Turn, PromptTokens, ReusedTokens, PrefillTokens int
		}
		var raw map[string]float64
		if err := json.Unmarshal([]byte(l), &raw); err != nil {
			t.Fatal(err)
		}
		r.Turn, r.PromptTokens, r.ReusedTokens, r.PrefillTokens = int(raw["turn"]), int(raw["prompt_tokens"]), int(raw["reused_tokens"]), int(raw["prefill_tokens"])
		if r.Turn != i+1 || r.PromptTokens != r.ReusedTokens+r.PrefillTokens {
			t.Errorf("line %d: %s", i, l)
		}
		if i > 0 && (r.ReusedTokens < prevPrompt-8 || r.ReusedTokens >= prevPrompt) {
			t.Errorf("turn %d reused %d of %d prompt tokens; the turn before had %d: %s", r.Turn, r.ReusedTokens, r.PromptTokens, prevPrompt, l)
		}
		prevPrompt = r.PromptTokens
	}
}

// TestBenchTableHostColumn: a decode row with device time shows the wall
// time a token takes beyond it; a row without (the CPU) shows a dash.
func TestBenchTableHostColumn(t *testing.T) {
	r := &benchReport{Model: "m", Device: "d", Backend: "cuda", Results: []benchResult{
		{Name: "decode greedy", DecodeTokPerSec: 250, GPUmsPerToken: 3.5, HostMsPerToken: 0.5},
		{Name: "decode sampled", DecodeTokPerSec: 20},
	}}
	var b strings.Builder
	writeBenchTable(&b, r)
	lines := strings.Split(b.String(), "\n")
	var greedy, sampled string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "decode greedy"):
			greedy = l
		case strings.HasPrefix(l, "decode sampled"):
			sampled = l
		}
	}
	if !strings.Contains(b.String(), "host ms/tok") || !strings.HasSuffix(strings.TrimSpace(greedy), "0.50") ||
		!strings.HasSuffix(strings.TrimSpace(sampled), "-") {
		t.Errorf("table:\n%s", b.String())
	}
}

// TestVerifyLineShowsIdle: the line under the table for an oracle row gives
// a verify's cost in decode steps and, where the device measured it, the
// GPU's idle time a verify: the row's idle per token times its tokens per
// verify (21 tokens, 20 decode steps over 4 verifies: 5 a verify).
func TestVerifyLineShowsIdle(t *testing.T) {
	r := &benchReport{Model: "m", Device: "d", Backend: "cuda", Results: []benchResult{
		{Name: "decode greedy", DecodeTokPerSec: 400},
		{Name: "decode greedy, oracle drafts of 4", Switch: engine.SwitchSpeculative + "=on", DecodeTokPerSec: 1500,
			Tokens: 21, Verifies: 4, VerifyMs: 3.25, IdleMsPerToken: 0.06, IdleInsideMsPerToken: 0.01},
		{Name: "decode greedy, oracle drafts of 2", Switch: engine.SwitchSpeculative + "=on", DecodeTokPerSec: 900,
			Tokens: 21, Verifies: 7, VerifyMs: 3, Mismatch: "run 1's drafted reply differs from its plain reply from token 17 of 21"},
	}}
	var b strings.Builder
	writeBenchTable(&b, r)
	out := b.String()
	for _, want := range []string{
		"decode greedy, oracle drafts of 4: 4 verifies, 3.25 ms a verify = 1.30 decode steps of 2.50 ms; GPU idle 0.300 ms a verify, 0.050 of it between graph segments\n",
		"decode greedy, oracle drafts of 2: 7 verifies, 3.00 ms a verify = 1.20 decode steps of 2.50 ms\n" +
			"  wrong: run 1's drafted reply differs from its plain reply from token 17 of 21 (",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
	if strings.Count(out, "wrong:") != 1 {
		t.Errorf("a wrong line for a row whose drafted reply matched:\n%s", out)
	}
}

// TestBenchLookupRows: with a tokenizer, bench decodes a reply to its
// code-editing prompt with prompt lookup off and on; without one (the
// synthetic checkpoint of TestSynthThenBench) the rows are left out.
func TestBenchLookupRows(t *testing.T) {
	r, stdout := benchJSON(t, "-m", testmodel.Dir(t, "tiny-moe"), "--backend", "cpu", "--runs", "1", "--tokens", "12",
		"--prefill", "", "--long", "", "--drafts", "", "--switches=false", "--projections", "0")
	got := map[string]benchResult{}
	for _, x := range r.Results {
		if strings.HasPrefix(x.Name, lookupRow) {
			got[x.Switch] = x
		}
	}
	for _, sw := range []string{"speculative-ngram=off", "speculative-ngram=on"} {
		x, ok := got[sw]
		if !ok || x.DecodeTokPerSec <= 0 || x.PromptTokens < 30 {
			t.Errorf("%s row with %s: %+v (present %v)", lookupRow, sw, x, ok)
		}
	}
	if !strings.Contains(stdout, lookupRow) {
		t.Errorf("the table has no %q row:\n%s", lookupRow, stdout)
	}
}

// TestBenchDrafterRows: --drafters times the questions' replies plainly and
// with each drafter; on the demo model, whose checkpoint has an MTP head, the
// head's rows are there with guesses kept; on the tiny model, without one,
// they are not.
func TestBenchDrafterRows(t *testing.T) {
	rows := func(dir string) map[string]benchResult {
		r, _ := benchJSON(t, "-m", dir, "--backend", "cpu", "--runs", "1", "--tokens", "24", "--prefill", "", "--long", "",
			"--drafts", "", "--switches=false", "--lookup=false", "--projections", "0", "--drafters")
		got := map[string]benchResult{}
		for _, x := range r.Results {
			if name, ok := strings.CutPrefix(x.Name, "decode greedy, questions, "); ok {
				got[strings.SplitN(name, " (", 2)[0]] = x
			}
		}
		return got
	}
	demo := rows(filepath.Join(testmodel.Root(t), "assets", "demo-model"))
	for _, name := range []string{"plain", "prompt lookup", "prompt lookup, trees of 2", "MTP head, 1 guess", "MTP head, 2 guesses"} {
		if x, ok := demo[name]; !ok || x.DecodeTokPerSec <= 0 || x.Tokens == 0 {
			t.Errorf("demo model, row %q: %+v (present %v)", name, x, ok)
		}
	}
	if x := demo["MTP head, 1 guess"]; x.Verifies == 0 {
		t.Errorf("the MTP row verified no guesses: %+v", x)
	}
	if tiny := rows(testmodel.Dir(t, "tiny-moe")); len(tiny) != 3 {
		t.Errorf("tiny model without a head: rows %v, want the three without MTP", tiny)
	}
}

// benchJSON runs bagel bench with args and --json, and returns the report it
// wrote and what it printed; a failed run fails the test.
func benchJSON(t *testing.T, args ...string) (benchReport, string) {
	t.Helper()
	jsonFile := filepath.Join(t.TempDir(), "bench.json")
	code, stdout, stderr := runCLI(append(append([]string{"bench"}, args...), "--json", jsonFile)...)
	if code != 0 {
		t.Fatalf("bench: exit %d\n%s\n%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	var r benchReport
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r, stdout
}

// TestBenchServerRows: --server streams the same greedy replies through the
// local server as straight from the engine, and reports both (a model with
// a tokenizer; the CPU's figures mean nothing, only that both are there).
func TestBenchServerRows(t *testing.T) {
	r, stdout := benchJSON(t, "-m", testmodel.Dir(t, "tiny-moe"), "--backend", "cpu", "--runs", "2", "--tokens", "16",
		"--prefill", "", "--long", "", "--drafts", "", "--switches=false", "--lookup=false", "--projections", "0", "--server")
	s := r.Server
	if s == nil || s.Error != "" || s.EngineTTFTms <= 0 || s.ServerTTFTms <= 0 || s.EngineTokPerSec <= 0 || s.ServerTokPerSec <= 0 || s.Runs != 2 {
		t.Fatalf("server rows: %+v", s)
	}
	if !strings.Contains(stdout, "local server (/v1/completions streamed on loopback") || !strings.Contains(stdout, "% of the engine's") {
		t.Errorf("the table has no server rows:\n%s", stdout)
	}
}

// TestSynthWithATokenizer: a synthetic checkpoint given a tokenizer takes
// its end-of-sequence token as the stop token (synth's own, the
// vocabulary's last id, is not in a tokenizer of fewer ids) and its
// vocabulary size (--vocab), so it loads and generates text.
func TestSynthWithATokenizer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "synth")
	config := filepath.Join(testmodel.Weights(t, "tiny-moe"), "config.json")
	tok := testmodel.Dir(t, "tiny-moe")
	code, stdout, stderr := runCLI("synth", "--config", config, "--vocab", "151936", "--tokenizer", tok, "--out", dir)
	if code != 0 {
		t.Fatalf("synth: exit %d\n%s\n%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		EOS  int `json:"eos_token_id"`
		Text struct {
			Vocab int `json:"vocab_size"`
		} `json:"text_config"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil || cfg.EOS != 151645 || cfg.Text.Vocab != 151936 {
		t.Fatalf("config: eos %d vocab %d (%v), want <|im_end|> 151645 and 151936", cfg.EOS, cfg.Text.Vocab, err)
	}
	code, stdout, stderr = runCLI("generate", "-m", dir, "--backend", "cpu", "--max-tokens", "4", "--no-think", "Hi")
	if code != 0 {
		t.Errorf("generate on it: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestBenchStreamsRows: --streams decodes replies together and reports, for
// each count, the summed rate and each reply's, their first tokens' wait,
// and the gaps a long prompt's prefill leaves between the others' tokens
// (the CPU's figures mean nothing, only that they are measured).
func TestBenchStreamsRows(t *testing.T) {
	r, stdout := benchJSON(t, "-m", testmodel.Weights(t, "tiny-moe"), "--backend", "cpu", "--runs", "1", "--tokens", "12",
		"--prefill", "", "--long", "", "--drafts", "", "--switches=false", "--lookup=false", "--projections", "0",
		"--streams", "1,3", "--stall-prompt", "300", "--prefill-chunk", "64", "--stream-drafts", "3",
		"--stream-sampled", "--stream-prompt", "40")
	s := r.Streams
	if s == nil || s.Error != "" || s.SoloTokPerS <= 0 || len(s.Rows) != 2 || s.PromptTokens != 40 {
		t.Fatalf("streams rows: %+v", s)
	}
	for i, want := range []int{1, 3} {
		row := s.Rows[i]
		if row.Streams != want || row.AggregateTPS <= 0 || row.PerStreamTPS <= 0 || row.SlowestTPS > row.PerStreamTPS || row.TTFTms <= 0 ||
			row.DispatchesPerStep <= 0 || row.SteadyTPS <= 0 {
			t.Errorf("row %d: %+v", i, row)
		}
		// The oracle's guesses are all kept: a step adds more than a token.
		if row.DraftedTPS <= 0 || row.DraftedPerStreamTPS <= 0 || row.TokensPerStep <= 1 || row.TokensPerStep > 4 {
			t.Errorf("row %d's drafted figures: %+v", i, row)
		}
		if row.SampledTPS <= 0 || row.SampledPerStreamTPS <= 0 {
			t.Errorf("row %d's sampled figures: %+v", i, row)
		}
	}
	if st := s.Stall; st == nil || st.Streams != 2 || st.PromptTokens != 300 || st.Chunk != 64 || st.MaxGapMs < st.MedianGapMs || st.MedianGapMs <= 0 {
		t.Errorf("stall row: %+v", s.Stall)
	}
	if !strings.Contains(stdout, "replies decoded together") || !strings.Contains(stdout, "joining 2 replies") || !strings.Contains(stdout, "dispatches/step") ||
		!strings.Contains(stdout, "tokens/step") || !strings.Contains(stdout, "× greedy") {
		t.Errorf("the table has no streams rows:\n%s", stdout)
	}
	_, _, stderr := runCLI("bench", "-m", testmodel.Weights(t, "tiny-moe"), "--backend", "cpu", "--streams", "17")
	if !strings.Contains(stderr, "--streams 17: want 1 to 16") {
		t.Errorf("--streams 17: %s", stderr)
	}
	_, _, stderr = runCLI("bench", "-m", testmodel.Weights(t, "tiny-moe"), "--backend", "cpu", "--streams", "2", "--stream-drafts", "16")
	if !strings.Contains(stderr, "--stream-drafts 16: want 0 (none) to 15") {
		t.Errorf("--stream-drafts 16: %s", stderr)
	}
}

// TestBenchStreamTrees: --stream-tree-width has the drafted rows' oracle
// guess trees (the right branch first), verified in the batch's steps: a
// step adds more than a token; a width without --stream-drafts is refused.
func TestBenchStreamTrees(t *testing.T) {
	r, stdout := benchJSON(t, "-m", testmodel.Weights(t, "tiny-moe"), "--backend", "cpu", "--runs", "1", "--tokens", "12",
		"--prefill", "", "--long", "", "--drafts", "", "--switches=false", "--lookup=false", "--projections", "0",
		"--streams", "2", "--stall-prompt", "0", "--stream-drafts", "3", "--stream-tree-width", "2")
	s := r.Streams
	if s == nil || s.Error != "" || s.TreeWidth != 2 || len(s.Rows) != 1 {
		t.Fatalf("streams rows: %+v", s)
	}
	if row := s.Rows[0]; row.DraftedTPS <= 0 || row.TokensPerStep <= 1 || row.TokensPerStep > 4 {
		t.Errorf("the drafted figures with trees: %+v", row)
	}
	if !strings.Contains(stdout, "in trees of 2 branches") {
		t.Errorf("the table does not say the guesses are trees:\n%s", stdout)
	}
	_, _, stderr := runCLI("bench", "-m", testmodel.Weights(t, "tiny-moe"), "--backend", "cpu", "--streams", "2", "--stream-tree-width", "2")
	if !strings.Contains(stderr, "--stream-tree-width 2: want 0 (lines) or 2 to 3, with --stream-drafts") {
		t.Errorf("--stream-tree-width without drafts: %s", stderr)
	}
}

// TestSteadyRate: the replies' tokens while all of them decode, over that
// span: the first reply's early tokens and the last one's late ones are
// not counted.
func TestSteadyRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms ...int) []time.Time {
		var out []time.Time
		for _, m := range ms {
			out = append(out, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return out
	}
	runs := []streamRun{
		{arrivals: at(0, 10, 20, 30, 40, 50, 60)}, // decodes alone until 20
		{arrivals: at(20, 30, 40, 50, 60, 70, 80)},
	}
	// From 20 to 60 ms: tokens at 30, 40, 50, 60 of each.
	if got, want := steadyRate(runs), 8/0.040; math.Abs(got-want) > 1e-9 {
		t.Errorf("steady rate %.3f, want %.3f", got, want)
	}
	if got := steadyRate(append(runs, streamRun{arrivals: at(5)})); got != 0 {
		t.Errorf("a reply of one token: steady rate %.3f, want 0", got)
	}
}

// TestStreamsTableWithoutASpanAllDecoding: a count of replies that never all
// decoded at once (replies of a few tokens) shows "-" for the all-decoding
// rate and says why, rather than a rate of 0.
func TestStreamsTableWithoutASpanAllDecoding(t *testing.T) {
	var b strings.Builder
	writeStreamsBench(&b, &streamsBench{PromptTokens: 8, Tokens: 2, Runs: 1, SoloTokPerS: 2,
		Rows: []streamsRow{{Streams: 1, AggregateTPS: 2, SteadyTPS: 2}, {Streams: 2, AggregateTPS: 0.5}}})
	out := b.String()
	lines := strings.Split(out, "\n")
	rows := map[string][]string{}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) == 10 {
			rows[f[0]] = f
		}
	}
	if one := rows["1"]; len(one) != 10 || one[8] != "2.0" || one[9] != "1.00" {
		t.Errorf("one reply all decoding: %q", one)
	}
	if two := rows["2"]; len(two) != 10 || two[8] != "-" || two[9] != "-" {
		t.Errorf("two replies with no span all decoding: %q", two)
	}
	if !strings.Contains(out, "never all decoded at once") {
		t.Errorf("no word on the missing span:\n%s", out)
	}
}

// TestStreamsTableWithAFailedDraftedRow: a drafted reply that differs from
// its plain one fails its row of the drafted table, naming the reply and
// token, and leaves the plain table and the other drafted rows.
func TestStreamsTableWithAFailedDraftedRow(t *testing.T) {
	var b strings.Builder
	writeStreamsBench(&b, &streamsBench{PromptTokens: 8, Tokens: 16, Runs: 1, SoloTokPerS: 2, Drafts: 4, Rows: []streamsRow{
		{Streams: 1, AggregateTPS: 2, SteadyTPS: 2, DraftedError: "a drafted reply differs from its plain reply (reply 0 of 1, from token 9)"},
		{Streams: 2, AggregateTPS: 3.5, SteadyTPS: 3.8, DraftedTPS: 7, DraftedPerStreamTPS: 3.5, TokensPerStep: 2.5}}})
	out := b.String()
	for _, want := range []string{
		"        1            2.0", // the plain row of one reply
		"        1  failed: a drafted reply differs from its plain reply (reply 0 of 1, from token 9)",
		"        2            7.0      2.00", // the drafted row of two
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

func TestFirstDifference(t *testing.T) {
	for _, c := range []struct {
		a, b []int32
		want int
	}{{[]int32{1, 2, 3}, []int32{1, 2, 4}, 2}, {[]int32{1, 2}, []int32{1, 2, 3}, 2}, {nil, []int32{1}, 0}, {[]int32{5}, []int32{6}, 0}} {
		if got := firstDifference(c.a, c.b); got != c.want {
			t.Errorf("firstDifference(%v, %v) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
