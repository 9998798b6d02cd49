package engine

import (
	"slices"

	"bagel/backend"
	"bagel/ops"
	"bagel/switches"
)

// The decode pipeline for a batch (pipeline.go is a lone reply's): while
// nothing joins, leaves or waits, each greedy step of the batch's replies is
// launched on the picks the step before left on the device, before the host
// reads those picks, so the GPU always has the next step queued. A batch of
// 8 on the H200 lost some 0.2–0.3 ms a step to the host's read, sampling and
// sends between steps, as a lone reply without its pipeline does.
//
// A step launched past a reply's unforeseen end (an end-of-text, a cancel)
// runs for nothing for that reply: its pick is dropped and its cache, one
// token past the reply, is reset or restored before its slot serves again
// (reuseInto). A known end (the token limit, the context's end) launches
// nothing extra. A greedy reply that drafts (batch_drafts.go) runs in the
// pipeline while its drafter has no guess after the tokens the host has
// taken: the pipeline then launches nothing more, and the step after it
// verifies the guesses; its budget counts the pipelined steps as plain ones.

// batchAhead is a batched step launched and not yet read: its rows' picks
// on the device (ids, what the step after it embeds) and on their way to the
// host.
type batchAhead struct {
	ids  ops.Tensor          // i32 [B]
	read backend.PendingRead // topK's buffer of one candidate a row: [ids B | logits B | lse B]
	rows int
}

// pipelines says whether step's replies may run pipelined: every one greedy
// without a penalty or drawn on the device (its pick needs no history from
// the host, its draw's uniform none of the tokens), and none about to guess
// (its guesses follow the host's picks; a sampled reply that drafts takes
// its draws in its lone reply's order, step by step), on a device that
// reads back asynchronously, the decode pipeline switched on.
func (e *Engine) pipelines(step []*batchSeq) bool {
	if !switches.On(SwitchDecodePipeline) || !e.CanPipeline() {
		return false
	}
	for _, s := range step {
		sm := s.smp.s
		greedy := sm.Temperature == 0 && !s.readsLogits() && (sm.RepetitionPenalty == 0 || sm.RepetitionPenalty == 1)
		if s.spec != nil && !greedy || !(greedy || s.draw) || s.wantsGuesses() {
			return false
		}
	}
	return true
}

// guessing says whether a reply of step would guess at its next step
// (wantsGuesses): the pipeline then launches nothing more.
func guessing(step []*batchSeq) bool {
	return slices.ContainsFunc(step, (*batchSeq).wantsGuesses)
}

// passDrafts counts a pipelined step in each drafting reply's budget, as a
// plain step.
func passDrafts(step []*batchSeq) {
	for _, s := range step {
		if s.spec != nil && s.spec.budget != nil {
			s.spec.budget.pass()
		}
	}
}

// launchBatch launches one step of step's replies, on their next tokens from
// the host or, with prev, on prev's picks on the device, and queues the read
// of each row's best without waiting for it.
func (e *Engine) launchBatch(step []*batchSeq, prev *batchAhead) (*batchAhead, error) {
	caches, tokens := stepInputs(step)
	for _, s := range step {
		s.drawing = s.drawsNow() // a reply without drafts: its draw alone, every step
	}
	var a *batchAhead
	err := e.loop.do(func() error {
		defer e.scratch.Reset() // the names' buffers stay put: the next step embeds the picks before its own overwrite them
		var logits ops.Tensor
		var err error
		if prev != nil {
			logits, err = e.model.ForwardBatchIDs(e.ctx, caches, prev.ids)
		} else {
			logits, err = e.model.ForwardBatch(e.ctx, caches, tokens)
		}
		if err != nil {
			return err
		}
		back := e.topK(logits, len(step), 1)
		e.drawRows(step, logits, rowsInOrder(len(step)), back, 1)
		read, err := ops.ReadBytesAsync(e.ctx, back)
		if err != nil {
			return err
		}
		a = &batchAhead{ids: ops.View(back, 0, ops.I32, []int{len(step)}), read: read, rows: len(step)}
		return nil
	})
	return a, err
}

// waitBatch waits for a launched step's picks, row by row.
func (e *Engine) waitBatch(a *batchAhead, step []*batchSeq) (picks []int32, failed []error, err error) {
	var raw []byte
	if err := e.loop.do(func() (err error) { raw, err = a.read.Wait(); return err }); err != nil {
		return nil, nil, err
	}
	picks, failed = make([]int32, a.rows), make([]error, a.rows)
	for i, c := range parseTopK(raw, a.rows, 1) {
		picks[i], failed[i] = step[i].pick(ops.Tensor{}, c)
	}
	return picks, failed, nil
}

// pipelined runs steps of step's replies one ahead of the host until one of
// them ends or the batch has other work (a reply waiting for a place, a
// prompt to prefill, a cancel): then it returns to the runner's loop with
// nothing launched.
func (r *batchRunner) pipelined(step []*batchSeq) error {
	e := r.e
	cur, err := e.launchBatch(step, nil)
	if err != nil {
		return err
	}
	for {
		var next *batchAhead
		if r.quiet(step) && !atKnownEnd(step) && !guessing(step) {
			if next, err = e.launchBatch(step, cur); err != nil {
				_, _, _ = e.waitBatch(cur, step)
				return err
			}
		}
		picks, failed, err := e.waitBatch(cur, step)
		if err != nil {
			if next != nil {
				_ = e.loop.do(func() error { _, err := next.read.Wait(); return err })
			}
			return err
		}
		ended := false
		for i, s := range step {
			if next != nil {
				s.ahead = 1 // the cache holds next's row too: its length is the host's one further
			}
			s.takeOrFail(picks[i], failed[i])
			s.ahead = 0
			ended = ended || s.ended
		}
		passDrafts(step)
		if next == nil {
			return nil
		}
		if ended { // next ran for the ended rows too: the others take its picks
			picks, failed, err := e.waitBatch(next, step)
			if err != nil {
				return err
			}
			for i, s := range step {
				if !s.ended {
					s.takeOrFail(picks[i], failed[i])
				}
			}
			passDrafts(step)
			return nil
		}
		cur = next
	}
}

// quiet says whether step may go on alone: no reply waits for a place it
// would get (none is admitted while another caller waits for the turn:
// batchRunner.serve), no prompt waits for its prefill, none of step's
// replies was cancelled.
func (r *batchRunner) quiet(step []*batchSeq) bool {
	r.mu.Lock()
	queued := len(r.queued)
	r.mu.Unlock()
	if queued > 0 && !r.e.othersWait() || len(r.active) != len(step) {
		return false
	}
	for _, s := range step {
		if s.ended || s.g.ctx.Err() != nil {
			return false
		}
	}
	return true
}

// atKnownEnd says whether a reply of step ends with the token of the step
// launched last: its token limit, or its context full.
func atKnownEnd(step []*batchSeq) bool {
	for _, s := range step {
		if s.req.MaxTokens > 0 && s.st.GeneratedTokens+1 >= s.req.MaxTokens || s.cache.Offset >= s.cache.Capacity {
			return true
		}
	}
	return false
}

// rowsInOrder is the first rows of n sequences of one row each: 0..n−1.
func rowsInOrder(n int) []int {
	rows := make([]int, n)
	for i := range rows {
		rows[i] = i
	}
	return rows
}
