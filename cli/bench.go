package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"bagel/drafter"
	"bagel/engine"
)

// runBench measures a model the way the app runs it (engine.Generate on token
// ids, so no tokenizer is needed): decode greedy and sampled, prefill at several
// prompt lengths, decode after a long context, and decode with each engine
// switch off against on. Each figure is the median of --runs runs after a
// warm-up (a short reply, and before each prefill length one prompt of that
// length); the device counts come from the backend's counters.
func runBench(args []string, out, errOut io.Writer) error {
	fs := newFlags("bench", errOut)
	dir := fs.modelDir("model folder (MLX layout; bagel synth makes one)")
	backendName := fs.backend()
	fs.engineSwitches()
	jsonFile := fs.String("json", "", "also write the results to this JSON file")
	runs := fs.Int("runs", 3, "runs per figure (the median is reported)")
	tokens := fs.Int("tokens", 128, "tokens decoded per decode run")
	prefill := fs.String("prefill", "128,512,2048", "prompt lengths to time prefill at (empty: none)")
	long := fs.String("long", "8192", "context lengths to decode after (empty: none)")
	switches := fs.Bool("switches", true, "decode greedy with each engine switch off against on")
	seed := fs.Uint64("seed", 1, "seed of the random prompts and of sampling")
	drafts := fs.String("drafts", fmt.Sprint(engine.DefaultDraftLength), fmt.Sprintf("draft lengths of the oracle-drafts rows, 1 to %d (empty: none)", engine.MaxDraftLength))
	lookup := fs.Bool("lookup", true, "decode a reply to a code-editing prompt with prompt lookup off and on (models with a tokenizer)")
	treeWidths := fs.String("tree-widths", "", fmt.Sprintf("also oracle draft trees of these widths, 2 to %d, at each --drafts length (empty: none)", engine.MaxTreeWidth))
	chunk := fs.prefillChunk()
	projections := fs.Int("projections", 10, "time the decode GEMV alone on each matrix shape, this many products each (0: not)")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the whole run to this file (host overhead)")
	serverRows := fs.Bool("server", false, "also time a reply streamed through the local server against the engine alone (needs a tokenizer)")
	streamCounts := fs.String("streams", "", fmt.Sprintf("also decode greedy replies this many at once, 1 to %d each (e.g. 1,2,4,8; empty: none): the summed and each reply's rate (with --replies N the model loads as bagel serve --parallel N loads it: on CUDA the tiled GEMVs, short prompts together)", engine.MaxBatch))
	streamSampled := fs.Bool("stream-sampled", false, "with --streams, also decode each count's replies sampled (temperature 0.7, top-p 0.95, top-k 20, a seed each: drawn on the device, as a chat's reply with Qwen's recommended sampling is)")
	streamTreeWidth := fs.Int("stream-tree-width", 0, fmt.Sprintf("with --stream-drafts, the oracle's guesses as draft trees of this many branches, 2 to %d: the right one first, the others wrong (what verifying a tree costs in a batch; 0: lines)", engine.MaxTreeWidth))
	streamDrafts := fs.Int("stream-drafts", 0, fmt.Sprintf("with --streams, also decode each count's replies again with speculative decoding, the oracle guessing up to this many tokens a reply and step, 1 to %d, every guess right (0: not)", engine.MaxDraftLength))
	streamPrompt := fs.Int("stream-prompt", 32, "with --streams, each reply's prompt, in tokens (their prefills run together where they fit a chunk: the TTFT column)")
	replies := fs.Int("replies", 0, "load the model for this many replies at once, as bagel serve --parallel does (on CUDA the tiled GEMVs unless the tiled-gemv switch is chosen; the prompt path from 17 tokens with short-prompts-together; 0 or 1: one)")
	stallPrompt := fs.Int("stall-prompt", 8192, "with --streams, the prompt that joins the most replies but one, to time the stall its prefill causes (0: none)")
	imagePaths := fs.images("to time through the model's vision tower")
	draftersRows := fs.Bool("drafters", false, "also decode greedy replies to five questions plainly, with prompt lookup (lines, trees of 2) and with the model's MTP head: each drafter's acceptance and speed on text (needs a tokenizer)")
	if err := fs.parse(args); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	prefillLens, err := parseLengths("--prefill", "a token count", *prefill)
	if err != nil {
		return err
	}
	longLens, err := parseLengths("--long", "a token count", *long)
	if err != nil {
		return err
	}
	widths, err := parseLengths("--tree-widths", "a tree width", *treeWidths)
	if err != nil {
		return err
	}
	for _, w := range widths {
		if w < 2 || w > engine.MaxTreeWidth {
			return fmt.Errorf("--tree-widths %d: want 2 to %d", w, engine.MaxTreeWidth)
		}
	}
	draftLens, err := parseLengths("--drafts", "a draft length", *drafts)
	if err != nil {
		return err
	}
	for _, n := range draftLens {
		if n > engine.MaxDraftLength {
			return fmt.Errorf("--drafts %d: want 1 to %d", n, engine.MaxDraftLength)
		}
	}
	counts, err := parseLengths("--streams", "a number of replies", *streamCounts)
	if err != nil {
		return err
	}
	for _, n := range counts {
		if n > engine.MaxBatch {
			return fmt.Errorf("--streams %d: want 1 to %d", n, engine.MaxBatch)
		}
	}
	if *streamDrafts < 0 || *streamDrafts > engine.MaxDraftLength {
		return fmt.Errorf("--stream-drafts %d: want 0 (none) to %d", *streamDrafts, engine.MaxDraftLength)
	}
	if *streamTreeWidth != 0 && (*streamTreeWidth < 2 || *streamTreeWidth > engine.MaxTreeWidth || *streamDrafts == 0) {
		return fmt.Errorf("--stream-tree-width %d: want 0 (lines) or 2 to %d, with --stream-drafts", *streamTreeWidth, engine.MaxTreeWidth)
	}
	if *streamPrompt < 2 {
		return fmt.Errorf("--stream-prompt %d: want a prompt of 2 tokens or more", *streamPrompt)
	}
	if *stallPrompt < 0 {
		return fmt.Errorf("--stall-prompt %d: want 0 (none) or a prompt length", *stallPrompt)
	}
	if *replies < 0 || *replies > engine.MaxBatch {
		return fmt.Errorf("--replies %d: want 0 to %d", *replies, engine.MaxBatch)
	}
	if *runs < 1 || *tokens < 2 {
		return fmt.Errorf("--runs must be ≥ 1 and --tokens ≥ 2")
	}
	if *projections < 0 || *projections > 10000 {
		return fmt.Errorf("--projections %d: want 0 (none) to 10000 products a shape", *projections)
	}
	b := &bench{dir: *dir, backend: *backendName, runs: *runs, tokens: *tokens, chunk: *chunk, replies: *replies, errOut: errOut,
		rng: rand.New(rand.NewPCG(*seed, 0xbe1c))}
	b.contextLength = *tokens + 64
	for _, n := range append(slices.Clone(prefillLens), longLens...) {
		b.contextLength = max(b.contextLength, n+*tokens+16)
	}
	if len(counts) > 0 { // the streams' lone reply (their batches size their own caches)
		b.contextLength = max(b.contextLength, *streamPrompt+*tokens+16)
	}
	if err := b.load(); err != nil {
		return err
	}
	defer func() { b.e.Close() }()
	b.report = benchReport{Model: *dir, Backend: b.e.Backend, Device: b.e.BackendName, Date: time.Now().UTC().Format(time.RFC3339),
		Host:          fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version()),
		ContextLength: b.contextLength, PrefillChunk: b.e.PrefillChunk(), WeightBytes: b.e.Memory().Weights, CacheBytes: b.e.Memory().Cache,
		DecodeWeightBytes: b.e.DecodeWeightBytes()}
	for _, sw := range engine.Switches() {
		b.report.Switches = append(b.report.Switches, fmt.Sprintf("%s=%s", sw.Name, onOff(engine.SwitchOn(sw.Name))))
	}

	b.progress("warm-up")
	if _, err := b.once(32, 16, engine.Sampling{}); err != nil {
		return err
	}
	greedy := engine.Sampling{}
	sampled := engine.Sampling{Temperature: 0.7, TopP: 0.95, TopK: 20, Seed: *seed}
	if err := b.decode("decode greedy", "", 32, greedy); err != nil {
		return err
	}
	if err := b.flipped("decode greedy", greedy, engine.SwitchDecodePipeline); err != nil {
		return err
	}
	if err := b.decode("decode sampled (t 0.7, top-p 0.95, top-k 20)", "", 32, sampled); err != nil {
		return err
	}
	if err := b.flipped("decode sampled (t 0.7, top-p 0.95, top-k 20)", sampled, engine.SwitchDeviceSampling, engine.SwitchDecodePipeline); err != nil {
		return err
	}
	for _, n := range draftLens {
		for _, w := range append([]int{0}, widths...) {
			if err := b.oracle(32, n, w); err != nil {
				return err
			}
		}
	}
	if *lookup {
		if _, err := b.lookup(); err != nil {
			return err
		}
	}
	if *draftersRows {
		if ok, err := b.drafters(); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("--drafters: %s has no tokenizer or chat template to ask questions with", b.dir)
		}
	}
	for _, n := range prefillLens {
		if err := b.prefill(n); err != nil {
			return err
		}
	}
	for _, n := range longLens {
		if err := b.decode(fmt.Sprintf("decode after %d tokens", n), "", n, greedy); err != nil {
			return err
		}
	}
	if *switches {
		longest := 0
		if len(prefillLens) > 0 {
			longest = slices.Max(prefillLens)
		}
		if err := b.eachSwitch(greedy, longest); err != nil {
			return err
		}
	}
	if *serverRows {
		if err := b.server(32); err != nil {
			return err
		}
	}
	if len(counts) > 0 {
		b.report.Streams = b.streams(counts, *streamPrompt, *stallPrompt, streamDraft{*streamDrafts, *streamTreeWidth}, *streamSampled)
	}
	if len(*imagePaths) > 0 {
		b.report.Images = b.images(*imagePaths)
	}
	if *projections > 0 {
		b.progress("the decode GEMV on each matrix shape")
		ps, err := b.e.TimeProjections(*projections)
		if err != nil {
			return err
		}
		b.report.Projections = ps
	}
	b.report.ScratchBytes = b.e.Memory().Scratch // after the longest prompt: what a step's activations took
	fmt.Fprintln(errOut)
	writeBenchTable(out, &b.report)
	writeServerBench(out, b.report.Server)
	writeStreamsBench(out, b.report.Streams)
	writeImagesBench(out, b.report.Images)
	if *jsonFile != "" {
		data, err := json.MarshalIndent(b.report, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(*jsonFile, append(data, '\n'), 0o644)
	}
	return nil
}

// bench holds a run's engine and settings.
type bench struct {
	dir, backend  string
	runs, tokens  int
	contextLength int
	chunk         int // prompt tokens per forward (0: the engine's default)
	replies       int // engine.Options.Replies (--replies)
	rng           *rand.Rand
	errOut        io.Writer
	e             *engine.Engine
	report        benchReport
}

func (b *bench) load() error {
	e, err := engine.Load(b.dir, engine.Options{Backend: b.backend, ContextLength: b.contextLength, PrefillChunk: b.chunk, Replies: b.replies})
	if err != nil {
		return err
	}
	b.e = e
	return nil
}

func (b *bench) progress(what string) {
	fmt.Fprintf(b.errOut, "\rbench: %-70s", what)
}

// once generates maxTokens tokens after a random prompt of promptLen ids.
func (b *bench) once(promptLen, maxTokens int, s engine.Sampling) (engine.Stats, error) {
	st, _, err := b.generate(b.randomPrompt(promptLen), maxTokens, s, nil, 0)
	return st, err
}

func (b *bench) randomPrompt(n int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(b.rng.IntN(b.e.Config.VocabSize))
	}
	return ids
}

// generate runs one request and returns its stats and the tokens it produced.
func (b *bench) generate(ids []int32, maxTokens int, s engine.Sampling, d drafter.Drafter, draftLen int) (engine.Stats, []int32, error) {
	req := engine.Request{PromptIDs: ids, MaxTokens: maxTokens, Sampling: s, IgnoreStop: true, Drafter: d, DraftLength: draftLen}
	var done engine.Event
	var tokens []int32
	for ev := range b.e.Generate(context.Background(), req) {
		switch ev.Kind {
		case engine.EventToken:
			if ev.Token >= 0 {
				tokens = append(tokens, ev.Token)
			}
		case engine.EventDone:
			done = ev
		case engine.EventError:
			return engine.Stats{}, nil, ev.Err
		}
	}
	return done.Stats, tokens, nil
}

// oracle records greedy speculative decoding whose drafts are always right:
// each run decodes a random prompt greedily, then again with the speculative
// switch on and an OracleDrafter replaying that reply, so every guess is
// accepted. It is the most speculative decoding can gain at draftLen guesses
// per step, whatever the drafter: the figure a better drafter works towards.
// Its GPU ms/token times draftLen+1 against the plain row's is what one verify
// costs against one decode step.
//
// With width ≥ 2 the drafts are trees (drafter.OracleTreeDrafter: the right
// branch and width−1 wrong ones), so the row is what a tree's verify costs.
func (b *bench) oracle(promptLen, draftLen, width int) error {
	return b.oracleWith(promptLen, draftLen, width, "")
}

// oracleWith records oracle drafts (a replayed greedy reply, every guess
// accepted) of draftLen, in trees of width when width > 1; switchSetting
// names the switches flipped for the row ("" none).
func (b *bench) oracleWith(promptLen, draftLen, width int, switchSetting string) error {
	if !slices.ContainsFunc(engine.Switches(), func(s engine.Switch) bool { return s.Name == engine.SwitchSpeculative }) {
		return nil
	}
	was := engine.SwitchOn(engine.SwitchSpeculative)
	defer engine.SetSwitch(engine.SwitchSpeculative, was)
	var all []engine.Stats
	mismatch := ""
	for r := range b.runs {
		b.progress(fmt.Sprintf("decode greedy, oracle drafts of %d, width %d (run %d/%d)", draftLen, width, r+1, b.runs))
		ids := b.randomPrompt(promptLen)
		if err := engine.SetSwitch(engine.SwitchSpeculative, false); err != nil {
			return err
		}
		_, reply, err := b.generate(ids, b.tokens, engine.Sampling{}, nil, 0)
		if err != nil {
			return fmt.Errorf("oracle drafts: %w", err)
		}
		if err := engine.SetSwitch(engine.SwitchSpeculative, true); err != nil {
			return err
		}
		var d drafter.Drafter = drafter.OracleDrafter{Continuation: reply, PromptLen: len(ids)}
		if width > 1 {
			d = drafter.OracleTreeDrafter{Oracle: d.(drafter.OracleDrafter), Width: width}
		}
		st, drafted, err := b.generate(ids, b.tokens, engine.Sampling{}, d, draftLen)
		if err != nil {
			return fmt.Errorf("oracle drafts: %w", err)
		}
		if !slices.Equal(drafted, reply) && mismatch == "" {
			mismatch = fmt.Sprintf("run %d's drafted reply differs from its plain reply from token %d of %d", r+1, firstDifference(drafted, reply), len(reply))
		}
		all = append(all, st)
	}
	slices.SortFunc(all, func(x, y engine.Stats) int { return int(1e6 * (x.DecodeTokensPerSec - y.DecodeTokensPerSec)) })
	st := all[len(all)/2]
	name := fmt.Sprintf("decode greedy, oracle drafts of %d", draftLen)
	if width > 1 {
		name = fmt.Sprintf("decode greedy, oracle trees of %d×%d", width, draftLen)
	}
	if st.DraftProposed > 0 {
		name += fmt.Sprintf(" (%d/%d accepted)", st.DraftAccepted, st.DraftProposed)
	}
	b.add(name, strings.TrimSpace(switchSetting+" "+engine.SwitchSpeculative+"=on"), st).Mismatch = mismatch
	return nil
}

// decode records the median decode rate of runs generations after promptLen tokens.
func (b *bench) decode(name, switchSetting string, promptLen int, s engine.Sampling) error {
	var all []engine.Stats
	for r := range b.runs {
		b.progress(fmt.Sprintf("%s %s (run %d/%d)", name, switchSetting, r+1, b.runs))
		st, err := b.once(promptLen, b.tokens, s)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		all = append(all, st)
	}
	slices.SortFunc(all, func(x, y engine.Stats) int { return int(1e6 * (x.DecodeTokensPerSec - y.DecodeTokensPerSec)) })
	b.add(name, switchSetting, all[len(all)/2])
	return nil
}

// flipped adds a decode row with the named switches set the other way from
// their setting (on by default: off), so that the row beside the plain one
// says what they are worth here: the decode pipeline for greedy replies
// (engine/pipeline.go), device sampling with it for sampled ones
// (engine/device_draw.go). Nothing on a backend that cannot pipeline.
func (b *bench) flipped(name string, s engine.Sampling, switchNames ...string) error {
	if !b.e.CanPipeline() {
		return nil
	}
	var settings []string
	for _, sw := range switchNames {
		was := engine.SwitchOn(sw)
		if err := engine.SetSwitch(sw, !was); err != nil {
			return err
		}
		defer engine.SetSwitch(sw, was)
		settings = append(settings, sw+"="+onOff(!was))
	}
	return b.decode(name, strings.Join(settings, " "), 32, s)
}

// prefill records the median prefill rate of a promptLen-token prompt.
func (b *bench) prefill(promptLen int) error { return b.prefillWith(promptLen, "") }

// prefillWith is prefill with a switch setting to name in its row.
func (b *bench) prefillWith(promptLen int, switchSetting string) error {
	// One prompt of this length first, not counted: the first prompt longer
	// than any before takes new scratch (device allocations) and compiles
	// new launch shapes, which the later ones of a chat do not.
	b.progress(fmt.Sprintf("prefill %d (warm-up)", promptLen))
	if _, err := b.once(promptLen, 1, engine.Sampling{}); err != nil {
		return fmt.Errorf("prefill %d: %w", promptLen, err)
	}
	var all []engine.Stats
	for r := range b.runs {
		b.progress(fmt.Sprintf("prefill %d (run %d/%d)", promptLen, r+1, b.runs))
		st, err := b.once(promptLen, 1, engine.Sampling{})
		if err != nil {
			return fmt.Errorf("prefill %d: %w", promptLen, err)
		}
		all = append(all, st)
	}
	slices.SortFunc(all, func(x, y engine.Stats) int { return int(1e6 * (x.PrefillTokensPerSec - y.PrefillTokensPerSec)) })
	b.add(fmt.Sprintf("prefill %d", promptLen), switchSetting, all[len(all)/2])
	return nil
}

// eachSwitch decodes greedily with each switch of this backend turned off,
// reloading the model so that switches read at load apply, then restores it.
// A prompt switch (prefill-*) also times a prompt of prefillLen tokens (the
// longest --prefill; 0: none), where it acts.
func (b *bench) eachSwitch(greedy engine.Sampling, prefillLen int) error {
	for _, sw := range engine.Switches() {
		if len(sw.Backends) > 0 && !slices.Contains(sw.Backends, b.e.Backend) {
			continue
		}
		was := engine.SwitchOn(sw.Name)
		if err := engine.SetSwitch(sw.Name, !was); err != nil {
			return err
		}
		setting := fmt.Sprintf("%s=%s", sw.Name, onOff(!was))
		b.progress("reloading with " + setting)
		b.e.Close()
		err := b.load()
		if err == nil {
			err = b.decode("decode greedy", setting, 32, greedy)
		}
		if err == nil && prefillLen > 0 && strings.HasPrefix(sw.Name, "prefill-") {
			err = b.prefillWith(prefillLen, setting)
		}
		if err == nil && sw.Verifies {
			// A switch that acts on verifies: its worth to speculative decoding too.
			err = b.oracleWith(32, engine.DefaultDraftLength, 1, setting)
		}
		if rerr := engine.SetSwitch(sw.Name, was); rerr != nil {
			return rerr
		}
		if err != nil {
			// One switch that cannot run here (say, PTX that is out of date) is
			// reported in its row; the others still run.
			b.report.Results = append(b.report.Results, benchResult{Name: "decode greedy", Switch: setting, Error: err.Error()})
		}
	}
	b.e.Close()
	return b.load()
}

// add records st as a row of the report and returns it.
func (b *bench) add(name, switchSetting string, st engine.Stats) *benchResult {
	r := benchResult{Name: name, Switch: switchSetting, PromptTokens: st.PromptTokens, Tokens: st.GeneratedTokens,
		DecodeTokPerSec: st.DecodeTokensPerSec, PrefillTokPerSec: st.PrefillTokensPerSec,
		TTFTms: float64(st.TimeToFirstToken.Microseconds()) / 1000, DispatchesPerToken: st.DispatchesPerToken,
		CommandBuffersPerToken: st.CommandBuffersPerTok, GraphLaunchesPerToken: st.GraphLaunchesPerTok,
		GraphNodeUpdatesPerToken: st.GraphNodeUpdatesPerTok,
		HostSyncsPerToken:        st.HostSyncsPerToken, SampledOnDevice: st.SampledOnDevice,
		GPUmsPerToken:  float64(st.GPUTimePerToken.Microseconds()) / 1000,
		IdleMsPerToken: float64(st.GPUIdlePerToken.Microseconds()) / 1000, IdleInsideMsPerToken: float64(st.GPUIdleInsidePerToken.Microseconds()) / 1000,
		PrefillGPUms: float64(st.PrefillGPUTime.Microseconds()) / 1000, Verifies: st.Verifies}
	if st.Verifies > 0 {
		r.VerifyMs = float64(st.VerifyTime.Microseconds()) / 1000 / float64(st.Verifies)
	}
	if st.DecodeTokensPerSec > 0 && !strings.HasPrefix(name, "prefill") {
		r.WeightGBPerSec = float64(b.report.DecodeWeightBytes) * st.DecodeTokensPerSec / 1e9
		if r.GPUmsPerToken > 0 {
			// The wall time a token takes beyond its GPU time: the host's
			// share that the GPU waits for (recording, the token's read-back).
			r.HostMsPerToken = max(0, 1000/st.DecodeTokensPerSec-r.GPUmsPerToken)
		}
	}
	b.report.Results = append(b.report.Results, r)
	return &b.report.Results[len(b.report.Results)-1]
}

// parseLengths reads "128,512" (empty: none), each a whole number of 1 or
// more; what names one in the error ("a token count").
func parseLengths(flag, what, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not %s (a whole number, 1 or more)", flag, f, what)
		}
		out = append(out, n)
	}
	return out, nil
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}
