package engine

import (
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
// runs the accepted tokens again. That is exact; the re-run costs a forward of
// the accepted tokens, which is why the switch stays off by default until the
// rollback replays from saved per-token states (issue 12's state ring).

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
			"(the same replies, or the same distribution); experimental: a rejected guess re-runs the kept ones.",
		Default: false,
		Env:     "BAGEL_SPECULATIVE_NGRAM",
	})
}

// speculator drives one reply's speculative steps.
type speculator struct {
	e        *Engine
	drafter  drafter.Drafter
	draftLen int // guesses per step at most
}

// step runs the model on last (the newest token, not yet in the cache) and up
// to draftLen drafted guesses after context (every token so far, last
// included), and returns the tokens the step adds (accepted guesses and the
// bonus) and how many guesses it proposed and kept. The cache then holds last
// and the accepted guesses.
func (s *speculator) step(context []int32, last int32, room int) (out []int32, proposed, accepted int, err error) {
	e := s.e
	drafts := s.validDrafts(context, room)
	if len(drafts) == 0 { // none, or a guess the model cannot take: decode plainly
		id, err := e.forwardArgmax([]int32{last})
		return []int32{id}, 0, 0, err
	}
	var before *qwen.Snapshot
	if err := e.loop.do(func() (err error) { before, err = e.cache.SnapshotState(e.ctx); return err }); err != nil {
		return nil, 0, 0, err
	}
	picks, err := e.forwardArgmaxAll(append([]int32{last}, drafts...))
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

// rollback puts the cache back to before a verify (state snapshot before)
// and runs last and the kept guesses again, so that it holds exactly them.
func (s *speculator) rollback(before *qwen.Snapshot, last int32, kept []int32) error {
	e := s.e
	if err := e.loop.do(func() error { return e.cache.Restore(e.ctx, before) }); err != nil {
		return err
	}
	_, err := e.forwardArgmax(append([]int32{last}, kept...))
	return err
}

// forwardArgmaxAll runs tokens and returns the device's greedy pick after
// each of them (argmax over every position's logits).
func (e *Engine) forwardArgmaxAll(tokens []int32) ([]int32, error) {
	picks := make([]int32, len(tokens))
	err := e.step(tokens, true, nil, func(logits ops.Tensor) error {
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
