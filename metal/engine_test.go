package metal_test

import (
	"context"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"bagel/drafter"
	"bagel/engine"
	"bagel/internal/testmodel"
	"bagel/metal"
	"bagel/metal/mtl"
	"bagel/switches"
)

// TestScoreMatchesCPU scores the same tokens on the test models with the Metal
// and CPU backends (half prefilled, the rest decoded one by one) and compares
// every position. Both follow the same bf16 roundings, so they differ only by
// f32 summation order: the bounds are tighter than TestScoreMatchesTransformers'.
// Off macOS it runs the engine on the simulator, which it switches on.
func TestScoreMatchesCPU(t *testing.T) {
	if mtl.Simulated {
		t.Setenv(mtl.SimulatorEnv, "1")
		metal.Register() // init ran before the switch was set
	}
	for _, name := range testmodel.Names {
		t.Run(name, func(t *testing.T) {
			dir := testmodel.Weights(t, name)
			load := func(backend string) *engine.Engine {
				e := loadOrSkip(t, dir, backend, 256)
				t.Logf("%s: %s (%s)", backend, e.BackendName, e.BackendReason)
				return e
			}
			ref, gpu := load("cpu"), load("metal")
			if gpu.BackendReason != "chosen: metal" {
				t.Errorf("backend reason %q", gpu.BackendReason)
			}
			vocab := ref.Config.VocabSize
			ids := make([]int32, 48)
			for i := range ids {
				ids[i] = int32((i*7919 + 13) % vocab)
			}
			opt := engine.ScoreOptions{Top: 20, Prefill: len(ids) / 2}
			want, err := ref.Score(ids, opt)
			if err != nil {
				t.Fatal(err)
			}
			got, err := gpu.Score(ids, opt)
			if err != nil {
				t.Fatal(err)
			}
			var diffs []float64
			for pos := range want {
				w, g := want[pos], got[pos]
				if d := math.Abs(w.LogSumExp - g.LogSumExp); d > 0.05 {
					t.Errorf("pos %d: logsumexp %.4f (metal) vs %.4f (cpu)", pos, g.LogSumExp, w.LogSumExp)
				}
				if w.TopLogits[0]-w.TopLogits[1] > 0.3 && g.TopIDs[0] != w.TopIDs[0] {
					t.Errorf("pos %d: top-1 %d (metal) vs %d (cpu), cpu margin %.3f", pos, g.TopIDs[0], w.TopIDs[0], w.TopLogits[0]-w.TopLogits[1])
				}
				metal := map[int]float32{}
				for j, id := range g.TopIDs {
					metal[id] = g.TopLogits[j]
				}
				for j, id := range w.TopIDs[:10] {
					if v, ok := metal[id]; ok {
						diffs = append(diffs, math.Abs(float64(v-w.TopLogits[j])))
					} else {
						diffs = append(diffs, math.Inf(1))
					}
				}
			}
			sort.Float64s(diffs)
			median, p90 := diffs[len(diffs)/2], diffs[len(diffs)*9/10]
			t.Logf("%d logits: median |Δ| %.4f, p90 %.4f", len(diffs), median, p90)
			if median > 0.03 || p90 > 0.1 {
				t.Errorf("metal logits differ from the CPU: median %.4f (≤ 0.03), p90 %.4f (≤ 0.1)", median, p90)
			}
		})
	}
}

// loadOrSkip loads dir on backend, closed when the test ends; a Mac without a
// usable Metal device skips the test (unless BAGEL_REQUIRE_GPU=1).
func loadOrSkip(t *testing.T, dir, backend string, contextLength int) *engine.Engine {
	t.Helper()
	e, err := engine.Load(dir, engine.Options{Backend: backend, ContextLength: contextLength})
	if err != nil {
		if backend == "metal" && metalMissing(err) {
			t.Skipf("no Metal: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// generate runs req on e and returns the reply's tokens and final stats; an
// error event fails the test.
func generate(t *testing.T, e *engine.Engine, req engine.Request) ([]int32, engine.Stats) {
	t.Helper()
	var ids []int32
	var done engine.Stats
	for ev := range e.Generate(context.Background(), req) {
		switch ev.Kind {
		case engine.EventToken:
			ids = append(ids, ev.Token)
		case engine.EventError:
			t.Fatalf("%s: %v", e.BackendName, ev.Err)
		case engine.EventDone:
			done = ev.Stats
		}
	}
	return ids, done
}

// metalMissing reports whether err says this Mac has no usable Metal device,
// which skips the test unless BAGEL_REQUIRE_GPU=1 (a compile error never does).
func metalMissing(err error) bool {
	if os.Getenv("BAGEL_REQUIRE_GPU") == "1" {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "found no GPU") || strings.Contains(s, "metal: loading")
}

// TestGenerateMatchesCPU generates greedily on both test models with the Metal
// and CPU backends: the prompt's prefill, the decode steps and the token
// picked on the device all go through the Metal backend's own encoder. On the
// simulator the kernels are the CPU's, so the replies must be the same
// tokens; on a Mac, f32 sums in another order may part them where two logits
// nearly tie, so there it checks that the reply runs whole and leaves the
// numbers to TestScoreMatchesCPU.
func TestGenerateMatchesCPU(t *testing.T) {
	if mtl.Simulated {
		t.Setenv(mtl.SimulatorEnv, "1")
		metal.Register()
	}
	for _, name := range testmodel.Names {
		t.Run(name, func(t *testing.T) {
			dir := testmodel.Weights(t, name)
			reply := func(backend string, pipeline bool) []int32 {
				if err := switches.Set(engine.SwitchDecodePipeline, pipeline); err != nil {
					t.Fatal(err)
				}
				defer switches.Reset(engine.SwitchDecodePipeline)
				e := loadOrSkip(t, dir, backend, 128)
				defer e.Close()
				ids, _ := generate(t, e, engine.Request{PromptIDs: []int32{9707, 11, 1246, 525, 3555, 30, 2585}, MaxTokens: 12, IgnoreStop: true})
				return ids
			}
			want := reply("cpu", false)
			for _, pipeline := range []bool{false, true} { // the decode pipeline's asynchronous reads too
				got := reply("metal", pipeline)
				if len(got) != len(want) {
					t.Fatalf("metal (pipeline %v) gave %d tokens, cpu %d", pipeline, len(got), len(want))
				}
				if mtl.Simulated && !slices.Equal(got, want) {
					t.Errorf("metal (simulated, pipeline %v) %v\ncpu %v", pipeline, got, want)
				}
				t.Logf("%s (pipeline %v): %v", name, pipeline, got)
			}
		})
	}
}

// echoDrafter guesses that the last k tokens come again: mostly wrong, so
// nearly every verify rolls back, now and then right.
type echoDrafter struct{}

func (echoDrafter) Draft(history []int32, k int) []int32 {
	if k < 1 || len(history) < k {
		return nil
	}
	return slices.Clone(history[len(history)-k:])
}

// TestChatTurnsMatchCPU plays three turns of a chat in one engine on Metal and
// on the CPU backend: a greedy reply, then a sampled one with a repetition
// penalty and speculative decoding, then a greedy speculative one, each turn's
// prompt the last one's with its reply and two new tokens, so that turns 2
// and 3 reuse the held conversation (prompt reuse) and the guesses roll back
// again and again. On the simulator the replies must be the CPU's token for
// token; on a Mac each turn must run whole, reuse its prompt and verify.
func TestChatTurnsMatchCPU(t *testing.T) {
	if mtl.Simulated {
		t.Setenv(mtl.SimulatorEnv, "1")
		metal.Register()
	}
	defer switches.Reset(engine.SwitchSpeculative)
	for _, name := range testmodel.Names {
		t.Run(name, func(t *testing.T) {
			dir := testmodel.Weights(t, name)
			chat := func(backend string) ([][]int32, []engine.Stats) {
				e := loadOrSkip(t, dir, backend, 256)
				defer e.Close()
				turns := []struct {
					speculative bool
					sampling    engine.Sampling
				}{
					{false, engine.Sampling{}},
					{true, engine.Sampling{Temperature: 0.7, TopK: 20, TopP: 0.95, Seed: 5, RepetitionPenalty: 1.3, RepetitionContext: 8}},
					{true, engine.Sampling{}},
				}
				prompt := []int32{9707, 11, 1246, 525, 3555, 30, 2585}
				var replies [][]int32
				var stats []engine.Stats
				for i, turn := range turns {
					if err := switches.Set(engine.SwitchSpeculative, turn.speculative); err != nil {
						t.Fatal(err)
					}
					if i > 0 {
						prompt = append(append(slices.Clone(prompt), replies[i-1]...), int32(100+i), int32(200+i))
					}
					req := engine.Request{PromptIDs: prompt, MaxTokens: 16, IgnoreStop: true, Sampling: turn.sampling, Drafter: echoDrafter{}, DraftLength: 3}
					ids, done := generate(t, e, req)
					replies, stats = append(replies, ids), append(stats, done)
				}
				return replies, stats
			}
			want, _ := chat("cpu")
			got, stats := chat("metal")
			for i := range want {
				if len(got[i]) != len(want[i]) {
					t.Fatalf("turn %d: metal gave %d tokens, cpu %d", i+1, len(got[i]), len(want[i]))
				}
				if mtl.Simulated && !slices.Equal(got[i], want[i]) {
					t.Errorf("turn %d: metal (simulated) %v\ncpu %v", i+1, got[i], want[i])
				}
				if st := stats[i]; i > 0 && (st.ReusedPromptTokens == 0 || st.Verifies == 0) {
					t.Errorf("turn %d on metal: %d prompt tokens reused, %d verifies (want both)", i+1, st.ReusedPromptTokens, st.Verifies)
				}
				t.Logf("%s turn %d: %v (%d reused, %d/%d guesses kept)", name, i+1, got[i], stats[i].ReusedPromptTokens, stats[i].DraftAccepted, stats[i].DraftProposed)
			}
		})
	}
}

// TestBatchMatchesCPU decodes three greedy replies together (GenerateBatch:
// each step one forward of three sequences, each on its own cache) with the
// Metal and CPU backends. On the simulator each reply must be the CPU's token
// for token; on a Mac, that every reply runs whole.
func TestBatchMatchesCPU(t *testing.T) {
	if mtl.Simulated {
		t.Setenv(mtl.SimulatorEnv, "1")
		metal.Register()
	}
	for _, name := range testmodel.Names {
		t.Run(name, func(t *testing.T) {
			dir := testmodel.Weights(t, name)
			var reqs []engine.Request
			for i := range 3 {
				prompt := make([]int32, 5+9*i)
				for j := range prompt {
					prompt[j] = int32((j*7919 + 31*i + 13) % 150000)
				}
				reqs = append(reqs, engine.Request{PromptIDs: prompt, MaxTokens: 6 + 3*i, IgnoreStop: true})
			}
			replies := func(backend string) [][]int32 {
				out, _ := batchReplies(t, dir, backend, reqs)
				return out
			}
			want, got := replies("cpu"), replies("metal")
			for i := range want {
				if len(got[i]) != reqs[i].MaxTokens || mtl.Simulated && !slices.Equal(got[i], want[i]) {
					t.Errorf("reply %d: metal %v, cpu %v", i, got[i], want[i])
				}
			}
		})
	}
}

// TestBatchDraftsMatchCPU: with speculative decoding on, a batch's greedy
// replies verify their guesses in the batch's steps (a reply's rows beside
// the others' one token each, rolled back where a guess is wrong) on the
// Metal backend as on the CPU: the same replies, token for token, in the
// simulator, a reply drawn on the device beside them; guesses proposed and
// kept.
func TestBatchDraftsMatchCPU(t *testing.T) {
	if mtl.Simulated {
		t.Setenv(mtl.SimulatorEnv, "1")
		metal.Register()
	}
	defer switches.Reset(engine.SwitchSpeculative)
	if err := switches.Set(engine.SwitchSpeculative, true); err != nil {
		t.Fatal(err)
	}
	dir := testmodel.Weights(t, "tiny-moe")
	var reqs []engine.Request
	for i := range 3 {
		half := make([]int32, 6+3*i)
		for j := range half {
			half[j] = int32((j*7919 + 31*i + 13) % 150000)
		}
		reqs = append(reqs, engine.Request{PromptIDs: append(slices.Clone(half), half...), MaxTokens: 8 + 2*i, IgnoreStop: true})
	}
	// Beside them a reply drawn on the device (drawRows), which drafts nothing.
	reqs = append(reqs, engine.Request{PromptIDs: reqs[2].PromptIDs[:7], MaxTokens: 9, IgnoreStop: true,
		Sampling: engine.Sampling{Temperature: 0.9, TopK: 12, TopP: 1, Seed: 5}})
	want, _ := batchReplies(t, dir, "cpu", reqs)
	// The first reply's guesses are its reply: every one kept.
	reqs[0].Drafter = drafter.OracleDrafter{Continuation: want[0], PromptLen: len(reqs[0].PromptIDs)}
	got, stats := batchReplies(t, dir, "metal", reqs)
	for i := range want {
		if len(got[i]) != reqs[i].MaxTokens || mtl.Simulated && !slices.Equal(got[i], want[i]) {
			t.Errorf("reply %d: metal %v, cpu %v", i, got[i], want[i])
		}
	}
	if st := stats[0]; st.DraftAccepted == 0 || st.DraftAccepted != st.DraftProposed {
		t.Errorf("the oracle's reply kept %d of %d guesses, want all", st.DraftAccepted, st.DraftProposed)
	}
	for i, st := range stats[:3] {
		if !st.Speculative {
			t.Errorf("reply %d did not draft", i)
		}
	}
}

// batchReplies runs reqs as one batch on backend (caches of 64 tokens) and
// returns each reply's tokens and final stats.
func batchReplies(t *testing.T, dir, backend string, reqs []engine.Request) ([][]int32, []engine.Stats) {
	t.Helper()
	e := loadOrSkip(t, dir, backend, 128)
	defer e.Close()
	streams, err := e.GenerateBatch(context.Background(), reqs, 64)
	if err != nil {
		t.Fatal(err)
	}
	out, stats := make([][]int32, len(streams)), make([]engine.Stats, len(streams))
	for i, s := range streams { // each stream holds its whole reply: read them in turn
		for ev := range s.Events {
			switch ev.Kind {
			case engine.EventToken:
				out[i] = append(out[i], ev.Token)
			case engine.EventDone:
				stats[i] = ev.Stats
			case engine.EventError:
				t.Fatalf("%s: reply %d: %v", backend, i, ev.Err)
			}
		}
	}
	return out, stats
}
