package engine

import (
	"math"
	"slices"
	"testing"

	"bagel/drafter"
	"bagel/internal/testmodel"
	"bagel/switches"
)

// TestRejectionRuleKeepsTheDistribution: a guess kept with probability p(d),
// else a draw from the rest, yields p exactly, for a guess inside the
// distribution and one outside it (200,000 draws, each frequency within
// 0.006 of p).
func TestRejectionRuleKeepsTheDistribution(t *testing.T) {
	ids := []int32{10, 20, 30, 40}
	probs := []float64{0.45, 0.3, 0.2, 0.05}
	for _, d := range []int32{20, 40, 99} {
		smp := newSampler(Sampling{Temperature: 1, Seed: uint64(d)})
		count := map[int32]int{}
		kept := 0
		const n = 200_000
		for range n {
			tok, ok := smp.acceptOrResample(ids, probs, d)
			count[tok]++
			if ok {
				kept++
			}
		}
		for i, id := range ids {
			if got := float64(count[id]) / n; math.Abs(got-probs[i]) > 0.006 {
				t.Errorf("guess %d: token %d drawn %.4f of the time, want %.2f", d, id, got, probs[i])
			}
		}
		want := 0.0
		if i := slices.Index(ids, d); i >= 0 {
			want = probs[i]
		}
		if got := float64(kept) / n; math.Abs(got-want) > 0.006 {
			t.Errorf("guess %d kept %.4f of the time, want %.2f", d, got, want)
		}
	}
}

// TestSpeculativeSampled: a sampled reply (top-k on the device) with
// speculative decoding runs whole, keeps guesses (at a low temperature, where
// another sample mostly agrees), and is the same reply for the same seed.
func TestSpeculativeSampled(t *testing.T) {
	defer switches.Reset(SwitchSpeculative)
	e, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	prompt := []int32{9707, 11, 1246, 525, 3555, 30, 2585}
	req := Request{PromptIDs: prompt, MaxTokens: 40, IgnoreStop: true,
		Sampling: Sampling{Temperature: 0.05, TopK: 20, TopP: 0.95, Seed: 7}}
	plain, _ := generateWith(t, e, SwitchSpeculative, false, req)
	// The plain sampled reply is a plausible guess at another sample.
	req.Drafter = drafter.OracleDrafter{Continuation: plain, PromptLen: len(prompt)}
	a, done := generateWith(t, e, SwitchSpeculative, true, req)
	b, _ := generateWith(t, e, SwitchSpeculative, true, req)
	st := done.Stats
	if len(a) != req.MaxTokens || !st.Speculative || st.DraftProposed == 0 || st.DraftAccepted == 0 {
		t.Fatalf("%d tokens, speculative %v, %d/%d guesses kept", len(a), st.Speculative, st.DraftAccepted, st.DraftProposed)
	}
	if !slices.Equal(a, b) {
		t.Error("the same seed gave two replies")
	}
	for _, id := range a {
		if id < 0 || int(id) >= e.Config.VocabSize {
			t.Fatalf("token %d outside the vocabulary", id)
		}
	}
	t.Logf("%d/%d guesses kept", st.DraftAccepted, st.DraftProposed)
}

// TestSpeculativeSampledWithPenalty: at a temperature low enough that each
// position's distribution is one token, sampled speculative decoding with a
// repetition penalty gives the plain sampled reply token for token: every
// verified position must be penalized with the history it has (the earlier
// guesses included), or a guess the penalty rules out would be kept. The tiny
// model never repeats itself, so the "penalty" here is a factor below 1, which
// favours the tokens in the window: it must change the reply, or the test
// would prove nothing.
func TestSpeculativeSampledWithPenalty(t *testing.T) {
	defer switches.Reset(SwitchSpeculative)
	e, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	prompt := []int32{9707, 11, 1246, 525, 3555, 30, 2585}
	sampling := Sampling{Temperature: 1e-4, TopK: 20, TopP: 1, Seed: 3, RepetitionPenalty: 0.05, RepetitionContext: 8}
	req := Request{PromptIDs: prompt, MaxTokens: 32, IgnoreStop: true, Sampling: sampling}
	plain, _ := generateWith(t, e, SwitchSpeculative, false, req)
	unpenalized := req
	unpenalized.Sampling.RepetitionPenalty = 1
	if free, _ := generateWith(t, e, SwitchSpeculative, false, unpenalized); slices.Equal(free, plain) {
		t.Fatalf("the penalty does not change the reply %v: pick a stronger one", plain)
	}
	for _, c := range []struct {
		name string
		d    drafter.Drafter
	}{
		{"oracle", drafter.OracleDrafter{Continuation: plain, PromptLen: len(prompt)}},
		{"n-gram", drafter.NGramDrafter{MinN: 1, MaxN: 3}},
	} {
		req := req
		req.Drafter = c.d
		spec, done := generateWith(t, e, SwitchSpeculative, true, req)
		if !slices.Equal(spec, plain) {
			t.Errorf("%s drafts: speculative %v\nplain %v", c.name, spec, plain)
		}
		if st := done.Stats; !st.Speculative || st.DraftProposed == 0 {
			t.Errorf("%s drafts: speculative %v, %d proposed", c.name, st.Speculative, st.DraftProposed)
		}
	}
}

// chiSquare is Pearson's statistic of the drawn counts against probs over n draws.
func chiSquare(count map[int32]int, ids []int32, probs []float64, n int) float64 {
	x := 0.0
	for i, id := range ids {
		want := probs[i] * float64(n)
		d := float64(count[id]) - want
		x += d * d / want
	}
	return x
}

// TestRejectionRuleChiSquare: the tokens the rejection rule yields follow p at
// a 0.1% significance level (Pearson's χ² over 100,000 draws below 16.27, the
// critical value for 3 degrees of freedom), for a guess inside the
// distribution and one outside it; and the test tells two deliberately wrong
// rules apart from it: keeping every guess, and drawing from the whole
// distribution (the guess included) after a rejection.
func TestRejectionRuleChiSquare(t *testing.T) {
	const n, critical = 100_000, 16.27 // χ²(3), p = 0.001
	ids := []int32{10, 20, 30, 40}
	probs := []float64{0.45, 0.3, 0.2, 0.05}
	draws := func(seed uint64, rule func(smp *sampler, d int32) int32, d int32) float64 {
		smp := newSampler(Sampling{Temperature: 1, Seed: seed})
		count := map[int32]int{}
		for range n {
			count[rule(smp, d)]++
		}
		return chiSquare(count, ids, probs, n)
	}
	right := func(smp *sampler, d int32) int32 { tok, _ := smp.acceptOrResample(ids, probs, d); return tok }
	keepAll := func(smp *sampler, d int32) int32 { return d }
	wholeAfterReject := func(smp *sampler, d int32) int32 {
		if smp.rng.Float64() < probs[slices.Index(ids, d)] {
			return d
		}
		return ids[smp.pick(probs)]
	}
	for i, d := range []int32{20, 40, 99} {
		if x := draws(uint64(100+i), right, d); x > critical {
			t.Errorf("guess %d: χ² %.1f over %.2f: the rule does not keep the distribution", d, x, critical)
		}
	}
	for name, rule := range map[string]func(*sampler, int32) int32{"keep every guess": keepAll, "whole distribution after a rejection": wholeAfterReject} {
		if x := draws(7, rule, 20); x <= critical {
			t.Errorf("wrong rule %q passes: χ² %.1f ≤ %.2f", name, x, critical)
		}
	}
}
