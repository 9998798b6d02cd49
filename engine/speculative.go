package engine

import (
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
	draftLen int          // guesses per step at most
	budget   *draftBudget // how many of them the next step makes; nil: always draftLen
	// draftTime is the last step's time in the drafter.
	draftTime time.Duration
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
	e := s.e
	drafts := s.validDrafts(context, room)
	if len(drafts) == 0 { // none, or a guess the model cannot take: decode plainly
		id, err := e.forwardArgmax([]int32{last})
		return []int32{id}, 0, 0, err
	}
	var before *qwen.Snapshot
	picks, err := e.forwardArgmaxAll(append([]int32{last}, drafts...), s.beforeVerify(&before))
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
	err := e.loop.do(func() error {
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
		return nil
	})
	if err != nil || replayed {
		return err
	}
	_, err = e.forwardArgmax(append([]int32{last}, kept...))
	return err
}

// forwardArgmaxAll runs tokens, after prepare (nil: none) on the device
// goroutine, and returns the device's greedy pick after each of them (argmax
// over every position's logits).
func (e *Engine) forwardArgmaxAll(tokens []int32, prepare func() error) ([]int32, error) {
	picks := make([]int32, len(tokens))
	err := e.step(tokens, true, prepare, func(logits ops.Tensor) error {
		rows, err := e.readTopK(logits, len(tokens), 1)
		for i := range picks {
			if err == nil {
				picks[i], err = rows[i].greedy()
			}
		}
		return err
	})
	return picks, err
}
