package engine

import (
	"math"
	"time"
)

// draftBudget chooses how many guesses a speculative step makes, so that
// speculative decoding is never much slower than plain decoding: guesses the
// model keeps rejecting cost a verify each, and a verify is not free (H200,
// 35B-A3B: a verify of 4 guesses costs 2.55 plain steps, of 1 to 8 guesses
// 0.39 to 0.41 of a step a guess; docs/history/benchmarks-2026-12.md, fifth session).
//
// A verify of γ guesses costs about 1 + c·γ plain steps, c measured as the
// reply goes (the wall time of the steps with guesses against those without;
// defaultGuessCost until both have been seen: the second step, and one in
// calibrateEvery, is plain, to time one). When each guess is kept with
// probability α, independently, a step yields Σ_{i≤γ} α^i = (1 − α^(γ+1))/(1 − α)
// tokens on average; α is estimated from the reply's guesses, the recent ones
// weighing most. The budget picks the γ ≤ max with the most tokens per plain
// step of cost, and 0 (a plain step) when no γ beats a plain step's one
// token. While at 0 it lets one guess through every probeEvery steps, so that
// the estimate recovers when the text turns repetitive (code, a quoted
// passage) and prompt lookup starts to pay.
type draftBudget struct {
	max int
	// kept and missed are decayed counts of guesses kept and of rejections
	// (a step that rejects a guess rejects one and stops).
	kept, missed float64
	// plainSec and verifySec are moving averages of the wall time of a step
	// without guesses and of one with them; verifyGuesses of how many a
	// verify carried. Zero: not seen yet.
	plainSec, verifySec, verifyGuesses float64
	idle                               int // plain steps chosen since the last probe
	steps                              int // lengths asked for
}

const (
	// defaultGuessCost is c before the reply has measured it: the H200
	// figure above, (2.55 − 1) / 4.
	defaultGuessCost = 0.4
	// budgetDecay weighs the guess counts and the timings: about the last
	// ten steps count.
	budgetDecay = 0.9
	// priorKept and priorMissed start α at one half, and keep one unlucky
	// step from settling it.
	priorKept, priorMissed = 1.0, 1.0
	// probeEvery is how many plain steps pass between probes while guessing
	// does not pay.
	probeEvery = 8
	// calibrateEvery is how often a step is made plain to time one, when the
	// drafter has found a guess for every step (a plain step's time is what
	// c is measured against).
	calibrateEvery = 64
)

func newDraftBudget(max int) *draftBudget { return &draftBudget{max: max} }

// acceptance is the estimated probability that a guess is kept.
func (b *draftBudget) acceptance() float64 {
	return (b.kept + priorKept) / (b.kept + b.missed + priorKept + priorMissed)
}

// guessCost is c: what one more guess adds to a verify, in plain steps.
func (b *draftBudget) guessCost() float64 {
	if b.plainSec <= 0 || b.verifySec <= 0 || b.verifyGuesses <= 0 {
		return defaultGuessCost
	}
	c := (b.verifySec/b.plainSec - 1) / b.verifyGuesses
	return math.Min(math.Max(c, 0.02), 4)
}

// length is how many guesses the next step should make (0 to max).
func (b *draftBudget) length() int {
	if b.steps++; b.max > 0 && (b.plainSec == 0 && b.steps == 2 || b.steps%calibrateEvery == 0) {
		return 0 // a plain step, to time one
	}
	if best := b.best(); best > 0 {
		b.idle = 0
		return best
	}
	if b.idle++; b.idle >= probeEvery && b.max > 0 {
		b.idle = 0
		return 1
	}
	return 0
}

// best is the number of guesses, 0 to max, with the most tokens per plain
// step of cost (0: none beats a plain step).
func (b *draftBudget) best() int {
	alpha, c := b.acceptance(), b.guessCost()
	best, bestRate := 0, 1.0
	for g := 1; g <= b.max; g++ {
		if rate := expectedTokens(alpha, g) / (1 + c*float64(g)); rate > bestRate {
			best, bestRate = g, rate
		}
	}
	return best
}

// mayGuess says, without counting a step, whether the next step may make a
// guess: guesses pay, or a probe is due.
func (b *draftBudget) mayGuess() bool {
	return b.max > 0 && (b.best() > 0 || b.idle+1 >= probeEvery)
}

// pass counts a plain step made without asking length (a pipelined batch's,
// batch_pipeline.go): as length's plain step, a probe that falls due left
// to the next length.
func (b *draftBudget) pass() {
	b.steps++
	if b.idle+1 < probeEvery {
		b.idle++
	}
}

// expectedTokens is what a step with g guesses yields on average when each is
// kept with probability alpha: the kept run and the model's own next token.
func expectedTokens(alpha float64, g int) float64 {
	if alpha >= 1 {
		return float64(g + 1)
	}
	return (1 - math.Pow(alpha, float64(g+1))) / (1 - alpha)
}

// observe records a step: proposed guesses of which accepted were kept, and
// its wall time d.
func (b *draftBudget) observe(proposed, accepted int, d time.Duration) {
	ema := func(avg *float64, v float64) {
		if *avg == 0 {
			*avg = v
			return
		}
		*avg = budgetDecay**avg + (1-budgetDecay)*v
	}
	sec := d.Seconds()
	if proposed == 0 {
		if sec > 0 {
			ema(&b.plainSec, sec)
		}
		return
	}
	b.kept = budgetDecay*b.kept + float64(accepted)
	b.missed = budgetDecay * b.missed
	if accepted < proposed {
		b.missed++
	}
	if sec > 0 {
		ema(&b.verifySec, sec)
		ema(&b.verifyGuesses, float64(proposed))
	}
}
