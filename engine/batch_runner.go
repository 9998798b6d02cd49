package engine

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"bagel/qwen"
)

// batchRunner steps one batch: the sequences stepping (active, at most
// limit, each in a slot) and those waiting for a place (queued). A sequence
// may join while the batch runs (Parallel); the runner leaves when none is
// active or queued, and a later join starts another.
type batchRunner struct {
	e      *Engine
	n      int           // each sequence's cache, in tokens
	limit  int           // the most sequences stepping at once
	wake   chan struct{} // a join or a cancel while the runner waits for the turn
	mu     sync.Mutex
	queued []*batchSeq
	left   bool        // the runner has ended: a join must start another
	active []*batchSeq // the runner's goroutine's alone
	// stepping is len(active), for the other goroutines (Parallel.Replies).
	stepping atomic.Int32
}

func newBatchRunner(e *Engine, n, limit int) *batchRunner {
	return &batchRunner{e: e, n: n, limit: limit, wake: make(chan struct{}, 1)}
}

// add queues s; false when the runner has ended (s is not taken).
func (r *batchRunner) add(s *batchSeq) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.left {
		return false
	}
	r.queued = append(r.queued, s)
	context.AfterFunc(s.g.ctx, r.poke) // a cancel wakes a runner waiting for the turn
	r.poke()
	return true
}

// poke wakes the runner where it waits for the engine's turn.
func (r *batchRunner) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// leave ends the runner when nothing is queued: under the lock, so that a
// join either is seen or finds the runner gone.
func (r *batchRunner) leave() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queued) > 0 {
		return false
	}
	r.left = true
	return true
}

// run is the runner's goroutine: it waits for the engine's turn (ending the
// queued sequences cancelled meanwhile), steps its sequences while it holds
// it (serve), and waits again where it handed the turn to another caller
// with sequences still queued.
func (r *batchRunner) run() {
	for {
		if !r.waitTurn() {
			return
		}
		more := r.serve()
		if more {
			r.e.handoffs.Add(1)
		}
		r.e.give()
		if !more {
			return
		}
	}
}

// waitTurn waits for the engine's turn; false when the runner left
// meanwhile (every queued sequence cancelled).
func (r *batchRunner) waitTurn() bool {
	e := r.e
	e.waiting.Add(1)
	defer e.waiting.Add(-1)
	for {
		select {
		case e.turn <- struct{}{}:
			return true
		case <-r.wake:
			r.dropCancelled()
			if r.leave() {
				return false
			}
		}
	}
}

// serve admits sequences into slots and steps them until none is left
// (false), or until the batch's replies have ended while another caller
// waits for the turn (true: sequences are queued). A batch that kept
// taking joins would otherwise hold the turn for as long as its clients
// send requests: while another caller waits (a scoring, a lone Generate,
// another batch), it admits no one past the replies it took with the
// turn, and hands the turn on once they end.
func (r *batchRunner) serve() (more bool) {
	e := r.e
	// The forwards keep the MTP head in step where it drafts (batch_drafts.go).
	if err := e.keepMTP(e.mtpWanted()); err != nil {
		r.failAll(err)
		return false
	}
	for {
		r.dropCancelled() // a request cancelled while it waits for a place ends now, not when one frees
		// A turn just taken admits: two batches of one engine would
		// otherwise hand it to each other and step nothing.
		if !e.othersWait() || len(r.active) == 0 {
			if err := r.admit(); err != nil {
				r.failAll(err)
				return false
			}
		}
		if err := e.prefillNext(r.active); err != nil {
			r.failAll(err)
			return false
		}
		if step := e.decoding(r.active); step != nil {
			run := e.batchStep
			if r.quiet(step) && e.pipelines(step) {
				run = r.pipelined
			}
			if err := run(step); err != nil {
				for _, s := range step {
					s.fail(err)
				}
			}
		}
		r.release()
		if len(r.active) == 0 {
			if r.leave() {
				return false
			}
			if e.othersWait() {
				return true
			}
		}
	}
}

// dropCancelled ends the queued sequences whose caller has cancelled.
func (r *batchRunner) dropCancelled() {
	r.mu.Lock()
	defer r.mu.Unlock()
	live := r.queued[:0]
	for _, s := range r.queued {
		if s.g.ctx.Err() != nil {
			s.g.send(Event{Kind: EventDone, Reason: ReasonCancelled})
			s.close()
		} else {
			live = append(live, s)
		}
	}
	clear(r.queued[len(live):])
	r.queued = live
}

// admit moves queued sequences into the batch while it has room, each into
// a slot, its request checked (a wrong one ends its own stream).
func (r *batchRunner) admit() error {
	for len(r.active) < r.limit {
		r.mu.Lock()
		if len(r.queued) == 0 {
			r.mu.Unlock()
			return nil
		}
		s := r.queued[0]
		r.queued = r.queued[1:]
		r.mu.Unlock()
		var beside *qwen.Cache // a slot of the batch's pool
		if len(r.active) > 0 {
			beside = r.active[0].cache
		}
		k, err := r.e.takeSlot(r.n, r.limit, beside)
		if err != nil {
			s.fail(err)
			s.close()
			if errors.Is(err, ErrClosed) {
				return err
			}
			continue
		}
		s.cache = k
		r.active = append(r.active, s)
		r.stepping.Store(int32(len(r.active)))
		if err := r.e.startSeq(s); err != nil {
			s.fail(err)
		}
	}
	return nil
}

// release takes the ended sequences out of the batch, their slots freed.
func (r *batchRunner) release() {
	kept := r.active[:0]
	for _, s := range r.active {
		if s.ended {
			r.e.giveSlot(s.cache)
			s.close()
		} else {
			kept = append(kept, s)
		}
	}
	clear(r.active[len(kept):])
	r.active = kept
	r.stepping.Store(int32(len(kept)))
}

// failAll ends every sequence with err (the device is gone).
func (r *batchRunner) failAll(err error) {
	r.mu.Lock()
	all := append(r.active, r.queued...)
	r.queued, r.active, r.left = nil, nil, true
	r.stepping.Store(0)
	r.mu.Unlock()
	for _, s := range all {
		s.fail(err)
		s.close()
	}
}

// close ends s's stream: no more events come; its channel closes and its
// context is released once its reader has taken them (eventQueue.pump).
func (s *batchSeq) close() { s.g.queue.close() }

// takeSlot returns a cache of n tokens for a sequence of a batch of up to
// limit, from a pool (qwen.CachePool) so that a step of the batch runs each
// layer's GDN parts and attention for all its sequences in one launch each:
// a free slot of beside's pool (a slot of the batch's), else of another
// pool of n tokens (the batch then steps with a launch a sequence); a
// batch's first sequence takes a pool with a free slot for each of limit.
// Otherwise a new pool of limit slots, the pools whose slots are all free
// released first.
func (e *Engine) takeSlot(n, limit int, beside *qwen.Cache) (*qwen.Cache, error) {
	var k *qwen.Cache
	err := e.loop.do(func() error {
		free := map[*qwen.CachePool]int{}
		for _, f := range e.freeSlots {
			free[f.Pool()]++
		}
		take := func(ok func(*qwen.Cache) bool) bool {
			i := slices.IndexFunc(e.freeSlots, ok)
			if i >= 0 {
				k = e.freeSlots[i]
				e.freeSlots = slices.Delete(e.freeSlots, i, i+1)
			}
			return i >= 0
		}
		if beside != nil && take(func(f *qwen.Cache) bool { return f.Pool() == beside.Pool() }) {
			return nil
		}
		if take(func(f *qwen.Cache) bool {
			return f.Capacity == n && (beside != nil || free[f.Pool()] >= limit)
		}) {
			return nil
		}
		e.pools = slices.DeleteFunc(e.pools, func(p *qwen.CachePool) bool {
			if free[p] < len(p.Caches()) {
				return false
			}
			e.freeSlots = slices.DeleteFunc(e.freeSlots, func(f *qwen.Cache) bool { return f.Pool() == p })
			e.slots = slices.DeleteFunc(e.slots, func(f *qwen.Cache) bool { return f.Pool() == p })
			p.Free(e.ctx)
			return true
		})
		p, err := e.model.NewCachePool(e.ctx, limit, n)
		if err != nil {
			return err
		}
		e.pools = append(e.pools, p)
		e.slots = append(e.slots, p.Caches()...)
		k = p.Caches()[0]
		e.freeSlots = append(e.freeSlots, p.Caches()[1:]...)
		return e.countSlots()
	})
	return k, err
}

// countSlots sets the memory the batch slots hold: the pools, what their
// caches hold alone (a drafting reply's snapshot for its rollbacks), the
// model's batch record. On the device goroutine.
func (e *Engine) countSlots() error {
	n := e.model.BatchRecordBytes()
	for _, p := range e.pools {
		n += p.Bytes()
	}
	e.slotHeld.Store(n)
	return nil
}

// giveSlot returns k to the free slots, for the next sequence.
func (e *Engine) giveSlot(k *qwen.Cache) {
	_ = e.loop.do(func() error {
		e.freeSlots = append(e.freeSlots, k)
		return nil
	})
}

// Parallel serves Generate's requests in batches: a request joins the batch
// that runs (up to limit replies step together; the others wait for a
// place), each in a cache of contextLength tokens. Prompt reuse serves its
// replies as the engine's Generate's (the same held conversations, restored
// into a reply's slot and kept from it), and speculative decoding drafts its
// replies' guesses (lines or draft trees) in the batch's steps
// (batch_drafts.go). It is the server's --parallel.
type Parallel struct {
	e      *Engine
	n      int
	limit  int
	mu     sync.Mutex
	r      *batchRunner
	tokens atomic.Int64 // sent by its batches, ever (Tokens)
}

// Parallel returns the engine's batched server of up to limit replies at
// once (2 to MaxBatch) in caches of contextLength tokens (0: the engine's),
// refused where the caches would not fit.
func (e *Engine) Parallel(limit, contextLength int) (*Parallel, error) {
	if limit < 2 || limit > MaxBatch {
		return nil, errors.New("parallel replies: want 2 to 16 at once")
	}
	n, err := e.batchContext(limit, contextLength)
	if err != nil {
		return nil, err
	}
	return &Parallel{e: e, n: n, limit: limit}, nil
}

// Generate streams req's reply as Engine.Generate does, stepping it with the
// other replies under way.
func (p *Parallel) Generate(ctx context.Context, req Request) <-chan Event {
	s := newBatchSeq(ctx, p.e, req)
	s.counted = &p.tokens
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.r == nil || !p.r.add(s) {
		p.r = newBatchRunner(p.e, p.n, p.limit)
		p.r.add(s)
		go p.r.run()
	}
	return s.g.out
}

// Tokens is how many tokens its batches have sent, ever (read it twice for
// the replies' rate together).
func (p *Parallel) Tokens() int64 { return p.tokens.Load() }

// Replies is how many replies its batch steps now and how many wait for a
// place (the panel's and the Local server's counts).
func (p *Parallel) Replies() (stepping, waiting int) {
	p.mu.Lock()
	r := p.r
	p.mu.Unlock()
	if r == nil {
		return 0, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.left {
		return 0, 0
	}
	return int(r.stepping.Load()), len(r.queued)
}

// Limit is how many replies its batches step together.
func (p *Parallel) Limit() int { return p.limit }

// ContextLength is the context each reply has.
func (p *Parallel) ContextLength() int { return p.n }

// PromptTokens is the engine's.
func (p *Parallel) PromptTokens(req Request) ([]int32, error) { return p.e.PromptTokens(req) }

// ToolCallPrefix is the engine's.
func (p *Parallel) ToolCallPrefix(name string) (string, error) { return p.e.ToolCallPrefix(name) }

// EncodeImageContext is the engine's: a batched server reads images as the
// engine does (their replies join the batch as the others do).
func (p *Parallel) EncodeImageContext(ctx context.Context, data []byte) (*Image, error) {
	return p.e.EncodeImageContext(ctx, data)
}

// EncodeImagesContext is the engine's.
func (p *Parallel) EncodeImagesContext(ctx context.Context, datas [][]byte) ([]*Image, error) {
	return p.e.EncodeImagesContext(ctx, datas)
}

// ImageTokenCount is the engine's.
func (p *Parallel) ImageTokenCount(data []byte) (int, error) { return p.e.ImageTokenCount(data) }
