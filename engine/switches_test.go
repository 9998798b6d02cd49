package engine

import (
	"math"
	"sort"
	"testing"

	"bagel/internal/testmodel"
	"bagel/switches"
)

// TestFusedPathsKeepTheBits loads each test model with every fused path on and
// with them off and compares the teacher-forced logits, prefill and decode:
// a fused kernel is the unfused sequence in one dispatch, bit for bit.
func TestFusedPathsKeepTheBits(t *testing.T) {
	ids := []int32{9707, 11, 1246, 525, 3555, 30, 2585, 374, 279, 6722}
	for _, name := range []string{"tiny-moe", "tiny-dense"} {
		logits := func(on bool) []float32 {
			for _, sw := range fusedSwitches {
				if err := switches.Set(sw, on); err != nil {
					t.Fatal(err)
				}
			}
			e, err := Load(testmodel.Weights(t, name), Options{Backend: "cpu", ContextLength: 32})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			return scoreLogits(t, e, ids, 6)
		}
		off := logits(false)
		on := logits(true)
		for i := range on {
			if on[i] != off[i] {
				t.Fatalf("%s: logit %d is %v fused, %v unfused", name, i, on[i], off[i])
			}
		}
	}
	switches.Reset()
}

var fusedSwitches = []string{SwitchFusedAddNorm, SwitchFusedProjections, SwitchFusedExpertSwiGLU,
	SwitchFusedMoEDown, SwitchFusedGDNConv, SwitchFusedAttnPrep}

// TestSplitKVAttentionAtLongContext decodes past 1024 tokens of context with
// split-KV attention on and off: the sums run in another order, so logits may
// differ by bf16 noise, no more.
func TestSplitKVAttentionAtLongContext(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	ids := spreadIDs(1030)
	worst, on, off := switchedLogits(t, SwitchSplitKV, 1100, ids, 1020) // the last 10 positions decode one by one
	if on <= off {
		t.Errorf("%d dispatches with split-KV, %d without: the split path did not run", on, off)
	}
	if worst > 0.05 {
		t.Errorf("split-KV attention moves a logit by %g", worst)
	}
}

// TestSplitKVTiledAtLongContext decodes past 1024 tokens of context with the
// split-KV attention's first half on the matrix units and off (tiny-moe's
// heads fit it: ops.TestTiledAttentionFits): the keys are cut into other
// ranges (over the whole context, not each query's), so the f32 sums run in
// another order and logits may move by noise, no more; two dispatches a
// layer either way.
func TestSplitKVTiledAtLongContext(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	ids := spreadIDs(1030)
	worst, on, off := switchedLogits(t, SwitchSplitKVTiled, 1100, ids, 1020) // the last 10 positions decode one by one
	if on != off {
		t.Errorf("%d dispatches with the tiled split, %d without: want the same", on, off)
	}
	if worst > 0.05 {
		t.Errorf("the tiled split moves a logit by %g", worst)
	}
}

// TestPrefillGEMMIsF32Noise scores a prompt with the prompt GEMMs on and off.
// The GEMMs take every weight exactly, as the GEMVs do (on the CPU in the same
// order); what moves the logits is the GDN rule run chunk by chunk, its f32
// sums in another order (measured: median 0.0000 and 0.0014, p90 0.003 and
// 0.011, the MoE's max 0.11 where a router near-tie picks another expert).
// With each weight rounded to bf16 in the GEMMs (prefill-exact-weights off)
// they moved by median 0.03 and 0.02, p90 0.09 and 0.07, max 0.95 and 2.3.
func TestPrefillGEMMIsF32Noise(t *testing.T) {
	ids := spreadIDs(100)
	for _, name := range testmodel.Names {
		var dispatches [2]int64
		logits := func(on bool) []float32 {
			if err := switches.Set(SwitchPrefillGEMM, on); err != nil {
				t.Fatal(err)
			}
			defer switches.Reset(SwitchPrefillGEMM)
			e, err := Load(testmodel.Weights(t, name), Options{Backend: "cpu", ContextLength: 128})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			out := scoreLogits(t, e, ids, 90) // the last 10 positions decode one by one
			i := 0
			if on {
				i = 1
			}
			dispatches[i] = e.Counters().Dispatches
			return out
		}
		off, on := logits(false), logits(true)
		if dispatches[0] == dispatches[1] {
			t.Errorf("%s: %d dispatches with the prompt GEMMs and without: the GEMM path did not run", name, dispatches[0])
		}
		diffs := make([]float64, len(on))
		for i := range on {
			diffs[i] = math.Abs(float64(on[i] - off[i]))
		}
		sort.Float64s(diffs)
		median, p90, worst := diffs[len(diffs)/2], diffs[len(diffs)*9/10], diffs[len(diffs)-1]
		if worst == 0 || median > 0.005 || p90 > 0.02 {
			t.Errorf("%s: |Δlogit| median %.4f, p90 %.4f, max %.4f: want f32 noise (median ≤ 0.005, p90 ≤ 0.02), not 0", name, median, p90, worst)
		}
		t.Logf("%s: prompt GEMMs move the logits by median %.4f, p90 %.4f, max %.4f", name, median, p90, worst)
	}
}

// TestPrefillSplitAttention scores a prompt with a prompt's attention on the
// split-KV kernels and on attention_bf16, at a capacity of one range and of
// two: the sums run in another order, so logits may differ by f32 noise
// through the layers, no more; and the split path ran (two launches an
// attention layer where attention_bf16 takes one).
func TestPrefillSplitAttention(t *testing.T) {
	ids := spreadIDs(100)
	for _, capacity := range []int{128, 8192} {
		// Flash attention, on by default where the device has matrix units
		// (the CPU does), comes before the split path.
		if err := switches.Set(SwitchPrefillFlashAttention, false); err != nil {
			t.Fatal(err)
		}
		worst, on, off := switchedLogits(t, SwitchPrefillSplitAttention, capacity, ids, len(ids))
		if on <= off {
			t.Errorf("capacity %d: %d dispatches with the split path, %d without: it did not run", capacity, on, off)
		}
		if worst > 0.05 {
			t.Errorf("capacity %d: the split path moves a logit by %g", capacity, worst)
		}
	}
}

// TestPrefillFlashAttention scores a prompt with its attention as flash
// attention (one launch a layer) and on the split-KV kernels (two): on the
// CPU both are exact attention with f32 sums in other orders, so the logits
// differ by f32 noise through the layers (the GPU kernel's bf16 softmax
// weights are its kernel cases' business).
func TestPrefillFlashAttention(t *testing.T) {
	ids := spreadIDs(100)
	worst, on, off := switchedLogits(t, SwitchPrefillFlashAttention, 8192, ids, len(ids))
	if on >= off {
		t.Errorf("%d dispatches with flash attention, %d without: it did not run", on, off)
	}
	if worst > 0.05 {
		t.Errorf("flash attention moves a logit by %g", worst)
	}
}

// switchedLogits scores ids on tiny-moe at capacity (the first prefill as a
// prompt, the rest one by one) with switch sw on and off, and returns the
// largest logit difference and the dispatches with it on and off. When some
// tokens decode one by one, only the prompt's last position and theirs are
// compared.
func switchedLogits(t *testing.T, sw string, capacity int, ids []int32, prefill int) (worst float64, on, off int64) {
	t.Helper()
	defer switches.Reset()
	run := func(set bool) ([]float32, int64) {
		if err := switches.Set(sw, set); err != nil {
			t.Fatal(err)
		}
		e, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: capacity})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		// A decode switch (some tokens decode one by one): compare the decoded
		// positions and the prompt's last (the logits of every prompt
		// position, computed and read back, were most of a long context's time
		// and take the same path either way).
		out := scoreFrom(t, e, ids, prefill, prefill == len(ids))
		return out, e.Counters().Dispatches
	}
	a, on := run(true)
	b, off := run(false)
	for i := range a {
		worst = math.Max(worst, math.Abs(float64(a[i]-b[i])))
	}
	t.Logf("%s: largest logit difference, on against off: %g", sw, worst)
	return worst, on, off
}

// TestPrefillMultiGEMMKeepsTheBits: a prompt's projections as one launch of
// GEMMs give the logits of one GEMM each, in fewer dispatches (tiny-moe's
// GDN in-projection has two matrices large enough for a GEMM, qkv and z).
func TestPrefillMultiGEMMKeepsTheBits(t *testing.T) {
	ids := spreadIDs(100)
	worst, on, off := switchedLogits(t, SwitchPrefillMultiGEMM, 128, ids, len(ids))
	if on >= off {
		t.Errorf("%d dispatches with one launch for the GEMMs, %d without: it did not run", on, off)
	}
	if worst != 0 {
		t.Errorf("one launch for the GEMMs moves a logit by %g", worst)
	}
}

// spreadIDs is n token ids spread over the vocabulary (a prompt whose
// neighbouring tokens differ), the same for every test.
func spreadIDs(n int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32((i*7919 + 13) % 150000)
	}
	return ids
}
