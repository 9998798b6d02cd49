package engine

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"bagel/internal/testmodel"
	"bagel/ops"
	"bagel/switches"
)

// TestVerifyWideSlicesOfAShortPrompt: a prompt too short for the prompt
// path and longer than a verify (17 to the plan's PromptMin−1 tokens, the
// step kernels; 79 on these MoEs with the tiled GEMVs) gives every position the logits its verify-wide slices of
// 16 tokens give, run one after the other, bit for bit, on the CPU and each
// GPU backend, the tiled GEMVs on and off. With them on, the experts' down
// projection takes such a prompt 16 tokens at a time (moe_down_mma_bf16,
// each slice its own rows) instead of a launch per token's expert
// (moe_down_bf16, which the CPU's references sum in the same order).
func TestVerifyWideSlicesOfAShortPrompt(t *testing.T) {
	dirs := map[string]string{"wide-moe": t.TempDir(), "tiny-moe": testmodel.Weights(t, "tiny-moe")}
	testmodel.WriteRandom(t, dirs["wide-moe"], wideMoE)
	for _, backendName := range append([]string{"cpu"}, gpuBackends()...) {
		for name, dir := range dirs {
			withTiledGEMV(t, backendName+"/"+name, func(t *testing.T) {
				e := loadGPU(t, dir, backendName, 128) // loads "cpu" as well; 128 keys: attention never splits
				n := e.promptMin - 1
				if n <= ops.MoEDownTiledTokens {
					t.Skipf("no prompt between a verify's %d tokens and the prompt path's %d", ops.MoEDownTiledTokens, e.promptMin)
				}
				ids := make([]int32, n)
				for i := range ids {
					ids[i] = int32((37*i + 11) % e.Config.VocabSize)
				}
				whole, err := e.forward(ids, true)
				if err != nil {
					t.Fatal(err)
				}
				if err := e.resetCache(); err != nil {
					t.Fatal(err)
				}
				var sliced []float32
				for r := 0; r < n; r += ops.MoEDownTiledTokens {
					part, err := e.forward(ids[r:min(n, r+ops.MoEDownTiledTokens)], true)
					if err != nil {
						t.Fatal(err)
					}
					sliced = append(sliced, part...)
				}
				if differ, first := differing(whole, sliced); differ > 0 {
					vocab := e.Config.VocabSize
					t.Errorf("%d of %d logits differ from the slices' (first: position %d, id %d: %g against %g)",
						differ, len(whole), first/vocab, first%vocab, whole[first], sliced[first])
				}
			})
		}
	}
}

// TestShortPromptTakesTheTiledGEMVs: with short-prompt-tiled (on by
// default), a prompt's chunk of 2 to PromptMin−1 tokens (79 on this MoE:
// ops.TiledPromptMinTokens; 31 with the switch off, ops.PromptMinTokens)
// runs on the tiled GEMVs though decode steps keep the plain ones; a chunk
// of one token (a decode step's) and of PromptMin (the prompt path's) keep
// their kernels, as does every chunk with the switch off or on a
// device without matrix units (Metal, its simulator). On the CPU,
// where the tiled kernels' references sum as the plain ones do, the
// kernels' names tell; on each GPU backend the next step's logits are bit
// for bit those after the chunk on the tiled-gemv plan, or on the plain
// one, and the two differ.
func TestShortPromptTakesTheTiledGEMVs(t *testing.T) {
	defer switches.Reset(SwitchShortPromptTiled)
	dir := t.TempDir()
	testmodel.WriteRandom(t, dir, wideMoE) // 4-bit in groups of 64: the tiled experts take it
	for _, backendName := range append([]string{"cpu"}, gpuBackends()...) {
		for _, on := range []bool{true, false} {
			if err := switches.Set(SwitchShortPromptTiled, on); err != nil {
				t.Fatal(err)
			}
			t.Run(fmt.Sprintf("%s/short-prompt-tiled=%v", backendName, on), func(t *testing.T) {
				e := loadGPU(t, dir, backendName, 128)
				if e.TiledGEMV() {
					t.Fatal("the model loaded with the tiled GEMVs for decoding")
				}
				var names []string
				if backendName == "cpu" {
					if err := e.loop.do(func() error {
						e.ctx.Dev, e.ctx.Enc = recordingDevice{e.ctx.Dev, &names}, recordingEncoder{e.ctx.Enc, &names}
						return nil
					}); err != nil {
						t.Fatal(err)
					}
				}
				min := ops.PromptMinTokens
				if on && ops.TiledGEMVs(e.ctx) {
					min = ops.TiledPromptMinTokens
				}
				if e.promptMin != min {
					t.Fatalf("the prompt path starts at %d tokens, want %d", e.promptMin, min)
				}
				for _, n := range []int{1, 2, 24, ops.PromptMinTokens, 48, min - 1, min} {
					ids := make([]int32, n)
					for i := range ids {
						ids[i] = int32((29*i + 5) % e.Config.VocabSize)
					}
					// A device without matrix units (Metal) has no tiled GEMVs: the plain ones.
					units := ops.TiledGEMVs(e.ctx)
					wantTiled := on && units && n >= shortPromptMinTokens && n < min
					names = names[:0]
					prompt := nextLogits(t, e, func() error { return e.forwardPrompt(ids) })
					if backendName == "cpu" {
						if tiled := slices.ContainsFunc(names, func(k string) bool { return strings.Contains(k, "_mma") }); tiled != wantTiled {
							t.Errorf("%d tokens: the prompt and the step after it run the matrix-unit kernels: %v, want %v", n, tiled, wantTiled)
						}
						continue
					}
					plain := nextLogits(t, e, func() error { _, err := e.forward(ids, false); return err })
					tiled := nextLogits(t, e, func() error { return withPlanTiled(e, func() error { _, err := e.forward(ids, false); return err }) })
					want, other, kernels := plain, tiled, "plain"
					if wantTiled {
						want, other, kernels = tiled, plain, "tiled"
					}
					if d, _ := differing(prompt, want); d > 0 {
						t.Errorf("%d tokens: %d of %d logits differ from the %s kernels'", n, d, len(want), kernels)
					}
					if d, _ := differing(want, other); units && n < min && d == 0 {
						t.Errorf("%d tokens: the tiled and the plain kernels give the same logits: the test cannot tell them apart", n)
					}
				}
			})
		}
	}
}

// nextLogits resets e's cache, runs prefill, then one step of a fixed token
// and returns its logits.
func nextLogits(t *testing.T, e *Engine, prefill func() error) []float32 {
	t.Helper()
	if err := e.resetCache(); err != nil {
		t.Fatal(err)
	}
	if err := prefill(); err != nil {
		t.Fatal(err)
	}
	logits, err := e.forward([]int32{3}, false)
	if err != nil {
		t.Fatal(err)
	}
	return logits
}

// withPlanTiled runs f with e's plan on the tiled GEMVs.
func withPlanTiled(e *Engine, f func() error) error {
	set := func(on bool) error { return e.loop.do(func() error { e.ctx.Plan.TiledGEMV = on; return nil }) }
	if err := set(true); err != nil {
		return err
	}
	defer set(false)
	return f()
}

// differing counts the values of a and b whose bits differ, and gives the
// index of the first (−1: none).
func differing(a, b []float32) (n, first int) {
	first = -1
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			if n++; first < 0 {
				first = i
			}
		}
	}
	return n, first
}

// TestGPUShortPromptPastSplitKeys: a MoE's prompt chunk of PromptMin−1
// tokens (79 rows on the tiled step kernels) after 200 tokens of context,
// past splitKVMinContext keys, where its attention runs as a prompt's
// (flash attention; attention_bf16 without it), gives on each GPU backend
// the next step's logits of the CPU backend within TestGPUMatchesCPU's
// bf16 bound, and so does the same prompt in chunks of 24.
func TestGPUShortPromptPastSplitKeys(t *testing.T) {
	defer switches.Reset(SwitchShortPromptTiled)
	if err := switches.Set(SwitchShortPromptTiled, true); err != nil { // chosen: the CPU takes it too
		t.Fatal(err)
	}
	dir := t.TempDir()
	testmodel.WriteRandom(t, dir, wideMoE)
	backends := gpuBackends()
	if len(backends) == 0 {
		t.Skip("no GPU backend in this build")
	}
	cpu := loadGPU(t, dir, "cpu", 512)
	if cpu.promptMin != ops.TiledPromptMinTokens {
		t.Fatalf("the prompt path starts at %d tokens, want %d", cpu.promptMin, ops.TiledPromptMinTokens)
	}
	const context = 200
	ids := make([]int32, context+cpu.promptMin-1)
	for i := range ids {
		ids[i] = int32((37*i + 11) % cpu.Config.VocabSize)
	}
	for _, chunk := range []int{cpu.promptMin - 1, 24} {
		run := func(e *Engine) []float32 {
			return nextLogits(t, e, func() error {
				if err := e.forwardPrompt(ids[:context]); err != nil {
					return err
				}
				for r := context; r < len(ids); r += chunk {
					if err := e.forwardPrompt(ids[r:min(len(ids), r+chunk)]); err != nil {
						return err
					}
				}
				return nil
			})
		}
		want := run(cpu)
		for _, name := range backends {
			t.Run(fmt.Sprintf("%s/chunks-of-%d", name, chunk), func(t *testing.T) {
				got := run(loadGPU(t, dir, name, 512))
				worst := 0.0
				for _, id := range TopK(want, 20) {
					worst = max(worst, math.Abs(float64(got[id]-want[id])))
				}
				t.Logf("the next step's top 20 logits: |Δ| at most %.4f against the CPU's", worst)
				if worst > bf16EntryTol {
					t.Errorf("the next step's logits differ from the CPU's by up to %.4f (≤ %.2f)", worst, bf16EntryTol)
				}
			})
		}
	}
}
