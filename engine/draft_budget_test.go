package engine

import (
	"testing"
	"time"

	"bagel/qwen"
)

// steps feeds b n steps: each proposes what b asks for and keeps the first
// keep(i) of them; a step costs plain·(1 + cost·guesses).
func steps(b *draftBudget, n int, keep func(proposed int) int, plain time.Duration, cost float64) (lengths []int) {
	for range n {
		g := b.length()
		lengths = append(lengths, g)
		kept := min(keep(g), g)
		b.observe(g, kept, time.Duration(float64(plain)*(1+cost*float64(g))))
	}
	return lengths
}

func TestDraftBudgetGrowsWhileGuessesAreKept(t *testing.T) {
	b := newDraftBudget(8)
	if g := b.length(); g < 1 {
		t.Fatalf("a fresh budget guesses %d: it should try", g)
	}
	got := steps(b, 40, func(p int) int { return p }, 10*time.Millisecond, 0.3)
	if last := got[len(got)-1]; last != 8 {
		t.Fatalf("every guess kept at a guess cost of 0.3: lengths %v, want 8 in the end", got)
	}
}

func TestDraftBudgetStopsGuessingWhenTheyAreRejected(t *testing.T) {
	b := newDraftBudget(4)
	got := steps(b, 64, func(int) int { return 0 }, 10*time.Millisecond, 0.4)
	plain, probes := 0, 0
	for _, g := range got[16:] {
		switch g {
		case 0:
			plain++
		case 1:
			probes++
		default:
			t.Fatalf("every guess rejected: lengths %v, want 0 and the odd probe of 1", got)
		}
	}
	if plain == 0 || probes == 0 || probes > len(got[16:])/probeEvery+1 {
		t.Fatalf("every guess rejected: lengths %v, want mostly 0 with a probe every %d", got, probeEvery)
	}
}

func TestDraftBudgetRecovers(t *testing.T) {
	b := newDraftBudget(4)
	steps(b, 40, func(int) int { return 0 }, 10*time.Millisecond, 0.4)
	got := steps(b, 80, func(p int) int { return p }, 10*time.Millisecond, 0.4)
	if last := got[len(got)-1]; last < 3 {
		t.Fatalf("guesses kept again after rejections: lengths %v, want 3 or 4 in the end", got)
	}
}

// A verify that costs far more than a plain step (a slow backend, a model
// whose experts differ for every guess) is not worth a guess the model keeps
// four times in five.
func TestDraftBudgetWeighsTheMeasuredCost(t *testing.T) {
	cheap, dear := newDraftBudget(8), newDraftBudget(8)
	// Four guesses in five kept: the run of guesses stops at every fifth.
	fourInFive := func() func(int) int {
		n := 0
		return func(p int) int {
			for i := range p {
				if n++; n%5 == 0 {
					return i
				}
			}
			return p
		}
	}
	a := steps(cheap, 60, fourInFive(), 10*time.Millisecond, 0.1)
	b := steps(dear, 60, fourInFive(), 10*time.Millisecond, 3)
	if a[len(a)-1] < 2 {
		t.Fatalf("guess cost 0.1: lengths %v, want several guesses", a)
	}
	for _, g := range b[20:] {
		if g > 1 {
			t.Fatalf("guess cost 3: lengths %v, want no more than a probe", b)
		}
	}
}

func TestExpectedTokens(t *testing.T) {
	for _, c := range []struct {
		alpha float64
		g     int
		want  float64
	}{{1, 4, 5}, {0, 4, 1}, {0.5, 1, 1.5}, {0.5, 2, 1.75}} {
		if got := expectedTokens(c.alpha, c.g); got != c.want {
			t.Errorf("expectedTokens(%v, %d) = %v, want %v", c.alpha, c.g, got, c.want)
		}
	}
}

// countingDrafter guesses k copies of token 1 and counts how many it was asked for.
type countingDrafter struct{ asked []int }

func (d *countingDrafter) Draft(_ []int32, k int) []int32 {
	d.asked = append(d.asked, k)
	return make([]int32, k)
}

// The speculator asks the drafter for what the budget allows: nothing, and
// no lookup, once the guesses keep being rejected; the full length without
// a budget (a drafter the request brings).
func TestSpeculatorAsksTheBudget(t *testing.T) {
	e := &Engine{Config: &qwen.Config{VocabSize: 10}}
	d := &countingDrafter{}
	s := &speculator{e: e, drafter: d, draftLen: 4, budget: newDraftBudget(4)}
	for range 20 { // rejected guesses, a verify costing 1.4 plain steps
		g := s.budget.length()
		s.observe(g, 0, time.Duration(10*(1+0.4*float64(g)))*time.Millisecond)
	}
	d.asked = nil
	s.budget.idle = 0 // the next probe probeEvery steps away
	plain := 0
	for range 7 { // fewer than probeEvery: no probe among them
		if len(s.validDrafts([]int32{1, 2, 3}, 100)) == 0 {
			plain++
		}
		s.observe(0, 0, 10*time.Millisecond)
	}
	if plain != 7 || len(d.asked) != 0 {
		t.Fatalf("after rejections: %d plain steps of 7, drafter asked %v; want 7 and never", plain, d.asked)
	}
	s.budget = nil
	if got := s.validDrafts([]int32{1, 2, 3}, 100); len(got) != 4 {
		t.Fatalf("without a budget: %d guesses, want the draft length 4", len(got))
	}
}
