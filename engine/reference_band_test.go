package engine

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"bagel/backend"
	"bagel/internal/testmodel"
	"bagel/ops"
	"bagel/reference"
	"bagel/switches"
)

// The engine's numerics against the float64 reference (package reference,
// which shares no code with the kernels), path by path, on models that route
// like real ones (MoE of 16 experts top-4 and 8 experts top-2) and a dense
// one, teacher-forced over 176 positions: past the 128 keys from which a
// decode step's attention splits its keys across threadgroups and a chunk of
// more than 16 tokens under the prompt path attends as a prompt does
// (ops.wideStep: the last chunks of 24 and of 48 below).
//
// The band is the reference's own bf16 error: the reference run with MLX's
// roundings (every activation rounded to bf16 where MLX stores one, the
// weights exact as MLX's decode GEMVs take them) is measured against the
// exact forward on the same model and prompt, and every path of the engine
// must stay within 30% of that error, measured three ways: the residual
// stream after the first layer (median over positions of each position's
// relative error: before the random models' router ties and layers amplify
// it), and the logits at the exact forward's top 20 ids of every position
// (median and 90th percentile of |Δ|). And where the exact forward's top-1
// margin exceeds twice the bf16 reference's 99th-percentile logit error,
// every path picks the exact forward's top-1. Measured when the band was
// set (CPU): every path's errors at 0.39–0.96 of the bf16 reference's.
//
// The prompt paths (GEMMs on the matrix units) must besides stay within 5% of
// the decode path's first-layer error and 20% of the largest logit errors of
// the paths without the prompt GEMMs (decode steps, verify-wide and short
// chunks: each sums in f32 in its own order, and that order alone moves a
// logit percentile: on moe-16x4 the decode path's p90 is 0.0527 on the CPU
// and 0.0447 on CUDA, the prompt path's 0.0533 and 0.0537; H100, 2026-12-07),
// with no more top-1 disagreements than the decode path. With each weight
// rounded to bf16 in the prompt GEMMs, as MLX does and as Bagel's prompt
// path did (switch prefill-exact-weights off), the prompt path's first-layer
// error is 1.07, 1.07 and 1.10 times the decode path's on these fixtures
// (CPU; its logit p90 1.31, 1.83 and 1.10 times): TestPathsMatchTheReference
// checks that the 5% bound sees it. (Prompt reuse restores a snapshot of the cache bit for
// bit, TestPromptReuseAcrossTurns; its continuation is a chunk here.)
const (
	bandOfReference = 1.3  // a path's error / the bf16 reference's
	bandOfDecode    = 1.05 // a prompt path's first-layer error / the decode path's
	bandOfDecodeLog = 1.2  // its logit errors / the largest of the paths' without the prompt GEMMs
	bandPositions   = 176
)

// bandFixture is a model and a prompt to score.
type bandFixture struct {
	name string
	dir  string
	ids  []int32
}

// The fixtures: random MLX-layout checkpoints (testmodel.WriteRandom) whose
// projections are wide enough (hidden 256) for the prompt GEMMs to run most
// of them, small vocabularies to keep the float64 reference quick.
var bandSpecs = []struct {
	name string
	spec testmodel.Spec
}{
	{"moe-16x4", testmodel.Spec{ModelType: "qwen3_5_moe", Hidden: 256, Layers: 4, Interval: 4, Heads: 4, KVHeads: 2, HeadDim: 64,
		Hk: 2, Hv: 4, Dk: 64, Dv: 64, ConvKernel: 4, Experts: 16, TopK: 4, MoEInter: 128, Share: 128, Vocab: 1024,
		Bits: 4, GroupSize: 64, RouterBits: 8}},
	{"moe-8x2", testmodel.Spec{ModelType: "qwen3_5_moe", Hidden: 256, Layers: 4, Interval: 2, Heads: 4, KVHeads: 1, HeadDim: 128,
		Hk: 2, Hv: 4, Dk: 64, Dv: 64, ConvKernel: 4, Experts: 8, TopK: 2, MoEInter: 256, Share: 256, Vocab: 1024,
		Bits: 4, GroupSize: 64, RouterBits: 8}},
	{"dense", testmodel.Spec{ModelType: "qwen3_5", Hidden: 256, Layers: 4, Interval: 4, Heads: 4, KVHeads: 2, HeadDim: 64,
		Hk: 2, Hv: 4, Dk: 64, Dv: 64, ConvKernel: 4, Intermediate: 512, Vocab: 1024, Bits: 4, GroupSize: 64}},
}

func bandFixtures(t *testing.T) []bandFixture {
	var fixtures []bandFixture
	for _, s := range bandSpecs {
		dir := t.TempDir()
		testmodel.WriteRandom(t, dir, s.spec)
		ids := make([]int32, bandPositions)
		for i := range ids {
			ids[i] = int32((i*7919 + 13) % s.spec.Vocab)
		}
		fixtures = append(fixtures, bandFixture{s.name, dir, ids})
	}
	return fixtures
}

// bandError is one forward's distance from the exact forward.
type bandError struct {
	layer0      float64 // median over positions of ‖Δh‖/‖h‖ after the first layer
	median, p90 float64 // |Δlogit| at the exact forward's top 20 ids, every position
	p99         float64
	flips       int // clear positions (see clearMargin) whose top-1 differs
}

// forwardRun is a forward's residual stream after the first layer
// [positions][hidden] and its logits [positions][vocab].
type forwardRun struct {
	layer0, logits [][]float64
}

func referenceRun(t *testing.T, f bandFixture, r reference.Rounding) forwardRun {
	t.Helper()
	m, err := reference.Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var run forwardRun
	run.logits, err = m.Forward(m.NewState(), f.ids, r, func(layer int, h [][]float64) {
		if layer == 0 {
			run.layer0 = h
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// engineRun scores f's prompt in forwards of chunk tokens on a fresh engine.
func engineRun(t *testing.T, f bandFixture, backendName string, chunk int) forwardRun {
	t.Helper()
	e := loadGPU(t, f.dir, backendName, 256) // loads "cpu" as well
	if err := e.resetCache(); err != nil {
		t.Fatal(err)
	}
	var run forwardRun
	for c0 := 0; c0 < len(f.ids); c0 += chunk {
		err := e.loop.do(func() error {
			defer e.scratch.Reset()
			logits, err := e.model.ForwardInspect(e.ctx, e.cache, f.ids[c0:min(len(f.ids), c0+chunk)], func(layer int, x ops.Tensor) error {
				if layer != 0 {
					return nil
				}
				raw, err := ops.ReadBytes(e.ctx, x)
				run.layer0 = append(run.layer0, bf16Rows(raw, x.Shape[1])...)
				return err
			})
			if err != nil {
				return err
			}
			values, err := ops.ReadF32(e.ctx, logits)
			for i := 0; i+e.Config.VocabSize <= len(values); i += e.Config.VocabSize {
				row := make([]float64, e.Config.VocabSize)
				for j, v := range values[i : i+e.Config.VocabSize] {
					row[j] = float64(v)
				}
				run.logits = append(run.logits, row)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return run
}

// bf16Rows widens bf16 bytes into rows of width.
func bf16Rows(raw []byte, width int) [][]float64 {
	rows := make([][]float64, len(raw)/2/width)
	for r := range rows {
		rows[r] = make([]float64, width)
		for j := range width {
			rows[r][j] = float64(backend.BF16ToF32(binary.LittleEndian.Uint16(raw[2*(r*width+j):])))
		}
	}
	return rows
}

// measure is got's bandError against exact; clearMargin picks the positions
// whose top-1 must agree.
func measure(exact, got forwardRun, clearMargin float64) bandError {
	var e bandError
	var rel, diffs []float64
	for pos := range exact.layer0 {
		num, den := 0.0, 0.0
		for j, v := range exact.layer0[pos] {
			num += (got.layer0[pos][j] - v) * (got.layer0[pos][j] - v)
			den += v * v
		}
		rel = append(rel, math.Sqrt(num/den))
	}
	for pos, row := range exact.logits {
		top := topIDs(row, 20)
		for _, id := range top {
			diffs = append(diffs, math.Abs(got.logits[pos][id]-row[id]))
		}
		if row[top[0]]-row[top[1]] > clearMargin && topIDs(got.logits[pos], 1)[0] != top[0] {
			e.flips++
		}
	}
	sort.Float64s(rel)
	sort.Float64s(diffs)
	e.layer0 = rel[len(rel)/2]
	e.median, e.p90, e.p99 = diffs[len(diffs)/2], diffs[len(diffs)*9/10], diffs[len(diffs)*99/100]
	return e
}

func topIDs(row []float64, k int) []int {
	ids := make([]int, len(row))
	for i := range ids {
		ids[i] = i
	}
	sort.SliceStable(ids, func(a, b int) bool { return row[ids[a]] > row[ids[b]] })
	return ids[:k]
}

func (e bandError) String() string {
	return fmt.Sprintf("layer 0 %.4f, logits median %.4f p90 %.4f, %d top-1 flips", e.layer0, e.median, e.p90, e.flips)
}

// within reports how e exceeds limit scaled by factor (first layer) and
// logFactor (logits), "" when it does not.
func (e bandError) within(limit bandError, factor, logFactor float64) string {
	var over []string
	for _, c := range []struct {
		name      string
		got, want float64
		factor    float64
	}{{"layer 0", e.layer0, limit.layer0, factor}, {"logit median", e.median, limit.median, logFactor},
		{"logit p90", e.p90, limit.p90, logFactor}} {
		if factor := c.factor; c.got > factor*c.want {
			over = append(over, fmt.Sprintf("%s %.4f > %.2f × %.4f", c.name, c.got, factor, c.want))
		}
	}
	return strings.Join(over, ", ")
}

// bandPaths are the ways a prompt reaches the logits: forwards of chunk
// tokens (a whole prompt on the GEMMs, prompt chunks, a speculative verify's
// width, decode steps), with switches set first (name=on|off).
var bandPaths = []struct {
	name     string
	chunk    int
	switches []string
}{
	{"prompt", 2048, nil},
	{"prompt, unfused", 2048, []string{"fused-*=off"}},
	{"chunks of 72 (the prompt path's shortest)", 72, nil},
	{"chunks of 48 (a short prompt's: the tiled GEMVs on a MoE)", 48, []string{"short-prompt-tiled=on"}},
	{"chunks of 7 (a verify's width)", 7, nil},
	{"chunks of 24 on the tiled GEMVs (a short prompt's)", 24, []string{"tiled-gemv=on"}},
	{"decode", 1, nil},
	{"decode on the tiled GEMVs (a batched reply's)", 1, []string{"tiled-gemv=on"}},
}

// setSwitches applies a path's switches ("fused-*" names every fused-* one)
// until the test ends.
func setSwitches(t *testing.T, settings []string) {
	t.Helper()
	for _, s := range settings {
		name, value, _ := strings.Cut(s, "=")
		for _, sw := range Switches() {
			if sw.Name == name || strings.HasSuffix(name, "*") && strings.HasPrefix(sw.Name, strings.TrimSuffix(name, "*")) {
				if err := switches.Set(sw.Name, value == "on"); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { switches.Reset(sw.Name) })
			}
		}
	}
}

// checkPaths holds every path on backendName to the band, and the prompt
// paths to the decode path's error; it returns the decode path's error per
// fixture, and the margin past which the top-1 must agree.
func checkPaths(t *testing.T, backendName string, fixtures []bandFixture, exact, bf16 []forwardRun) ([]bandError, []float64) {
	decodes, margins := make([]bandError, len(fixtures)), make([]float64, len(fixtures))
	for i, f := range fixtures {
		ref := measure(exact[i], bf16[i], 0)
		clearMargin := 2 * ref.p99
		ref = measure(exact[i], bf16[i], clearMargin)
		t.Logf("%s: bf16 reference: %v (top-1 must agree past a margin of %.3f)", f.name, ref, clearMargin)
		errs := map[string]bandError{}
		for _, p := range bandPaths {
			t.Run(fmt.Sprintf("%s/%s/%s", backendName, f.name, p.name), func(t *testing.T) {
				setSwitches(t, p.switches)
				got := measure(exact[i], engineRun(t, f, backendName, p.chunk), clearMargin)
				errs[p.name] = got
				t.Logf("%v", got)
				if over := got.within(ref, bandOfReference, bandOfReference); over != "" {
					t.Errorf("outside the bf16 reference's band: %s", over)
				}
				if got.flips > ref.flips {
					t.Errorf("%d top-1 flips past a margin of %.3f, the bf16 reference %d", got.flips, clearMargin, ref.flips)
				}
			})
		}
		decode, ran := errs["decode"]
		if !ran {
			continue // the backend is not on this machine (its subtests skipped)
		}
		steps := decode // the largest logit errors of the paths without the prompt GEMMs
		for _, p := range bandPaths {
			if e, ok := errs[p.name]; ok && p.chunk < ops.TiledPromptMinTokens {
				steps.median, steps.p90 = max(steps.median, e.median), max(steps.p90, e.p90)
			}
		}
		for _, p := range bandPaths {
			if p.chunk >= ops.TiledPromptMinTokens { // the prompt GEMMs
				if over := errs[p.name].within(decode, bandOfDecode, math.Inf(1)); over != "" {
					t.Errorf("%s/%s/%s: further from the exact forward than the decode path: %s", backendName, f.name, p.name, over)
				}
				if over := errs[p.name].within(steps, math.Inf(1), bandOfDecodeLog); over != "" {
					t.Errorf("%s/%s/%s: further from the exact forward than the paths without the prompt GEMMs: %s", backendName, f.name, p.name, over)
				}
				if errs[p.name].flips > decode.flips {
					t.Errorf("%s/%s/%s: %d top-1 flips, the decode path %d", backendName, f.name, p.name, errs[p.name].flips, decode.flips)
				}
			}
		}
		decodes[i], margins[i] = decode, clearMargin
	}
	return decodes, margins
}

// referenceRuns is the exact and the bf16 reference forward of each fixture.
func referenceRuns(t *testing.T, fixtures []bandFixture) (exact, bf16 []forwardRun) {
	for _, f := range fixtures {
		exact = append(exact, referenceRun(t, f, reference.Exact))
		bf16 = append(bf16, referenceRun(t, f, reference.MLX))
	}
	return exact, bf16
}

// TestPathsMatchTheReference: every path on the CPU within the band, the
// prompt paths within the decode path's; and the band sees MLX's rounding of
// the prompt GEMMs' weights (prefill-exact-weights off) on the fixtures where
// it moves the first layer most.
func TestPathsMatchTheReference(t *testing.T) {
	fixtures := bandFixtures(t)
	exact, bf16 := referenceRuns(t, fixtures)
	decodes, clearMargins := checkPaths(t, "cpu", fixtures, exact, bf16)
	for i, f := range fixtures {
		setSwitches(t, []string{SwitchPrefillExactWeights + "=off"})
		rounded := measure(exact[i], engineRun(t, f, "cpu", 2048), clearMargins[i])
		switches.Reset(SwitchPrefillExactWeights)
		mlxPrompt := measure(exact[i], referenceRun(t, f, reference.MLXPrompt), clearMargins[i])
		t.Logf("%s: prompt with bf16 weights: %v (the reference rounding so: %v)", f.name, rounded, mlxPrompt)
		if rounded.layer0 <= bandOfDecode*decodes[i].layer0 {
			t.Errorf("%s: the prompt GEMMs with bf16 weights are within %.2f of the decode path's first-layer error (%.4f against %.4f): the band cannot see them",
				f.name, bandOfDecode, rounded.layer0, decodes[i].layer0)
		}
	}
}

// TestGPUPathsMatchTheReference is TestPathsMatchTheReference's band on each
// GPU backend (CUDA on the GPU machine, Metal or its simulator).
func TestGPUPathsMatchTheReference(t *testing.T) {
	backends := gpuBackends()
	if len(backends) == 0 {
		t.Skip("no GPU backend in this build")
	}
	fixtures := bandFixtures(t)
	exact, bf16 := referenceRuns(t, fixtures)
	for _, b := range backends {
		checkPaths(t, b, fixtures, exact, bf16)
	}
}
