package engine

import (
	"context"
	"math"
	"os"
	"sort"
	"strings"
	"testing"

	"bagel/backend"
	"bagel/internal/testmodel"
)

// The GPU end-to-end tests: score and generate on each GPU backend compiled into
// this binary must match the CPU backend. They skip where the backend cannot
// open (no driver), unless BAGEL_REQUIRE_GPU=1 (make gpu-test) turns that into a
// failure. Same tolerances as against the bf16 reference: both sides round at
// the same points and differ only in f32 summation order.
// loadGPU loads the checkpoint in dir on a GPU backend, closed when the test
// ends; it skips the test where the backend cannot open (no driver) unless
// BAGEL_REQUIRE_GPU is set.
func loadGPU(t *testing.T, dir, backendName string, contextLength int) *Engine {
	t.Helper()
	return loadOn(t, dir, Options{Backend: backendName, ContextLength: contextLength})
}

// loadOn loads the checkpoint in dir with opt, closed when the test ends;
// on a GPU backend it skips as loadGPU does.
func loadOn(t *testing.T, dir string, opt Options) *Engine {
	t.Helper()
	e, err := Load(dir, opt)
	if err != nil {
		if opt.Backend != "cpu" && os.Getenv("BAGEL_REQUIRE_GPU") == "" && strings.Contains(err.Error(), "no ") {
			t.Skipf("%s unavailable: %v", opt.Backend, err)
		}
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// gpuBackends are the GPU backends built into this test binary (CUDA on
// Linux, Metal on macOS), each test running on those it finds.
func gpuBackends() []string {
	var names []string
	for _, n := range []string{"cuda", "metal"} {
		if _, ok := backend.Lookup(n); ok {
			names = append(names, n)
		}
	}
	return names
}

func TestGPUMatchesCPU(t *testing.T) {
	for _, backendName := range gpuBackends() {
		for _, name := range testmodel.Names {
			t.Run(backendName+"/"+name, func(t *testing.T) {
				gpu := loadGPU(t, testmodel.Weights(t, name), backendName, 256)
				cpu, err := Load(testmodel.Weights(t, name), Options{Backend: "cpu", ContextLength: 256})
				if err != nil {
					t.Fatal(err)
				}
				defer cpu.Close()
				g := loadGolden(t, name)
				vocab := cpu.Config.VocabSize
				var diffs, lseDiffs []float64
				for _, p := range g.Prompts {
					prefill := max(1, len(p.IDs)/2)
					a := scoreLogits(t, gpu, p.IDs, prefill)
					b := scoreLogits(t, cpu, p.IDs, prefill)
					for pos := range p.Positions {
						ga, gb := a[pos*vocab:(pos+1)*vocab], b[pos*vocab:(pos+1)*vocab]
						for _, id := range TopK(gb, 20) {
							diffs = append(diffs, math.Abs(float64(ga[id]-gb[id])))
						}
						lseDiffs = append(lseDiffs, math.Abs(LogSumExp(ga)-LogSumExp(gb)))
					}
				}
				sort.Float64s(diffs)
				sort.Float64s(lseDiffs)
				median, p99 := diffs[len(diffs)/2], diffs[len(diffs)*99/100]
				// A router near-tie (MoE) may pick another expert on one side and move
				// a few positions' logsumexp beyond the bf16 bound; most stay within it.
				if lse99, lseMax := lseDiffs[len(lseDiffs)*99/100], lseDiffs[len(lseDiffs)-1]; lse99 > bf16LSETol || lseMax > lseTol {
					t.Errorf("logsumexp differs: p99 %.4f (≤ %.2f), max %.4f (≤ %.2f)", lse99, bf16LSETol, lseMax, lseTol)
				}
				t.Logf("%s vs cpu, %d logits: median |Δ| %.5f, p99 %.4f, max %.4f", gpu.BackendName, len(diffs), median, p99, diffs[len(diffs)-1])
				if median > bf16MedianTol || p99 > bf16EntryTol {
					t.Errorf("%s differs from cpu: median %.4f (≤ %.3f), p99 %.4f (≤ %.2f)", backendName, median, bf16MedianTol, p99, bf16EntryTol)
				}

				// greedy generation: the same tokens wherever the CPU's choice is clear
				for _, ref := range g.Greedy {
					req := Request{PromptIDs: ref.PromptIDs, MaxTokens: len(ref.GeneratedIDs)}
					want, _, _ := collect(t, cpu.Generate(context.Background(), req))
					got, _, done := collect(t, gpu.Generate(context.Background(), req))
					same := 0
					for same < min(len(got), len(want)) && got[same] == want[same] {
						same++
					}
					t.Logf("greedy: %d of %d tokens equal; %s", same, len(want), done.Stats.StatsLine())
					if same < len(want) {
						seq := append(append([]int32(nil), ref.PromptIDs...), want[:same]...)
						rows := scoreLogits(t, cpu, seq, len(seq))
						last := rows[(len(seq)-1)*vocab:]
						top := TopK(last, 2)
						if margin := float64(last[top[0]] - last[top[1]]); margin > clearMargin {
							t.Errorf("greedy step %d: %s token %d, cpu %d with a clear margin %.3f", same, backendName, got[same], want[same], margin)
						}
					}
				}
			})
		}
	}
}

// TestGPUOtherShapes runs the random checkpoints of other shapes and
// quantizations on each GPU backend against the CPU backend.
func TestGPUOtherShapes(t *testing.T) {
	for _, backendName := range gpuBackends() {
		for name, spec := range otherSpecs {
			t.Run(backendName+"/"+name, func(t *testing.T) {
				dir := t.TempDir()
				testmodel.WriteRandom(t, dir, spec)
				gpu := loadGPU(t, dir, backendName, 64)
				cpu, err := Load(dir, Options{Backend: "cpu", ContextLength: 64})
				if err != nil {
					t.Fatal(err)
				}
				defer cpu.Close()
				a := scoreLogits(t, gpu, otherIDs, 3)
				b := scoreLogits(t, cpu, otherIDs, 3)
				var num, den float64
				for i := range a {
					num += float64((a[i] - b[i]) * (a[i] - b[i]))
					den += float64(b[i] * b[i])
				}
				rel := math.Sqrt(num / den)
				t.Logf("%s: ‖gpu−cpu‖/‖cpu‖ = %.2e over %d logits", name, rel, len(a))
				if rel > 1e-2 {
					t.Errorf("relative error %.2e > 1e-2", rel)
				}
			})
		}
	}
}
