package engine

import (
	"cmp"
	"slices"
	"time"

	"bagel/drafter"
	"bagel/ops"
	"bagel/qwen"
	"bagel/switches"
)

// Speculative drafts riding in a batch's step: a greedy reply without a
// repetition penalty, or a sampled one with a top-k, with speculative
// decoding on (the speculative-mtp switch with a head in the checkpoint, or
// speculative-ngram), has the model's MTP head or prompt lookup guess its
// next tokens, and its step runs its newest token and the guesses as rows
// beside the other replies' one token each (qwen.Model.ForwardRows). The
// guesses it agrees with are kept, plus its pick after the last of them;
// after a partial accept its GDN states are restored from a snapshot taken
// before the step and the rule replayed over the kept rows' recorded
// inputs, as a lone reply's verify does (speculative.go). A greedy reply is
// its plain greedy reply token for token; a sampled one keeps its
// distribution by the rejection rule (speculative_sampled.go), its seed's
// draws taken as a lone reply's speculative steps take them, so that it is
// that reply where the batch leaves it the guesses it would make alone
// (where the step's rows run short, it guesses fewer: another draw of the
// same distribution, the same again for the same batch).
//
// A step takes MaxBatch rows at most: the guesses share what the replies
// leave of them, one at a time round the drafting replies. Each reply's
// draft budget weighs its steps with guesses against those without
// (draft_budget.go): in a batch a guess costs a row of a step whose weights
// are read anyway (its conv, rule and attention ride in the pool's
// launches). A batch of greedy replies runs the batch pipeline while no
// drafter has a guess (wantsGuesses: a guess follows the host's picks, so
// the pipeline sees one a token late and stops for it); a sampled reply
// that drafts steps without it.

// batchSpeculator is the drafter of req's reply in a batch, in cache, as a
// lone reply's would be (planDecode): for a greedy reply without a penalty,
// or a sampled one with a top-k on the device, neither asking for
// log-probabilities, the model's MTP head (the
// speculative-mtp switch, the head loaded, no drafter of the request's
// own), else prompt lookup (speculative-ngram); nil otherwise.
func (e *Engine) batchSpeculator(req Request, cache *qwen.Cache) *speculator {
	greedy, topK := devicePicks(req.Sampling)
	switch {
	case req.Sampling.additive() || req.Logprobs || !(greedy || topK):
		return nil
	case e.mtpWanted() && req.Drafter == nil:
		return &speculator{e: e, mtp: true, draftLen: cmp.Or(req.DraftLength, DefaultMTPDraftLength), cache: cache}
	case switches.On(SwitchSpeculative):
		return e.promptLookup(req, greedy) // a greedy reply's may guess trees (Request.TreeWidth)
	}
	return nil
}

// stepDrafts are the guesses each reply of step runs after its next token
// (nil: none), MaxBatch rows in all at most, and where a reply's drafter
// guessed a draft tree, the tree (its nodes; drafts then holds their
// tokens): trees[i], nil for a line of guesses.
func (e *Engine) stepDrafts(step []*batchSeq) (drafts [][]int32, trees []*drafter.Tree) {
	drafts, trees = make([][]int32, len(step)), make([]*drafter.Tree, len(step))
	var heads []int // the replies the model's MTP head drafts for, together
	for i, s := range step {
		// The first token is picked plainly, as a lone reply's is (its
		// prompt's last step): a sampled reply's draws then follow its
		// lone reply's.
		switch {
		case s.spec == nil || s.st.GeneratedTokens == 0:
		case s.spec.mtp:
			heads = append(heads, i)
		default:
			if td, ok := s.spec.drafter.(drafter.TreeDrafter); ok && s.smp.s.Temperature == 0 { // (a sampled reply takes its line, as alone)
				if trees[i] = s.spec.validTree(td, s.seen, s.room()); trees[i] != nil {
					drafts[i] = trees[i].Tokens
				}
			} else {
				drafts[i] = s.spec.validDrafts(s.seen, s.room())
			}
		}
	}
	e.headDrafts(step, heads, drafts)
	drafts = shareRows(drafts, MaxBatch-len(step))
	for i, tree := range trees {
		if tree != nil { // its first nodes: a tree's parents come before their children
			if trees[i] = tree.Prefix(len(drafts[i])); trees[i].Len() == 0 {
				trees[i] = nil
			}
		}
	}
	return drafts, trees
}

// headDrafts has the model's MTP head draft for the replies of step at idx
// into drafts, all of them together (qwen.Model.MTPDraftBatch: a link of the
// chain one launch of each of the head's kernels for all, one read), each
// up to the guesses a lone reply would make (its draft length, its cache's
// room). A reply whose head is out of step drafts nothing; a device error
// leaves every one without guesses (the step that follows meets it).
func (e *Engine) headDrafts(step []*batchSeq, idx []int, drafts [][]int32) {
	var caches []*qwen.Cache
	var lasts []int32
	var used, ns []int
	k := 0
	for _, i := range idx {
		s := step[i]
		if n := s.spec.guesses(s.room()); n > 0 && e.model.MTPReady(s.cache) {
			caches, lasts, used, ns = append(caches, s.cache), append(lasts, s.next), append(used, i), append(ns, n)
			k = max(k, n)
		}
	}
	if len(used) == 0 {
		return
	}
	start := time.Now()
	var out [][]int32
	err := e.loop.do(func() error {
		defer e.scratch.Reset()
		var err error
		out, err = e.model.MTPDraftBatch(e.ctx, caches, lasts, k, func(logits ops.Tensor) ([]int32, error) {
			rows, err := e.readTopK(logits, logits.Shape[0], 1)
			if err != nil {
				return nil, err
			}
			picks := make([]int32, len(rows))
			for r, c := range rows {
				if picks[r], err = c.greedy(); err != nil {
					return nil, err
				}
			}
			return picks, nil
		})
		return err
	})
	took := time.Since(start)
	for j, i := range used {
		if err == nil {
			drafts[i] = out[j][:min(len(out[j]), ns[j])]
		}
		step[i].spec.draftTime = took
	}
}

// shareRows cuts drafts to spare guesses in all, shared out a guess at a
// time round the drafting replies, so that a long guess does not crowd out
// the others' first ones.
func shareRows(drafts [][]int32, spare int) [][]int32 {
	give := make([]int, len(drafts))
	for more := true; spare > 0 && more; {
		more = false
		for i := range drafts {
			if spare > 0 && give[i] < len(drafts[i]) {
				give[i]++
				spare--
				more = true
			}
		}
	}
	for i := range drafts {
		drafts[i] = drafts[i][:give[i]]
	}
	return drafts
}

// wantsGuesses says whether s would guess at its next step, as far as the
// host knows (the tokens it has taken; a step in flight is not seen), without
// counting a step: its budget may guess and its drafter has a guess. A
// batch of greedy replies runs pipelined while none does.
func (s *batchSeq) wantsGuesses() bool {
	sp := s.spec
	if sp == nil || s.st.GeneratedTokens == 0 || sp.draftLen == 0 || sp.budget != nil && !sp.budget.mayGuess() {
		return false
	}
	if sp.mtp {
		return true // the head guesses at every step (its guesses need the newest token on the device)
	}
	return len(sp.drafter.Draft(s.seen, 1)) > 0
}

// room is how many tokens s's next step may add: the cache's room, and for
// a greedy reply no more than its token limit leaves (a sampled one guesses
// past it as a lone reply does, its draws then in that reply's order).
func (s *batchSeq) room() int {
	room := s.cache.Capacity - s.cache.Offset
	if s.req.MaxTokens > 0 && s.smp.s.Temperature == 0 {
		room = min(room, s.req.MaxTokens-s.st.GeneratedTokens)
	}
	return room
}

// stepRows are a step's caches and the tokens each sequence runs: its next,
// then its guesses.
func stepRows(step []*batchSeq, drafts [][]int32) ([]*qwen.Cache, [][]int32) {
	caches, rows := make([]*qwen.Cache, len(step)), make([][]int32, len(step))
	for i, s := range step {
		caches[i], rows[i] = s.cache, append([]int32{s.next}, drafts[i]...)
	}
	return caches, rows
}

// snapshotDrafting takes a state snapshot of every cache of step that
// verifies a line of guesses (nil for the others: a tree leaves the GDN
// states as they were), for its rollback.
func (e *Engine) snapshotDrafting(step []*batchSeq, drafts [][]int32, trees []*drafter.Tree) ([]*qwen.Snapshot, error) {
	before := make([]*qwen.Snapshot, len(step))
	for i, s := range step {
		if len(drafts[i]) > 0 && trees[i] == nil {
			var err error
			if before[i], err = s.cache.SnapshotState(e.ctx); err != nil {
				return nil, err
			}
		}
	}
	return before, nil
}

// verified is what a verify kept of guesses, rows its rows' candidates: a
// greedy reply the prefix the model agrees with, then its pick after the
// last kept; a sampled one the rejection rule's (sampler.verifySampled).
// When it kept fewer than all, the cache is rolled back to before the step
// and on by the kept rows: the GDN states restored from before, the rule
// replayed over the step's record of those rows.
func (e *Engine) verified(s *batchSeq, guesses []int32, rows []candidates, before *qwen.Snapshot) ([]int32, error) {
	var out []int32
	var kept int
	var err error
	if s.smp.s.Temperature == 0 {
		out, kept, err = verifyGreedy(guesses, rows)
	} else {
		out, kept, err = s.smp.verifySampled(guesses, rows)
	}
	if err != nil {
		return nil, err
	}
	if kept < len(guesses) {
		if err := s.cache.Restore(e.ctx, before); err != nil {
			return nil, err
		}
		if err := s.cache.ReplayGDN(e.ctx, e.model, 1+kept); err != nil {
			_ = s.cache.Reset(e.ctx) // the state is unknown: start over rather than go on wrong
			return nil, err
		}
		e.model.RewindMTP(e.ctx, s.cache, kept) // the verify's row of the last kept token
	}
	return out, nil
}

// committed is what a verify of tree kept, rows its rows' candidates (the
// root's first): the branch the model agrees with longest and its pick
// after it, the cache keeping that path (CommitTree, from the step's
// record), as a lone reply's tree verify does (speculator.treeStep).
func (e *Engine) committed(s *batchSeq, tree *drafter.Tree, rows []candidates) ([]int32, error) {
	picks := make([]int32, len(rows))
	for j, c := range rows {
		var err error
		if picks[j], err = c.greedy(); err != nil {
			return nil, err
		}
	}
	out, path := acceptTree(tree, picks)
	if err := s.cache.CommitTree(e.ctx, e.model, s.cache.Offset-len(rows), path); err != nil {
		_ = s.cache.Reset(e.ctx) // the state is unknown: start over rather than go on wrong
		return nil, err
	}
	return out, nil
}

// stepParents are the parents ForwardTrees takes for a step's trees (nil
// for a sequence without one; nil where none has one).
func stepParents(trees []*drafter.Tree) [][]int {
	var parents [][]int
	for i, tree := range trees {
		if tree != nil {
			if parents == nil {
				parents = make([][]int, len(trees))
			}
			parents[i] = treeParents(tree)
		}
	}
	return parents
}

// verifyGreedy keeps the guesses the model's picks after each row agree
// with, then its pick after the last kept: the tokens and how many guesses.
func verifyGreedy(guesses []int32, rows []candidates) ([]int32, int, error) {
	j := 0
	for ; j < len(guesses); j++ {
		pick, err := rows[j].greedy()
		if err != nil {
			return nil, 0, err
		}
		if pick != guesses[j] {
			return append(slices.Clone(guesses[:j]), pick), j, nil
		}
	}
	pick, err := rows[j].greedy()
	if err != nil {
		return nil, 0, err
	}
	return append(slices.Clone(guesses), pick), j, nil
}

// observeDrafts tells each drafting reply of step how its guesses went, in
// a step that took took, and counts them in its stats.
func observeDrafts(step []*batchSeq, drafts, out [][]int32, took time.Duration) {
	for i, s := range step {
		if s.spec == nil || out[i] == nil { // (a reply whose pick failed)
			continue
		}
		proposed, accepted := len(drafts[i]), len(out[i])-1
		s.spec.observe(proposed, accepted, took)
		s.st.DraftProposed += proposed
		s.st.DraftAccepted += accepted
		s.st.DraftTime += s.spec.draftTime
		if proposed > 0 {
			s.st.Verifies++
			s.st.VerifyTime += took
		}
	}
}

// takeAll sends ids, the tokens s's step added, until s ends.
func (s *batchSeq) takeAll(ids []int32) {
	for j, id := range ids {
		if s.ended {
			return
		}
		s.ahead = len(ids) - 1 - j
		s.take(id)
	}
	s.ahead = 0
}
