package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSamplerGreedyAndFilters(t *testing.T) {
	logits := func() []float32 { return []float32{1, 3, 2, 0.5, 2.9} }
	if got := newSampler(Sampling{}).sample(logits(), nil); got != 1 {
		t.Errorf("greedy: %d, want 1", got)
	}
	// top-k 1 at any temperature is greedy
	for seed := uint64(0); seed < 20; seed++ {
		if got := newSampler(Sampling{Temperature: 5, TopK: 1, Seed: seed}).sample(logits(), nil); got != 1 {
			t.Fatalf("top-k 1: %d", got)
		}
	}
	// min-p 0.5 keeps tokens within ln(0.5) of the best: ids 1 and 4 only
	seen := map[int32]bool{}
	for seed := uint64(0); seed < 200; seed++ {
		seen[newSampler(Sampling{Temperature: 1, MinP: 0.5, Seed: seed}).sample(logits(), nil)] = true
	}
	if len(seen) != 2 || !seen[1] || !seen[4] {
		t.Errorf("min-p 0.5 sampled %v, want {1, 4}", seen)
	}
	// top-p 0.5: p(1)≈0.38, p(4)≈0.35 → the smallest set reaching 0.5 is {1, 4}
	seen = map[int32]bool{}
	for seed := uint64(0); seed < 200; seed++ {
		seen[newSampler(Sampling{Temperature: 1, TopP: 0.5, Seed: seed}).sample(logits(), nil)] = true
	}
	if len(seen) != 2 || !seen[1] || !seen[4] {
		t.Errorf("top-p 0.5 sampled %v, want {1, 4}", seen)
	}
}

func TestRepetitionPenalty(t *testing.T) {
	l := []float32{2, -2, 1}
	newSampler(Sampling{RepetitionPenalty: 2}).sample(l, []int32{0, 1, 0})
	if l[0] != 1 || l[1] != -4 || l[2] != 1 {
		t.Errorf("penalised logits %v, want [1 -4 1] (each token once)", l)
	}
}

func TestSamplerFrequencies(t *testing.T) {
	// temperature 1 over two tokens with logits ln 3 and 0: frequencies 3:1
	l := []float32{float32(math.Log(3)), 0}
	s := newSampler(Sampling{Temperature: 1, Seed: 9})
	n := 0
	for i := 0; i < 4000; i++ {
		if s.sample(append([]float32(nil), l...), nil) == 0 {
			n++
		}
	}
	if f := float64(n) / 4000; math.Abs(f-0.75) > 0.03 {
		t.Errorf("frequency of the likelier token %.3f, want 0.75", f)
	}
}

func TestTopK(t *testing.T) {
	got := TopK([]float32{1, 5, 3, 5, -1, 4}, 3)
	want := []int{1, 3, 5}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("TopK = %v, want %v", got, want)
		}
	}
}

// TestPresenceAndFrequencyPenalties: each token the reply has made loses the
// presence penalty once and the frequency penalty per time it was made; the
// prompt's last token (history's first) is not the reply's.
func TestPresenceAndFrequencyPenalties(t *testing.T) {
	history := []int32{2, 0, 0, 1} // the prompt's last token 2, then the reply 0, 0, 1
	for _, c := range []struct {
		presence, frequency float64
		want                int32
	}{
		{0, 0, 0},     // 3, 2.5, 2.9
		{0.3, 0, 2},   // 2.7, 2.2, 2.9: token 2, the prompt's, untouched
		{0, 0.2, 2},   // 2.6, 2.3, 2.9: token 0 made twice
		{-1, 0, 0},    // 4, 3.5, 2.9: a negative penalty favours what was said
		{0.1, 0.1, 2}, // 2.7, 2.3, 2.9
	} {
		logits := []float32{3, 2.5, 2.9}
		s := newSampler(Sampling{PresencePenalty: c.presence, FrequencyPenalty: c.frequency})
		if got := s.sample(logits, history); got != c.want {
			t.Errorf("presence %g frequency %g: token %d, want %d (logits after %v)", c.presence, c.frequency, got, c.want, logits)
		}
	}
	// (A repetition window past MaxRepetitionContext sized a buffer of 10¹⁵ ids.)
	for _, bad := range []Sampling{{PresencePenalty: 2.5}, {FrequencyPenalty: -3}, {PresencePenalty: math.NaN()}, {RepetitionContext: 1e15}} {
		if bad.Validate() == nil {
			t.Errorf("%+v passed Validate", bad)
		}
	}
}

// TestAdditivePenaltiesAreHostPicked: a reply with a presence or frequency
// penalty (or logprobs) reads the logits every step: the host picks, with
// no speculation and no pipeline.
func TestAdditivePenaltiesAreHostPicked(t *testing.T) {
	e := &Engine{}
	for _, req := range []Request{
		{Sampling: Sampling{PresencePenalty: 0.5}},
		{Sampling: Sampling{Temperature: 0.7, TopK: 20, FrequencyPenalty: 0.1}},
		{Logprobs: true},
	} {
		p := e.planDecode(req, []int32{1})
		if _, host := p.pick.(hostPicker); !host || p.spec != nil || p.pipe != nil || p.onDevice {
			t.Errorf("%+v: picker %T, speculation %v, pipeline %v", req, p.pick, p.spec != nil, p.pipe != nil)
		}
	}
}

// TestTopKPastTheWindow: a top k past topKWindow (one sort instead of the
// sorted window, which took seconds a token for a k of the vocabulary) gives
// what the window gives: largest first, ties by lower index, −0 tied with +0.
func TestTopKPastTheWindow(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 40 {
		n := topKWindow + 1 + r.IntN(3000)
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.IntN(41)-20) / 4 // many ties, both signs
			if v[i] == 0 && r.IntN(2) == 0 {
				v[i] = float32(math.Copysign(0, -1))
			}
		}
		k := topKWindow + 1 + r.IntN(n)
		got := TopK(v, k)
		want := make([]int, n) // insertion sort: stable, largest first
		for i := range want {
			want[i] = i
			for j := i; j > 0 && v[want[j]] > v[want[j-1]]; j-- {
				want[j], want[j-1] = want[j-1], want[j]
			}
		}
		want = want[:min(k, n)]
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d (n %d, k %d): %v…, want %v…", trial, n, k, got[:8], want[:8])
		}
	}
}

// TestMadeCountsCarryOver: one sampler over a growing reply (its counts
// kept from pick to pick) penalizes as a fresh sampler over the whole reply
// does, bit for bit, and a history that does not go on from the last is
// counted afresh.
func TestMadeCountsCarryOver(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	s := Sampling{PresencePenalty: 0.7, FrequencyPenalty: 0.3}
	kept := newSampler(s)
	history := []int32{9}
	for step := range 200 {
		if step == 120 { // another reply (a regenerate) through the same sampler
			history = []int32{9, 3, 3}
		}
		base := make([]float32, 50)
		for i := range base {
			base[i] = float32(r.NormFloat64())
		}
		a, b := slices.Clone(base), slices.Clone(base)
		kept.sample(a, history)
		newSampler(s).sample(b, history)
		if !slices.Equal(a, b) {
			t.Fatalf("step %d: the kept counts penalize otherwise than counting afresh", step)
		}
		history = append(history, int32(r.IntN(12)))
	}
}
