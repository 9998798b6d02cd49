// Package engine runs one loaded model: it owns the device goroutine, the model,
// its cache and scratch memory, and offers scoring and streaming generation.
package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"bagel/backend"
	"bagel/ops"
	"bagel/qwen"
	"bagel/safetensors"
	"bagel/switches"
	"bagel/tokenizer"
)

// Options configure Load.
type Options struct {
	Backend       string // auto, cpu, cuda, metal
	ContextLength int    // tokens of KV cache; 0: min(max_position_embeddings, 8192)
	Threads       int    // CPU backend threads; 0: all cores
	// PromptCacheBytes is the device memory for the conversations held for
	// prompt reuse: 0 means 1 GiB, a negative value keeps none; the newest
	// conversation is kept even when it alone is larger.
	PromptCacheBytes int64
	// PrefillChunk is how many prompt tokens one forward takes (0:
	// DefaultPrefillChunk; at most MaxPrefillChunk). A larger chunk gives the
	// prompt GEMMs more tokens per weight tile and takes more scratch memory.
	PrefillChunk int
	// Replies is how many replies the model will decode together (an
	// engine.Parallel of that many; 0 or 1: one at a time). Above 1, on CUDA,
	// the decode GEMVs run on the matrix units (the tiled-gemv switch) unless
	// that switch was chosen: each weight is dequantized once for every
	// reply of a step (H200, 35B-A3B, before the slot pool: 4 replies at 880
	// tok/s summed against 617, 8 at 1,102 against 657; with it and the batch
	// pipeline 1,153 and 1,795), at the cost of a lone reply's speed (402
	// tok/s against 495; docs/batching.md). Above 1 the prompt path also
	// starts at ops.RepliesPromptMinTokens (switch short-prompts-together),
	// so that the replies' short prompts arriving together go in one forward.
	Replies int
	// TokenIDsOnly loads the weights alone: the folder's tokenizer and chat
	// template are not read (bagel score, which takes token ids, runs on a
	// folder whose tokenizer is missing or broken). Generate then needs
	// Request.PromptIDs.
	TokenIDsOnly bool
	// Cancel, when not nil, stops the load when it is closed: between layers
	// while the weights are bound, and before the cache is allocated.
	Cancel <-chan struct{}
	// Progress, when set, is called from the loading goroutine with the fraction
	// done (0..1) and what is being done.
	Progress func(fraction float64, stage string)
}

// DefaultContextLength is used when neither the options nor the config give one.
const DefaultContextLength = 8192

// Engine is one loaded model on one device.
type Engine struct {
	Dir           string
	Config        *qwen.Config
	Backend       string // the backend in use: cpu, cuda or metal
	BackendName   string // the device's description
	BackendReason string // why this backend was chosen

	loop  *deviceLoop
	dev   backend.Device
	ck    *safetensors.Checkpoint
	model *qwen.Model
	cache *qwen.Cache
	// pools hold the batches' caches (slots, one a sequence:
	// batch_runner.go), freeSlots those no sequence holds now, reused by
	// the next; slotHeld their bytes, for a check from any goroutine.
	pools            []*qwen.CachePool
	slots, freeSlots []*qwen.Cache
	slotHeld         atomic.Int64
	scratch          *ops.Arena
	ctx              *ops.Ctx

	closeOnce sync.Once
	// turn admits one user of the cache at a time (a generation, a scoring):
	// the app's chat and the local server share one engine, and a second
	// caller waits for the first to finish, or for its own cancel.
	turn chan struct{}
	// waiting counts the callers blocked on turn: a batch that keeps
	// taking joins hands the turn on when another waits (batchRunner.run).
	waiting atomic.Int32
	// handoffs counts the turns a batch handed on to a waiting caller
	// (batchRunner.serve): tests watch it.
	handoffs atomic.Int64

	tok                   *tokenizer.Tokenizer
	tmpl                  *tokenizer.Template
	tmplErr               error   // why there is no template
	eos                   []int32 // stop tokens
	thinkOpen, thinkClose int32   // <think>, </think> ids, -1 when absent

	// held are the conversations prompt reuse can restore (reuse.go), most
	// recently used first, within promptCacheBytes (0: the default; < 0: none).
	held             []*heldState
	heldCount        atomic.Int64 // len(held) and their bytes, for PromptCache from any goroutine (setHeld)
	heldBytes        atomic.Int64
	promptCacheBytes int64
	prefillChunk     int // tokens per prefill forward
	// promptMin is the loaded plan's ops.Plan.PromptMin, fixed at load, for
	// readers off the device goroutine (whose plan a prompt's forward changes).
	promptMin int
	// filterFallbacks counts the sampled steps whose top-p or min-p cut fell
	// past the device's candidates (read the logits instead): tests watch it.
	filterFallbacks int
}

// take waits for the engine's turn; false when ctx ends first. The turn
// goes to its waiters in the order they came (a channel's blocked senders
// are served first in, first out).
func (e *Engine) take(ctx context.Context) bool {
	e.waiting.Add(1)
	defer e.waiting.Add(-1)
	select {
	case e.turn <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// waitTurn waits for the engine's turn, however long.
func (e *Engine) waitTurn() { e.take(context.Background()) }

// othersWait says whether a caller is waiting for the turn its holder has.
func (e *Engine) othersWait() bool { return e.waiting.Load() > 0 }

// give hands the turn on.
func (e *Engine) give() { <-e.turn }

// PrefillChunk is how many prompt tokens one forward takes.
func (e *Engine) PrefillChunk() int { return e.prefillChunk }

// DefaultPrefillChunk and MaxPrefillChunk bound Options.PrefillChunk. 2048:
// a prompt's experts then see four times the tokens of a 512-token chunk per
// weight tile (H200, 35B-A3B with 256 experts: prefill of 2048 tokens 13.5k →
// 15.7k tok/s, of 8192 13.0k → 15.1k, docs/history/benchmarks-2026-12.md); the scratch a
// forward takes grows with it, a few hundred MB at that model's shapes.
const (
	DefaultPrefillChunk = 2048
	MaxPrefillChunk     = 8192
)

// Load opens the model folder dir and binds it on the chosen backend. Every
// problem with the folder comes back as an error naming the file and what is wrong.
func Load(dir string, opt Options) (*Engine, error) {
	if opt.PrefillChunk < 0 || opt.PrefillChunk > MaxPrefillChunk {
		return nil, fmt.Errorf("prefill chunk must be 0 (the default, %d) to %d tokens, got %d", DefaultPrefillChunk, MaxPrefillChunk, opt.PrefillChunk)
	}
	cfg, ck, err := qwen.Open(dir)
	if err != nil {
		return nil, err
	}
	e := &Engine{Dir: dir, Config: cfg, ck: ck, promptCacheBytes: opt.PromptCacheBytes, prefillChunk: opt.PrefillChunk,
		turn: make(chan struct{}, 1)}
	if e.prefillChunk == 0 {
		e.prefillChunk = DefaultPrefillChunk
	}
	if !opt.TokenIDsOnly {
		if err := e.loadText(); err != nil {
			_ = ck.Close()
			return nil, err
		}
	} else {
		e.thinkOpen, e.thinkClose, e.eos = -1, -1, cfg.EOSTokenIDs
	}
	e.loop = newDeviceLoop()
	n := contextFor(cfg, opt.ContextLength)
	if err := checkContext(cfg, ck, n, opt.Backend); err != nil {
		_ = ck.Close()
		return nil, err
	}
	progress := func(f float64, stage string) {
		if opt.Progress != nil {
			opt.Progress(f, stage)
		}
	}
	progress(0.05, "opening the device")
	err = e.loop.do(func() error {
		dev, kind, reason, err := openDevice(opt.Backend, opt.Threads)
		if err != nil {
			return err
		}
		e.dev, e.Backend, e.BackendName, e.BackendReason = dev, kind, dev.Name(), reason
		e.scratch = ops.NewArena(dev)
		e.ctx = ops.NewCtx(dev, e.scratch)
		e.ctx.Plan = currentPlan() // the switches, read once a load
		if opt.Replies > 1 && kind == "cuda" && !switches.Chosen(SwitchTiledGEMV) {
			e.ctx.Plan.TiledGEMV = true // batched steps: see Options.Replies
		}
		if kind == "cpu" && !switches.Chosen(SwitchShortPromptTiled) {
			// The CPU's tiled kernels are their references, slower than its
			// plain ones: SwitchShortPromptTiled's comment.
			e.ctx.Plan.ShortPromptTiled = false
		}
		if e.model, err = qwen.Load(e.ctx, ck, cfg, func(f float64) error {
			progress(0.1+0.8*f, "binding weights")
			return cancelled(opt.Cancel)
		}); err != nil {
			return err
		}
		e.ctx.Plan.TiledPrompts = e.model.TiledPrompts(e.ctx)
		e.ctx.Plan.RepliesPrompts = opt.Replies > 1 && switches.On(SwitchShortPromptsTogether)
		e.promptMin = e.ctx.Plan.PromptMin()
		if err := cancelled(opt.Cancel); err != nil {
			return err
		}
		if err := prepareKernels(dev, progress); err != nil {
			return err
		}
		progress(0.95, "allocating the cache")
		e.cache, err = e.model.NewCache(e.ctx, n)
		return err
	})
	if err != nil {
		e.Close()
		return nil, err
	}
	progress(1, "ready")
	return e, nil
}

// prepareKernels has a device that readies its kernels on first use
// (backend.Preparer: CUDA compiles them, seconds on the first run) do it while
// the model loads, under its own progress stage, rather than in the first
// reply, whose time to first token would include it.
func prepareKernels(dev backend.Device, progress func(float64, string)) error {
	p, ok := dev.(backend.Preparer)
	if !ok {
		return nil
	}
	progress(0.92, "preparing the GPU kernels (the first run compiles them)")
	if err := p.Prepare(); err != nil {
		return fmt.Errorf("preparing the GPU kernels: %w", err)
	}
	return nil
}

// ErrLoadCancelled is Load's answer when Options.Cancel was closed.
var ErrLoadCancelled = errors.New("loading was cancelled")

func cancelled(c <-chan struct{}) error {
	select {
	case <-c:
		return ErrLoadCancelled
	default:
		return nil
	}
}

// checkContext refuses a context longer than the model's maximum, or one whose
// cache would not fit beside the weights in the backend's memory, before
// anything is allocated: asking the device (or the Go heap) for tens of GB
// fails late, or ends the process.
func checkContext(cfg *qwen.Config, ck *safetensors.Checkpoint, n int, backendName string) error {
	if max := cfg.MaxPositionEmbedding; max > 0 && n > max {
		return fmt.Errorf("a context of %d tokens exceeds the model's maximum of %d (max_position_embeddings)", n, max)
	}
	var weights int64
	for _, f := range ck.Files {
		weights += int64(len(f.Data))
	}
	cache := qwen.CacheBytes(cfg, n)
	if budget := DeviceMemory(backendName); budget.Total > 0 && uint64(weights+cache) > budget.Total {
		return fmt.Errorf("a context of %d tokens needs %.1f GB of cache beside %.1f GB of weights, more than the %.1f GB of %s: choose a shorter context",
			n, float64(cache)/1e9, float64(weights)/1e9, float64(budget.Total)/1e9, budget.Source)
	}
	return nil
}

// Close releases the device, the model and the checkpoint mapping. It is safe to
// call while a generation runs (that generation ends with ErrClosed) and more
// than once.
func (e *Engine) Close() {
	e.closeOnce.Do(func() {
		if e.loop != nil {
			e.loop.stop(func() {
				for _, h := range e.held {
					h.snap.Release(e.ctx)
				}
				e.setHeld(nil)
				if e.cache != nil {
					e.cache.Free(e.ctx)
				}
				for _, p := range e.pools {
					p.Free(e.ctx)
				}
				if e.scratch != nil {
					e.scratch.Release()
				}
				if e.model != nil {
					e.model.Close()
				}
				if e.dev != nil {
					_ = e.dev.Close()
				}
			})
		}
		// The mapping goes last: GPU buffers may wrap it without a copy.
		if e.ck != nil {
			_ = e.ck.Close()
		}
	})
}

// ContextLength is the number of tokens the cache holds.
func (e *Engine) ContextLength() int { return e.cache.Capacity }

// Counters are the device's running dispatch / command-buffer / sync counts.
func (e *Engine) Counters() backend.Counters {
	var c backend.Counters
	_ = e.loop.do(func() error { c = e.dev.Counters(); return nil })
	return c
}

// step runs one forward on the device goroutine: prepare (host writes that
// must precede the forward's launches; may be nil), the model on tokens at the
// cache position, then finish with the logits (f32, the last token's or every
// token's), which reads back what the caller needs. A failure resets the cache,
// whose state is then unknown; the scratch is free again afterwards.
func (e *Engine) step(tokens []int32, all bool, prepare func() error, finish func(logits ops.Tensor) error) error {
	return e.stepWith(func() (ops.Tensor, error) { return e.model.Forward(e.ctx, e.cache, tokens, all) }, prepare, finish)
}

// stepWith is step with the forward given: forward runs the model and
// returns its logits (the decode pipeline's steps embed ids on the device).
func (e *Engine) stepWith(forward func() (ops.Tensor, error), prepare func() error, finish func(logits ops.Tensor) error) error {
	return e.loop.do(func() error { return e.stepHere(forward, prepare, finish) })
}

// stepHere is stepWith's work, called on the device goroutine.
func (e *Engine) stepHere(forward func() (ops.Tensor, error), prepare func() error, finish func(logits ops.Tensor) error) error {
	defer e.scratch.Reset()
	ok := false
	defer func() {
		if !ok {
			_ = e.cache.Reset(e.ctx)
		}
	}()
	if prepare != nil {
		if err := prepare(); err != nil {
			return err
		}
	}
	logits, err := forward()
	if err != nil {
		return err
	}
	err = finish(logits)
	ok = err == nil
	return err
}

// forward returns the logits of the last token, or of all tokens.
func (e *Engine) forward(tokens []int32, all bool) ([]float32, error) {
	var out []float32
	err := e.step(tokens, all, nil, func(logits ops.Tensor) (err error) {
		out, err = ops.ReadF32(e.ctx, logits)
		return err
	})
	return out, err
}

// forwardArgmax is forward for greedy decoding: the device picks the token
// after the last one (the top 1 of its logits) and the host reads back its
// id, logit and the log-sum-exp, 12 bytes instead of the vocabulary's logits;
// a NaN log-sum-exp (a non-finite logit) stops the reply (errNonFinite).
func (e *Engine) forwardArgmax(tokens []int32) (int32, error) {
	var id [1]int32
	err := e.step(tokens, false, nil, e.greedyPicks(id[:]))
	return id[0], err
}

// greedyPicks is a step's finish that reads the device's greedy pick of each
// of len(picks) rows of logits into picks.
func (e *Engine) greedyPicks(picks []int32) func(logits ops.Tensor) error {
	return func(logits ops.Tensor) error {
		rows, err := e.readTopK(logits, len(picks), 1)
		for i := range picks {
			if err == nil {
				picks[i], err = rows[i].greedy()
			}
		}
		return err
	}
}

// resetCache starts a new sequence.
func (e *Engine) resetCache() error {
	return e.loop.do(func() error { return e.cache.Reset(e.ctx) })
}

// Memory is the device memory a loaded model holds, in bytes.
type Memory struct {
	Weights int64 // the checkpoint files bound (mapped or uploaded)
	Cache   int64 // KV cache and GDN states for the context length
	// PromptCache is the memory of the conversations' states held for
	// prompt reuse (PromptCacheConversations of them), within the budget
	// PromptCacheBudget.
	PromptCache, PromptCacheBudget int64
	PromptCacheConversations       int
	// Scratch is the activations' memory the engine holds now: it grows to
	// what the longest step so far took (a full prompt chunk: about 0.4 GB at
	// the 35B-A3B's shapes and 2048 tokens) and stays. 0 before a load, and in
	// the estimates made before one.
	Scratch int64
}

// contextFor is the context length a load of cfg with Options.ContextLength
// n gets: n, or for n ≤ 0 DefaultContextLength capped at the model's maximum.
func contextFor(cfg *qwen.Config, n int) int {
	if n > 0 {
		return n
	}
	n = DefaultContextLength
	if cfg.MaxPositionEmbedding > 0 && cfg.MaxPositionEmbedding < n {
		n = cfg.MaxPositionEmbedding
	}
	return n
}

// MemoryAt is the footprint the loaded model would have with a context length
// of n tokens (0: the default), for the settings' estimate before a reload.
func (e *Engine) MemoryAt(n int) Memory {
	return Memory{Weights: e.model.WeightBytes, Cache: qwen.CacheBytes(e.Config, contextFor(e.Config, n))}
}

// Memory reports the loaded model's footprint.
func (e *Engine) Memory() Memory {
	n, held := e.PromptCache()
	return Memory{Weights: e.model.WeightBytes, Cache: e.cache.Bytes(), Scratch: e.scratch.Held(),
		PromptCache: held, PromptCacheBudget: e.PromptCacheBudget(), PromptCacheConversations: n}
}

// DecodeWeightBytes is what one decode token reads of the weights (the stacked
// experts in the proportion the router picks), for the effective bandwidth.
func (e *Engine) DecodeWeightBytes() int64 { return e.model.DecodeWeightBytes() }

// gpuTime is the device time the backend has measured in total, where it measures
// it (Metal's GPUStartTime/GPUEndTime per command buffer).
func (e *Engine) gpuTime() (time.Duration, bool) {
	c := e.deviceClock()
	return c.busy, c.timed
}

// clock is the device's measured totals at one moment: busy (where timed),
// and the time its queue stood empty waiting for the host (where idleTimed:
// backend.GPUIdleTimer), before a submit and between its units.
type clock struct {
	busy, idleBefore, idleInside time.Duration
	timed, idleTimed             bool
}

// deviceClock reads the device's clock on the device goroutine.
func (e *Engine) deviceClock() clock {
	var c clock
	_ = e.loop.do(func() error {
		c.busy, c.timed = e.deviceTime()
		if m, ok := e.dev.(backend.GPUIdleTimer); ok {
			c.idleBefore, c.idleInside = m.GPUIdle()
			c.idleTimed = true
		}
		return nil
	})
	return c
}
