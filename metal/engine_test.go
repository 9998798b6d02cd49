package metal_test

import (
	"context"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

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
				e, err := engine.Load(dir, engine.Options{Backend: backend, ContextLength: 256})
				if err != nil {
					if backend == "metal" && metalMissing(err) {
						t.Skipf("no Metal: %v", err)
					}
					t.Fatal(err)
				}
				t.Cleanup(e.Close)
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
				e, err := engine.Load(dir, engine.Options{Backend: backend, ContextLength: 128})
				if err != nil {
					if backend == "metal" && metalMissing(err) {
						t.Skipf("no Metal: %v", err)
					}
					t.Fatal(err)
				}
				defer e.Close()
				var ids []int32
				req := engine.Request{PromptIDs: []int32{9707, 11, 1246, 525, 3555, 30, 2585}, MaxTokens: 12, IgnoreStop: true}
				for ev := range e.Generate(context.Background(), req) {
					switch ev.Kind {
					case engine.EventToken:
						ids = append(ids, ev.Token)
					case engine.EventError:
						t.Fatalf("%s: %v", backend, ev.Err)
					}
				}
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
