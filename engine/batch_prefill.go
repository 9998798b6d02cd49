package engine

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"bagel/ops"
	"bagel/qwen"
	"bagel/switches"
)

// A batch's prompts: between two decode steps the runner prefills one chunk
// of the sequence with the least prompt left (all of it but its last token,
// which its first decode step runs), so a short prompt joins the decode
// steps before a long one's prefill ends. Beside that chunk, in the same
// forward (qwen.Model.ForwardPrompts), go the next chunks of the other
// sequences still prefilling, as many as fit in one chunk's tokens: replies
// that arrive together (a client's parallel requests, the bench's streams)
// read each weight once for all their prompts instead of once a prompt, and
// all start decoding after one forward instead of one after another. A
// chunk keeps its boundaries (those of its lone reply's prefill) and goes
// with others only where it takes the prompt path alone
// (ops.Plan.PromptMin), so each reply's cache gets its lone reply's bits.
//
// A chunk under the prompt path (a short prompt; the few tokens after a
// chat's conversation ends, where its state is kept for the next turn, and
// before the reply's first: every templated prompt has them) takes the step
// kernels alone, each token's sums those of a decode step. Such chunks of
// several sequences go together as the rows of one batched step
// (qwen.Model.ForwardPromptRows: a sequence's tokens one after another, as
// a verify's, without the logits), up to qwen.MaxBatch rows, where the lone
// chunk's forward takes the step's kernels (not where promptKernels moves
// it to the tiled GEMVs): the openings of eight chat replies arriving
// together (2 to 6 tokens each) then take two or three forwards, not eight.

// SwitchPromptsTogether prefills the prompts of a batch's replies together.
const SwitchPromptsTogether = "prompts-together"

// SwitchShortPromptsTogether starts the prompt path at
// ops.RepliesPromptMinTokens on a model loaded for several replies
// (ops.Plan.RepliesPrompts), so that their short prompts go together too.
const SwitchShortPromptsTogether = "short-prompts-together"

func init() {
	switches.Register(switches.Switch{
		Name: SwitchPromptsTogether,
		Description: fmt.Sprintf("Replies that answer together prefill their prompts in one forward, each weight read once for all of them "+
			"(chunks of %d tokens or more, %d where a MoE model's shorter prompts take the tiled GEMVs, up to a prefill chunk in all; "+
			"shorter chunks, such as the few tokens that open each chat reply, as the rows of one batched step, up to %d; "+
			"applies at the next prompt).", ops.PromptMinTokens, ops.TiledPromptMinTokens, qwen.MaxBatch),
		Default: true,
		Env:     "BAGEL_NO_PROMPTS_TOGETHER",
	})
	switches.Register(switches.Switch{
		Name: SwitchShortPromptsTogether,
		Description: fmt.Sprintf("A model loaded for several replies runs prompts of %d tokens and more on the prompt path, so that short prompts "+
			"arriving together prefill in one forward; a lone reply's prompt of %d to %d tokens then reaches its first token about 10 ms later (H100) "+
			"(applies at the next model load).", ops.RepliesPromptMinTokens, ops.RepliesPromptMinTokens, ops.TiledPromptMinTokens-1),
		Default: true,
		Env:     "BAGEL_NO_SHORT_PROMPTS_TOGETHER",
	})
}

// promptChunk is a sequence's next prefill chunk, prompt[s.prefill:end].
type promptChunk struct {
	s   *batchSeq
	end int
}

// prefillNext runs the next prompt work of seqs: one forward of the chunks
// promptGroup picks. An error ends the sequences of its forward only; the
// error returned stops the batch (the device is gone).
func (e *Engine) prefillNext(seqs []*batchSeq) error {
	group := e.promptGroup(seqs)
	if len(group) == 0 {
		return nil
	}
	err := e.loop.do(func() error {
		defer e.scratch.Reset()
		return e.forwardChunks(group)
	})
	if errors.Is(err, ErrClosed) {
		return err
	}
	for _, pc := range group {
		if err != nil {
			pc.s.fail(err)
		} else {
			e.prefilled(pc.s, pc.end)
		}
	}
	return nil
}

// promptGroup is the chunks of the next prefill forward: the next chunk of
// the sequence with the least prompt left, then, with the switch on, those
// of the others that may go with it, least prompt first, up to a prefill
// chunk's tokens in all. A sequence cancelled while it prefills ends here.
func (e *Engine) promptGroup(seqs []*batchSeq) []promptChunk {
	var waiting []*batchSeq
	for _, s := range seqs {
		if s.ended || s.prefill >= len(s.prompt)-1 {
			continue
		}
		if s.g.ctx.Err() != nil {
			s.finish(ReasonCancelled)
			continue
		}
		waiting = append(waiting, s)
	}
	if len(waiting) == 0 {
		return nil
	}
	slices.SortStableFunc(waiting, func(a, b *batchSeq) int {
		return cmp.Compare(len(a.prompt)-a.prefill, len(b.prompt)-b.prefill)
	})
	group := []promptChunk{e.nextChunk(waiting[0])}
	// Beside a chunk on the prompt path, others on it up to a prefill
	// chunk's tokens; beside one on the step kernels, others on them up to
	// a batched step's rows.
	with, most := e.together, e.prefillChunk
	if !with(group[0]) {
		with, most = e.rowsTogether, qwen.MaxBatch
		if !with(group[0]) {
			return group
		}
	}
	tokens := group[0].end - waiting[0].prefill
	for _, s := range waiting[1:] {
		pc := e.nextChunk(s)
		if n := pc.end - s.prefill; with(pc) && tokens+n <= most {
			group, tokens = append(group, pc), tokens+n
		}
	}
	return group
}

// nextChunk is s's next prefill chunk: a chunk's tokens (the request's or
// the engine's), ending at the conversation's end where the prompt reuse
// keeps its state and before the prompt's last token, as a lone reply's
// prefill cuts it (generation.prefill).
func (e *Engine) nextChunk(s *batchSeq) promptChunk {
	end := min(s.prefill+cmp.Or(s.req.PrefillChunk, e.prefillChunk), len(s.prompt)-1)
	if s.prefill < s.keepAt {
		end = min(end, s.keepAt)
	}
	return promptChunk{s: s, end: end}
}

// together says whether chunk pc may share its forward with others: with
// the switch on, a chunk without an image that takes the prompt path alone.
func (e *Engine) together(pc promptChunk) bool {
	return switches.On(SwitchPromptsTogether) && pc.end-pc.s.prefill >= e.promptMin && !pc.holdsImage()
}

// holdsImage says whether chunk pc holds some of an image's pads (its
// forward is the multimodal one, alone).
func (pc promptChunk) holdsImage() bool {
	return pc.s.images != nil && pc.s.images.holdsImage(pc.s.prefill, pc.end)
}

// rowsTogether says whether chunk pc, under the prompt path, may share a
// batched step with others: with the switch on, a chunk without an image
// that a batched step's rows take (qwen.RecordRows tokens at most) and whose
// lone forward runs the step's kernels as they are.
func (e *Engine) rowsTogether(pc promptChunk) bool {
	n := pc.end - pc.s.prefill
	return switches.On(SwitchPromptsTogether) && n < e.promptMin && n <= qwen.RecordRows && !e.movesToTiled(n) && !pc.holdsImage()
}

// forwardChunks runs group's chunks, one forward for all of them, and waits
// for it. On the device goroutine.
func (e *Engine) forwardChunks(group []promptChunk) error {
	if len(group) == 1 {
		s, end := group[0].s, group[0].end
		chunk := s.prompt[s.prefill:end]
		var logits ops.Tensor
		var err error
		if group[0].holdsImage() {
			logits, err = e.model.ForwardMultimodal(e.ctx, s.cache, chunk, s.images.chunk(s.prefill, end, e.Config.HiddenSize), false)
		} else {
			logits, err = e.forwardChunk(s.cache, chunk) // a lone reply's chunk's kernels
		}
		if err != nil {
			return err
		}
		_, err = ops.ReadBytes(e.ctx, ops.View(logits, 0, ops.F32, []int{1})) // waits for the chunk
		return err
	}
	caches, chunks := make([]*qwen.Cache, len(group)), make([][]int32, len(group))
	for i, pc := range group {
		caches[i], chunks[i] = pc.s.cache, pc.s.prompt[pc.s.prefill:pc.end]
	}
	if len(chunks[0]) < e.promptMin { // rowsTogether's
		hidden, err := e.model.ForwardPromptRows(e.ctx, caches, chunks)
		if err != nil {
			return err
		}
		if _, err = ops.ReadBytes(e.ctx, ops.View(hidden, 0, ops.BF16, []int{2})); err != nil { // waits for the rows
			return err
		}
		return e.countSlots() // the batch record, on its first use
	}
	hidden, err := e.model.ForwardPrompts(e.ctx, caches, chunks)
	if err != nil {
		return err
	}
	_, err = ops.ReadBytes(e.ctx, ops.View(hidden, 0, ops.BF16, []int{2})) // waits for the chunks
	return err
}

// prefilled moves s past its chunk ending at end: its progress sent where
// its prompt takes several chunks, its conversation's state kept where the
// chunk ends it.
func (e *Engine) prefilled(s *batchSeq, end int) {
	s.prefill = end
	s.st.PrefilledTokens = end
	if len(s.prompt)-s.reused > cmp.Or(s.req.PrefillChunk, e.prefillChunk) { // a long prompt's progress, as Generate sends it
		s.g.send(Event{Kind: EventStats, Stats: s.st})
	}
	if end == s.keepAt && s.keepAt > s.reused {
		if err := e.keepSnapshotOf(s.cache, s.key[:end]); err != nil {
			s.fail(err)
		}
	}
}
