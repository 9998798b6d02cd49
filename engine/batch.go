package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"bagel/backend"
	"bagel/drafter"
	"bagel/ops"
	"bagel/qwen"
	"bagel/switches"
	"bagel/tokenizer"

	"github.com/dustin/go-humanize"
)

// Batched generation: several replies decode together, one token of each
// per step (qwen.Model.ForwardRows), so a step reads the weights once for
// all of them. Each sequence has its own cache (a slot), sampler, stops and
// limits; a sequence that ends or is cancelled leaves the batch between
// steps and the others go on. A prompt is prefilled in chunks, one chunk
// between two decode steps of the others, so a long prompt delays them by a
// chunk at a time, not by the whole prompt. With speculative decoding on, a
// greedy or top-k sampled reply's guesses ride in the step as rows of their
// own (batch_drafts.go).

// MaxBatch is the most replies GenerateBatch runs together.
const MaxBatch = qwen.MaxBatch

// Stream is one reply of a batched generation: its events, as Generate's,
// and Cancel, which stops it alone. The batch never waits for its reader
// (batch_stream.go): a reader that stops reading should Cancel, or its
// events wait for it.
type Stream struct {
	Events <-chan Event
	Cancel context.CancelFunc
}

// batchSeq is one sequence of a batch.
type batchSeq struct {
	g       *generation
	cancel  context.CancelFunc
	req     Request
	prompt  []int32 // with each image's pads expanded
	key     []int32 // what prompt reuse matches (imagePrompt.key: images told apart by their bytes)
	images  *imagePrompt
	cache   *qwen.Cache
	smp     *sampler
	history []int32 // the prompt's last token, then the reply's (the penalty's window)
	prefill int     // prompt tokens in the cache
	reused  int     // of them, restored from a held conversation (prompt reuse)
	keepAt  int     // where the prompt's conversation ends: its state is kept there for the next turn
	next    int32   // the token the next step runs (from the prompt's last on)
	ended   bool
	st      Stats
	// spec drafts the reply's guesses where it drafts in its batch
	// (batch_drafts.go), nil otherwise; seen is the prompt and the reply so
	// far, what prompt lookup reads; ahead is how many of a step's tokens
	// follow the one take hands on.
	spec  *speculator
	seen  []int32
	ahead int
	// logprobs is the entry of the token last picked where the request asks
	// for log-probabilities (its row's logits read, as a lone reply's
	// hostPicker reads them).
	logprobs *TokenLogprobs
	// draw: the reply's tokens are drawn on the device, as alone
	// (drawsOnDevice; drawRows); drawing: this step's is (drawsNow).
	draw, drawing bool
	// lastStats is when the reply last sent its stats (statsEvery).
	lastStats time.Time
	dec       *tokenizer.StreamDecoder
	thinking  bool
	start     time.Time // the request's
	first     time.Time // the first token's
	// The device's counters and clock at the first token: the reply's
	// per-step figures (those of its batch's steps) at its end.
	c0     backend.Counters
	clock0 clock
	// counted, when set, counts the tokens sent (Parallel.Tokens).
	counted *atomic.Int64
}

// GenerateBatch generates the replies to reqs together, each in a cache of
// contextLength tokens (0: the engine's context length), and returns their
// streams in order. It waits for the engine's turn, as Generate does, and
// holds it until every reply has ended. A request that is wrong (its
// sampling, its prompt) ends its own stream with EventError; the others run.
// It refuses, before any work, more than MaxBatch requests or caches that
// do not fit the device's memory.
func (e *Engine) GenerateBatch(ctx context.Context, reqs []Request, contextLength int) ([]Stream, error) {
	if len(reqs) == 0 || len(reqs) > MaxBatch {
		return nil, fmt.Errorf("a batch runs 1 to %d replies, got %d", MaxBatch, len(reqs))
	}
	n, err := e.batchContext(len(reqs), contextLength)
	if err != nil {
		return nil, err
	}
	r := newBatchRunner(e, n, len(reqs))
	streams := make([]Stream, len(reqs))
	for i, req := range reqs {
		s := newBatchSeq(ctx, e, req)
		r.add(s)
		streams[i] = Stream{Events: s.g.out, Cancel: s.cancel}
	}
	go r.run()
	return streams, nil
}

// newBatchSeq is req's sequence, its stream cancelled with ctx; its events
// go through a queue the batch never waits on (batch_stream.go).
func newBatchSeq(ctx context.Context, e *Engine, req Request) *batchSeq {
	sctx, cancel := context.WithCancel(ctx)
	g := &generation{e: e, ctx: sctx, out: make(chan Event, streamBuffer), queue: newEventQueue()}
	go g.queue.pump(sctx, cancel, g.out)
	return &batchSeq{g: g, cancel: cancel, req: req, start: time.Now()}
}

// batchContext is the cache length of count sequences asking for n tokens
// (0: the engine's context length), refused where it is too short or the
// caches would not fit.
func (e *Engine) batchContext(count, n int) (int, error) {
	n = cmp.Or(n, e.ContextLength())
	if n < 2 {
		return 0, fmt.Errorf("a batch's context length must be at least 2 tokens, got %d", n)
	}
	return n, e.checkSlots(count, n)
}

// checkSlots refuses a batch whose caches would not fit beside what the
// engine holds, with the figures.
func (e *Engine) checkSlots(count, n int) error {
	budget := DeviceMemory(e.Backend)
	if budget.Total == 0 {
		return nil
	}
	mem := e.Memory()
	held := uint64(mem.Weights + mem.Cache + mem.Scratch + mem.PromptCache + e.slotBytes())
	need, what := uint64(count)*uint64(qwen.CacheBytes(e.Config, n)), "caches"
	if switches.On(SwitchSpeculative) {
		// A drafting reply's slot keeps a snapshot of its GDN states for
		// its rollbacks (batch_drafts.go).
		need += uint64(count) * uint64(qwen.CacheBytes(e.Config, 0))
		what = "caches and rollback snapshots (speculative decoding)"
	}
	if held+need > budget.Total {
		return fmt.Errorf("%d replies of %d tokens need %s of %s; %s of %s of %s are taken: run fewer at once or with a shorter context",
			count, n, humanize.IBytes(need), what, humanize.IBytes(held), humanize.IBytes(budget.Total), budget.Source)
	}
	return nil
}

// startSeq checks a sequence's request and readies its prompt and sampler.
func (e *Engine) startSeq(s *batchSeq) error {
	if err := e.check(s.req); err != nil {
		return err
	}
	prompt, err := e.PromptTokens(s.req)
	if err != nil {
		return err
	}
	keepAt, key := e.conversationEnd(s.req, prompt), prompt
	if s.images, err = e.promptImages(prompt, s.req.Images); err != nil {
		return err
	} else if s.images != nil { // as Generate lays them out (generation.run)
		keepAt = s.images.expanded(keepAt)
		prompt, key = s.images.ids, s.images.key()
	}
	if len(prompt) >= s.cache.Capacity {
		return &PromptTooLongError{Tokens: len(prompt), ContextLength: s.cache.Capacity}
	}
	// A conversation held by the engine's prompt reuse (another turn of a
	// chat, a solo reply's or a batch's) is restored into the slot.
	reused, err := e.reuseInto(s.cache, key)
	if err != nil {
		return err
	}
	s.prefill, s.reused = reused, reused
	if !s.req.NoPromptCache {
		s.keepAt = keepAt
	}
	s.prompt, s.key, s.next = prompt, key, prompt[len(prompt)-1]
	s.smp, s.history = newSampler(s.req.Sampling), []int32{s.next}
	s.draw = drawsOnDevice(s.req.Sampling) && !s.req.Logprobs
	s.thinking = startsThinking(e, prompt)
	if s.spec = e.batchSpeculator(s.req, s.cache); s.spec != nil {
		s.seen = slices.Clone(prompt)
	}
	if e.tok != nil {
		s.dec = e.tok.NewStreamDecoder()
	}
	s.st = Stats{Backend: e.BackendName, BackendReason: e.BackendReason, PromptTokens: len(prompt), ContextLength: s.cache.Capacity,
		ReusedPromptTokens: reused, PrefilledTokens: reused, Speculative: s.spec != nil}
	return nil
}

// fail ends s with err.
func (s *batchSeq) fail(err error) {
	if !s.ended {
		s.ended = true
		s.g.send(Event{Kind: EventError, Err: err})
	}
}

// finish ends s with reason and its final stats.
func (s *batchSeq) finish(reason string) {
	s.ended = true
	if s.dec != nil {
		if rest := s.dec.Flush(); rest != "" {
			s.g.send(Event{Kind: EventToken, Text: rest, Thinking: s.thinking, Token: -1})
		}
	}
	s.stats()
	s.g.send(Event{Kind: EventDone, Reason: reason, Stats: s.st})
}

// stats fills s's decode figures as Generate's: its tokens after the first
// over the time since it, and per step the device's dispatches and time
// (those of its batch's steps, and of the prompts prefilled between them).
func (s *batchSeq) stats() { s.g.decodeStats(&s.st, s.first, s.c0, s.clock0) }

// decoding is the sequences whose prompt is in and that have not ended: the
// next step's.
func (e *Engine) decoding(seqs []*batchSeq) []*batchSeq {
	var step []*batchSeq
	for _, s := range seqs {
		if s.ended || s.prefill < len(s.prompt)-1 {
			continue
		}
		if s.g.ctx.Err() != nil {
			s.finish(ReasonCancelled)
			continue
		}
		step = append(step, s)
	}
	return step
}

// batchStep runs one step of step's sequences, each its next token and the
// guesses its drafter made (batch_drafts.go), and hands each the tokens it
// adds.
func (e *Engine) batchStep(step []*batchSeq) error {
	drafts, trees := e.stepDrafts(step)
	start := time.Now()
	out, failed, err := e.forwardBatch(step, drafts, trees)
	if err != nil {
		return err
	}
	observeDrafts(step, drafts, out, time.Since(start))
	for i, s := range step {
		if failed[i] != nil {
			s.fail(failed[i])
		} else {
			s.takeAll(out[i])
		}
	}
	return nil
}

// takeOrFail hands s its pick, or ends it with the pick's error (a row of
// logits that is not finite: its reply's alone).
func (s *batchSeq) takeOrFail(id int32, err error) {
	if err != nil {
		s.fail(err)
	} else {
		s.take(id)
	}
}

// take sends id, s's next token, and ends s when the reply is over.
func (s *batchSeq) take(id int32) {
	e := s.g.e
	if s.st.GeneratedTokens == 0 {
		s.c0, s.clock0 = e.Counters(), e.deviceClock()
		s.first = time.Now()
		s.lastStats = s.first
		s.st.TimeToFirstToken = s.first.Sub(s.start)
		s.st.PrefilledTokens = len(s.prompt)
		// Over the wait for the first token: in a batch the prompt's chunks
		// take turns with the others' steps.
		s.st.PrefillTokensPerSec = float64(len(s.prompt)) / s.st.TimeToFirstToken.Seconds()
	}
	s.st.GeneratedTokens++
	kv := s.cache.Offset - s.ahead // the cache holds the step's tokens after this one too
	s.st.KVLength = kv
	if s.spec != nil {
		s.seen = append(s.seen, id)
	}
	if s.counted != nil {
		s.counted.Add(1)
	}
	s.history = append(s.history, id)
	if e.isEOS(id) && !s.req.IgnoreStop {
		s.finish(ReasonStop)
		return
	}
	text := ""
	switch {
	case id == e.thinkOpen:
		s.thinking = true
	case id == e.thinkClose:
		s.thinking = false
	case s.dec != nil:
		text = s.dec.Add(id)
	}
	lp := s.logprobs
	s.logprobs = nil
	if !s.g.send(Event{Kind: EventToken, Text: text, Thinking: s.thinking, Token: id, Logprobs: lp}) {
		s.finish(ReasonCancelled)
		return
	}
	switch {
	case s.req.MaxTokens > 0 && s.st.GeneratedTokens >= s.req.MaxTokens:
		s.finish(ReasonLength)
	case kv >= s.cache.Capacity:
		s.finish(ReasonContext)
	default:
		s.next = id
		if time.Since(s.lastStats) >= statsEvery { // the panel's live figures, as Generate sends them
			s.stats()
			s.g.send(Event{Kind: EventStats, Stats: s.st})
			s.lastStats = time.Now()
		}
	}
}

// forwardBatch runs the step's rows and returns the tokens each sequence
// adds: a verifying sequence's kept guesses and its pick after them
// (verified), another's next token, picked from its row: on the device the
// repetition penalty and the k best (one read for every row), then on the
// host each sequence's sampler; a row whose sampler needs the logits
// themselves (additive penalties, log-probabilities, or a top-p or min-p
// cut past the candidates) reads its row. A sequence whose pick fails (its
// logits not finite) has its error in failed and the others go on; err is
// the step's own failure (the device's), every sequence's.
func (e *Engine) forwardBatch(step []*batchSeq, drafts [][]int32, trees []*drafter.Tree) (out [][]int32, failed []error, err error) {
	caches, rows := stepRows(step, drafts)
	k, total := 1, 0
	for i, s := range step {
		s.drawing = s.drawsNow()
		k = max(k, s.candidates())
		total += len(rows[i])
	}
	out, failed = make([][]int32, len(step)), make([]error, len(step))
	err = e.loop.do(func() error {
		defer e.scratch.Reset()
		before, err := e.snapshotDrafting(step, drafts, trees)
		if err != nil {
			return err
		}
		logits, starts, err := e.model.ForwardTrees(e.ctx, caches, rows, stepParents(trees))
		if err != nil {
			return err
		}
		if err := penalizeRows(step, logits, starts, drafts); err != nil {
			return err
		}
		back := e.topK(logits, total, k)
		e.drawRows(step, logits, starts, back, k)
		raw, err := ops.ReadBytes(e.ctx, back)
		if err != nil {
			return err
		}
		cands := parseTopK(raw, total, k)
		for i, s := range step {
			r := starts[i]
			switch {
			case trees[i] != nil:
				out[i], err = e.committed(s, trees[i], cands[r:r+len(rows[i])])
			case len(drafts[i]) > 0:
				out[i], err = e.verified(s, drafts[i], cands[r:r+len(rows[i])], before[i])
			default:
				var id int32
				id, err = s.pick(logits.Rows(r, r+1), cands[r])
				out[i] = []int32{id}
			}
			if err != nil {
				out[i], failed[i] = nil, err
			}
		}
		if total > len(step) { // a verify's snapshot and the batch record may have grown
			return e.countSlots()
		}
		return nil
	})
	return out, failed, err
}

// stepInputs are a step's caches and the tokens it runs, a sequence a row.
func stepInputs(step []*batchSeq) ([]*qwen.Cache, []int32) {
	caches, tokens := make([]*qwen.Cache, len(step)), make([]int32, len(step))
	for i, s := range step {
		caches[i], tokens[i] = s.cache, s.next
	}
	return caches, tokens
}

// slotBytes is the memory of the batch slots held (from any goroutine).
func (e *Engine) slotBytes() int64 { return e.slotHeld.Load() }
