package engine

import (
	"slices"
	"time"

	"bagel/drafter"
	"bagel/ops"
	"bagel/qwen"
	"bagel/switches"
)

// Speculative decoding, greedy: a drafter guesses the next few tokens, one
// forward pass over [last token, guesses] gives the model's own pick after
// each position, and the guesses it agrees with are kept, plus its pick after
// the last of them (the bonus token). The reply is the plain greedy reply
// token for token; a step yields 1 to draftLen+1 tokens. (Sampled replies:
// speculative_sampled.go.)
//
// Rolling back after a partial accept restores a device copy of the GDN states
// taken before the verify (copy kernels in stream order, no host transfer) and
// replays the GDN rule over the accepted tokens' recorded in_proj outputs
// (qwen.Cache.ReplayGDN: the conv and the rule, no projections, attention or
// experts). That is exact: the same kernels on the same inputs as a forward of
// those tokens.

// SwitchSpeculative turns on prompt-lookup speculative decoding for greedy
// replies without a repetition penalty, and for sampled ones with a top-k on
// the device (speculative_sampled.go).
const SwitchSpeculative = "speculative-ngram"

// DefaultDraftLength is how many tokens the drafter may guess per step when
// Request.DraftLength is 0; MaxDraftLength bounds it, so that a verify (the
// guesses and the token before them) stays a small batch on the GEMV path,
// whose bits plain decoding has.
const (
	DefaultDraftLength = 4
	MaxDraftLength     = 15
)

func init() {
	switches.Register(switches.Switch{
		Name: SwitchSpeculative,
		Description: "Speculative decoding with prompt lookup (n-gram) drafts, for greedy replies and sampled ones with a top-k " +
			"(the same replies, or the same distribution); experimental. The tiled-gemv switch makes its verifies cheaper.",
		Default: false,
		Env:     "BAGEL_SPECULATIVE_NGRAM",
	})
}

// speculator drives one reply's speculative steps.
type speculator struct {
	e        *Engine
	drafter  drafter.Drafter
	mtp      bool         // the model's MTP head drafts (mtp.go); drafter unused
	draftLen int          // guesses per step at most
	budget   *draftBudget // how many of them the next step makes; nil: always draftLen
	// draftTime is the last step's time in the drafter.
	draftTime time.Duration
	// here is set while steps runs a batch of steps on the device goroutine:
	// the steps' device work is then called directly (do), not handed to it.
	here bool
	// cache is the reply's cache where it is not the engine's (a batched
	// reply's slot: the MTP head drafts from it).
	cache *qwen.Cache
}

// do runs f on the device goroutine: directly inside a batch (steps), else
// handed to it.
func (s *speculator) do(f func() error) error {
	if s.here {
		return f()
	}
	return s.e.loop.do(f)
}

// argmax runs tokens, after prepare (nil: none), through s.do, and returns
// the device's greedy pick after each of them (all) or after the last.
func (s *speculator) argmax(tokens []int32, all bool, prepare func() error) ([]int32, error) {
	e := s.e
	rows := 1
	if all {
		rows = len(tokens)
	}
	picks := make([]int32, rows)
	err := s.do(func() error {
		forward := func() (ops.Tensor, error) { return e.model.Forward(e.ctx, e.cache, tokens, all) }
		return e.stepHere(forward, prepare, e.greedyPicks(picks))
	})
	return picks, err
}

// observe tells the budget how a step went: proposed guesses, accepted kept,
// in d of wall time.
func (s *speculator) observe(proposed, accepted int, d time.Duration) {
	if s.budget != nil {
		s.budget.observe(proposed, accepted, d)
	}
}

// step runs the model on last (the newest token, not yet in the cache) and up
// to draftLen drafted guesses after context (every token so far, last
// included), and returns the tokens the step adds (accepted guesses and the
// bonus) and how many guesses it proposed and kept. The cache then holds last
// and the accepted guesses.
func (s *speculator) step(context []int32, last int32, room int) (out []int32, proposed, accepted int, err error) {
	if td, ok := s.drafter.(drafter.TreeDrafter); ok {
		return s.treeStep(td, context, last, room)
	}
	drafts := s.validDrafts(context, room)
	if len(drafts) == 0 { // none, or a guess the model cannot take: decode plainly
		picks, err := s.argmax([]int32{last}, false, nil)
		if err != nil {
			return nil, 0, 0, err
		}
		return picks, 0, 0, nil
	}
	var before *qwen.Snapshot
	picks, err := s.argmax(append([]int32{last}, drafts...), true, s.beforeVerify(&before))
	if err != nil {
		return nil, 0, 0, err
	}
	j := 0
	for j < len(drafts) && drafts[j] == picks[j] {
		j++
	}
	if j < len(drafts) {
		if err := s.rollback(before, last, drafts[:j]); err != nil {
			return nil, 0, 0, err
		}
	}
	return append(append([]int32(nil), drafts[:j]...), picks[j]), len(drafts), j, nil
}

// beforeVerify is a verify's prepare step (Engine.step): it snapshots the
// GDN states into *before and arms the cache to record the verify's GDN
// inputs (qwen.Cache.ArmRecord), for rollback. Run in the verify's own call
// on the device goroutine: a second hand-over to that locked thread cost the
// GPU idle time between verifies.
func (s *speculator) beforeVerify(before **qwen.Snapshot) func() error {
	e := s.e
	return func() (err error) {
		if *before, err = e.cache.SnapshotState(e.ctx); err != nil {
			return err
		}
		return e.cache.ArmRecord(e.ctx, e.model)
	}
}

// rollback puts the cache back to before a verify (state snapshot before)
// and then forward by last and the kept guesses, so that it holds exactly
// them: the GDN rule is replayed over the verify's recorded inputs of those
// tokens (the attention layers' keys and values are already in place), or,
// when the verify could not be recorded, the tokens are run again.
func (s *speculator) rollback(before *qwen.Snapshot, last int32, kept []int32) error {
	e := s.e
	n := 1 + len(kept)
	replayed := false
	err := s.do(func() error {
		defer e.scratch.Reset()
		if err := e.cache.Restore(e.ctx, before); err != nil {
			return err
		}
		if !e.cache.Replayable(n) {
			return nil
		}
		replayed = true
		if err := e.cache.ReplayGDN(e.ctx, e.model, n); err != nil {
			_ = e.cache.Reset(e.ctx) // the state is unknown: start over rather than go on wrong
			return err
		}
		e.model.RewindMTP(e.ctx, e.cache, n-1) // the verify's row of the last kept token
		return nil
	})
	if err != nil || replayed {
		return err
	}
	_, err = s.argmax(append([]int32{last}, kept...), false, nil)
	return err
}

// batchWall is how long steps runs greedy steps on the device goroutine
// before it hands their tokens back: the reply streams in bursts this far
// apart at most (a screen frame), and other calls to the device wait as long.
var batchWall = 16 * time.Millisecond

// batch is what a run of speculative steps yielded.
type batch struct {
	tokens                       []int32 // every step's tokens in order
	proposed, accepted, verifies int
	draftTime, verifyTime        time.Duration
}

// add counts one step of s that took took (its drafting, s.draftTime,
// included) and tells s's budget how it went.
func (b *batch) add(s *speculator, toks []int32, proposed, accepted int, took time.Duration) {
	s.observe(proposed, accepted, took)
	b.tokens = append(b.tokens, toks...)
	b.proposed += proposed
	b.accepted += accepted
	b.draftTime += s.draftTime
	if proposed > 0 {
		b.verifies++
		b.verifyTime += took - s.draftTime
	}
}

// steps runs greedy speculative steps (step) one after another on the device
// goroutine, with no hand-over between them: the next step's drafts and
// launches follow the last one's picks at once (handing each step's picks to
// the generation's goroutine and the next step back stood the GPU idle about
// 60 µs a verify on the H200, docs/history/benchmarks-2026-12.md, fifteenth session). It
// stops after a step whose tokens include a stop token (stop), once it has
// at least limit tokens (0: none), when fewer than two positions are left
// of room, when cancelled says so, or after batchWall. A tree drafter runs
// one step a call (its steps hand their work to the device goroutine).
func (s *speculator) steps(context []int32, last int32, room, limit int, stop func(int32) bool, cancelled func() bool) (batch, error) {
	var b batch
	context = slices.Clone(context)
	start := time.Now()
	one := func() (done bool, err error) {
		stepStart := time.Now()
		toks, proposed, accepted, err := s.step(context, last, room)
		if err != nil {
			return true, err
		}
		b.add(s, toks, proposed, accepted, time.Since(stepStart))
		context = append(context, toks...)
		last, room = toks[len(toks)-1], room-len(toks)
		return slices.ContainsFunc(toks, stop) || (limit > 0 && len(b.tokens) >= limit) || room < 2 ||
			cancelled() || time.Since(start) >= batchWall, nil
	}
	if _, tree := s.drafter.(drafter.TreeDrafter); tree {
		_, err := one()
		return b, err
	}
	err := s.e.loop.do(func() error {
		s.here = true
		defer func() { s.here = false }()
		for {
			if done, err := one(); done || err != nil {
				return err
			}
		}
	})
	return b, err
}
