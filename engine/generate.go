package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"bagel/backend"
	"bagel/drafter"
	"bagel/tokenizer"
)

// Request is one generation: a conversation rendered through the model's chat
// template, or a raw prompt used as is.
type Request struct {
	Messages       []tokenizer.Message
	Prompt         string  // used when Messages is empty
	PromptIDs      []int32 // used as is when set (no template, no tokenizer needed)
	EnableThinking bool
	// Tools are the functions the model may call (JSON objects, OpenAI's
	// tool definitions), listed by the chat template in the system turn.
	Tools []json.RawMessage
	// ReplyPrefix is markup that begins the reply, written after the
	// conversation's generation prompt and read as the model's own tokens
	// (a server forcing a tool call writes "<tool_call>\n<function="). It is
	// not sent back as events: the caller knows it.
	ReplyPrefix string
	// Logprobs puts each reply token's log-probability on its event
	// (Event.Logprobs), with the TopLogprobs likeliest tokens of its position
	// (at most MaxTopLogprobs). The logits are then read to the host every
	// step: no speculation, no pipeline.
	Logprobs    bool
	TopLogprobs int
	MaxTokens   int // 0: until a stop token or the context is full
	Sampling    Sampling
	// IgnoreStop decodes on past end-of-sequence tokens until MaxTokens or the
	// context is full (bench on random weights, which may emit one anywhere).
	IgnoreStop bool
	// NoPromptCache keeps no state of this request's conversation for later
	// turns (a one-off request, such as the app's naming of a chat), so that
	// it does not push a conversation out of the prompt cache.
	NoPromptCache bool
	// Drafter proposes the guesses when speculative decoding is on (the
	// speculative-ngram switch, greedy replies); nil: prompt lookup. Bench
	// passes an OracleDrafter to measure the speed-up when every guess is right.
	Drafter drafter.Drafter
	// DraftLength is the most tokens a speculative step may guess (0:
	// DefaultDraftLength; at most MaxDraftLength). Prompt lookup guesses
	// fewer, or none, while the model keeps rejecting its guesses
	// (draft_budget.go); a Drafter given here guesses this many.
	DraftLength int
	// TreeWidth, 2 or more, has prompt lookup guess draft trees of up to that
	// many branches (drafter.NGramTreeDrafter; greedy replies), verified in
	// one forward each (speculative_tree.go); 0 or 1: one guess a position.
	// At most MaxTreeWidth.
	TreeWidth int
	// PrefillChunk is how many prompt tokens one forward takes for this
	// request (0: Options.PrefillChunk; at most MaxPrefillChunk). The app's
	// setting: a larger chunk reads a long prompt faster (each expert's
	// weights are read once a chunk) and takes more scratch memory.
	PrefillChunk int
	// Images are the prompt's images (EncodeImage), in the order the prompt
	// holds them: the user messages' image parts (Message.Parts), or one
	// image pad token each in PromptIDs, expanded into the image's tokens as
	// the processor does. Prompt reuse tells images apart by their bytes.
	Images []*Image
}

// EventKind tells what an Event carries.
type EventKind int

const (
	EventToken EventKind = iota // one per sampled token: Token, and its Text (may be empty; Thinking marks reasoning)
	EventStats                  // Stats, sent a few times a second and before Done
	EventDone                   // Reason and final Stats
	EventError                  // Err; no Done follows
)

// Done reasons.
const (
	ReasonStop      = "stop"      // an end-of-sequence token
	ReasonLength    = "length"    // MaxTokens reached
	ReasonContext   = "context"   // the context length is full
	ReasonCancelled = "cancelled" // the caller's context was cancelled
)

// Event is one item of a generation's stream.
type Event struct {
	Kind     EventKind
	Text     string
	Thinking bool  // Text is inside <think>…</think>
	Token    int32 // the sampled token id (EventToken; -1 for the final flush of held-back text)
	// Logprobs is the token's log-probability and its position's likeliest
	// tokens (EventToken, when Request.Logprobs).
	Logprobs *TokenLogprobs
	Stats    Stats
	Reason   string
	Err      error
}

// Stats describe a generation so far.
type Stats struct {
	Backend         string
	BackendReason   string        // why this backend was chosen ("auto: cuda available")
	GPUTimePerToken time.Duration // device time per decode token, where the backend measures it (Metal)
	PrefillGPUTime  time.Duration // device time of the prefill (to the first token), where measured
	// GPUIdlePerToken is the time a decode token the device's queue stood
	// empty, waiting for the host, where the backend measures it (CUDA);
	// GPUIdleInsidePerToken, of it, between the units of one submit (graph
	// segments recorded too slowly) rather than before a submit.
	GPUIdlePerToken        time.Duration
	GPUIdleInsidePerToken  time.Duration
	PromptTokens           int
	ReusedPromptTokens     int // from the prompt cache (0 until it exists)
	PrefilledTokens        int // of the prompt in the cache so far, reused included (Stats follow each chunk of a long prompt)
	GeneratedTokens        int
	TimeToFirstToken       time.Duration
	PrefillTokensPerSec    float64
	DecodeTokensPerSec     float64
	KVLength               int
	ContextLength          int
	DispatchesPerToken     float64 // per decode token
	CommandBuffersPerTok   float64
	GraphLaunchesPerTok    float64       // CUDA graph launches (0 where the backend has none)
	GraphNodeUpdatesPerTok float64       // of the replayed graphs' nodes, those whose arguments changed
	Speculative            bool          // drafts were proposed and verified (greedy with speculative-ngram)
	DraftProposed          int           // guesses the drafter proposed
	DraftAccepted          int           // of those, the ones the model kept
	Verifies               int           // speculative steps that verified guesses
	DraftTime              time.Duration // in the drafter, all steps
	VerifyTime             time.Duration // in the steps that verified guesses (draft excluded)
	HostSyncsPerToken      float64
	SampledOnDevice        bool // greedy: the device picked the token, the host read its id only
}

// Generate streams the reply to req. The channel closes after EventDone or
// EventError, and that final event is never dropped: a reader that drains the
// channel gets it however late it comes back. Cancelling ctx stops the
// generation within one decode step with reason "cancelled"; the goroutine
// behind the channel always ends, even when the reader has gone.
func (e *Engine) Generate(ctx context.Context, req Request) <-chan Event {
	// One slot: the generation runs at most one token ahead of the reader, so a
	// cancel takes effect at the next token instead of after a backlog, and
	// after a cancel the final event always has a place to go (send).
	out := make(chan Event, 1)
	go func() {
		defer close(out)
		g := &generation{e: e, ctx: ctx, out: out}
		if !e.take(ctx) { // cancelled while another generation ran
			g.send(Event{Kind: EventDone, Reason: ReasonCancelled})
			return
		}
		defer e.give()
		if err := g.run(req); err != nil {
			g.send(Event{Kind: EventError, Err: err})
		}
	}()
	return out
}

// statsEvery is how often a reply sends its stats while it decodes (the
// panel's live figures).
var statsEvery = 200 * time.Millisecond

type generation struct {
	e   *Engine
	ctx context.Context
	out chan Event // this goroutine is its only sender
	// images lays out the prompt's images (nil without any): the prefill's
	// chunks that hold one run ForwardMultimodal.
	images *imagePrompt
	// queue, for a batched reply, takes its events instead of out: the
	// batch never waits for its reader (batch_stream.go).
	queue *eventQueue
}

// send delivers ev and reports whether the generation should go on. Once the
// caller has cancelled, tokens are no longer delivered, and the final Done or
// Error takes the channel's slot without waiting: an event still in the slot
// is a token made before the cancel and is dropped for it. So the final event
// always reaches a reader that drains the channel, and a reader that has gone
// never blocks the goroutine.
func (g *generation) send(ev Event) bool {
	if g.queue != nil {
		g.queue.push(ev)
		return g.ctx.Err() == nil
	}
	if g.ctx.Err() != nil {
		if ev.Kind == EventDone || ev.Kind == EventError {
			select {
			case <-g.out: // the reader did not take it; the slot is the final event's
			default:
			}
			g.out <- ev // cannot block: the slot is free and no one else sends
		}
		return false
	}
	select {
	case g.out <- ev:
		return true
	case <-g.ctx.Done():
		return g.send(ev)
	}
}

// ToolCallPrefix is how the model's chat template begins a call of the
// function name ("" : of a function the model names), for a reply forced
// to call one (Request.ReplyPrefix).
func (e *Engine) ToolCallPrefix(name string) (string, error) {
	if e.tmpl == nil {
		return "", fmt.Errorf("%s: %v", e.Dir, e.tmplErr)
	}
	return e.tmpl.ToolCallPrefix(name), nil
}

// PromptTokens renders and encodes req as the model will see it.
func (e *Engine) PromptTokens(req Request) ([]int32, error) {
	if len(req.PromptIDs) > 0 {
		for _, id := range req.PromptIDs {
			if id < 0 || int(id) >= e.Config.VocabSize {
				return nil, &PromptError{fmt.Errorf("prompt token id %d is outside the vocabulary (0..%d)", id, e.Config.VocabSize-1)}
			}
		}
		return req.PromptIDs, nil
	}
	if e.tok == nil {
		return nil, fmt.Errorf("%s: no tokenizer.json: this model folder cannot generate text", e.Dir)
	}
	// A raw prompt is the caller's own text, special tokens and all; a
	// conversation's messages are text, and only the template's markers are
	// read as special tokens (EncodePrompt): pasted turn markers forge nothing.
	var ids []int32
	if len(req.Messages) > 0 {
		if e.tmpl == nil {
			return nil, fmt.Errorf("%s: %v", e.Dir, e.tmplErr)
		}
		p, err := e.tmpl.RenderPrompt(req.Messages, tokenizer.RenderOptions{AddGenerationPrompt: true, EnableThinking: req.EnableThinking, Tools: req.Tools})
		if err != nil {
			return nil, &ConversationError{err}
		}
		ids = e.tok.EncodePrompt(p)
		if req.ReplyPrefix != "" {
			ids = append(ids, e.tok.Encode(req.ReplyPrefix)...)
		}
	} else {
		ids = e.tok.Encode(req.Prompt)
	}
	if len(ids) == 0 {
		return nil, &PromptError{errors.New("the prompt is empty")}
	}
	return ids, nil
}

// conversationEnd is where the prompt's conversation ends and the generation
// prompt ("<|im_start|>assistant\n", and the think block the template adds)
// begins: the next turn re-renders everything before it the same way, while
// what follows is re-rendered differently once the reply is in (the reasoning
// is dropped). Prompt reuse keeps its snapshot there. Without a chat
// template, or when the two renderings do not line up, it is the last token.
func (e *Engine) conversationEnd(req Request, prompt []int32) int {
	last := len(prompt) - 1
	if len(req.Messages) == 0 || len(req.PromptIDs) > 0 || e.tmpl == nil {
		return last
	}
	p, err := e.tmpl.RenderPrompt(req.Messages, tokenizer.RenderOptions{AddGenerationPrompt: false, EnableThinking: req.EnableThinking, Tools: req.Tools})
	if err != nil {
		return last
	}
	head := e.tok.EncodePrompt(p)
	if len(head) == 0 || len(head) > last || !slices.Equal(head, prompt[:len(head)]) {
		return last
	}
	return len(head)
}

// errNonFinite stops a reply whose logits hold a NaN or an infinity: sampling
// from them would print garbage (weights are checked at load; this catches
// what goes wrong later, such as an activation that overflows).
var errNonFinite = errors.New("the model produced a non-finite logit (NaN or infinity), so the reply stopped: the weights or the computation are broken")

// ConversationError is a conversation the chat template refuses (no user
// turn, a system turn after the first, tools the template cannot list): the
// caller's to fix.
type ConversationError struct{ Err error }

func (e *ConversationError) Error() string { return e.Err.Error() }
func (e *ConversationError) Unwrap() error { return e.Err }

// PromptError is a prompt the model cannot read (empty, or a token id
// outside the vocabulary): the caller's to fix.
type PromptError struct{ Err error }

func (e *PromptError) Error() string { return e.Err.Error() }
func (e *PromptError) Unwrap() error { return e.Err }

// PromptTooLongError is a prompt that leaves no room in the context for a
// reply (the caller's to fix, so a server answers it as a bad request).
type PromptTooLongError struct{ Tokens, ContextLength int }

func (e *PromptTooLongError) Error() string {
	return fmt.Sprintf("the prompt has %d tokens; the context length is %d: shorten the conversation or raise the context length", e.Tokens, e.ContextLength)
}

// finiteLogits reports logits free of NaN and infinities.
func finiteLogits(v []float32) bool {
	for _, x := range v {
		if x-x != 0 { // NaN or ±Inf: x−x is NaN
			return false
		}
	}
	return true
}

// check refuses a request's settings outside their ranges.
func (e *Engine) check(req Request) error {
	if err := req.Sampling.Validate(); err != nil {
		return err
	}
	if err := checkLogprobs(req); err != nil {
		return err
	}
	switch {
	case req.MaxTokens < 0:
		return fmt.Errorf("max tokens must be ≥ 0, got %d", req.MaxTokens)
	case req.TreeWidth < 0 || req.TreeWidth > MaxTreeWidth:
		return fmt.Errorf("draft tree width must be 0 (no tree) to %d, got %d", MaxTreeWidth, req.TreeWidth)
	case req.DraftLength < 0 || req.DraftLength > MaxDraftLength:
		return fmt.Errorf("draft length must be 0 (the default, %d) to %d, got %d", DefaultDraftLength, MaxDraftLength, req.DraftLength)
	case req.PrefillChunk < 0 || req.PrefillChunk > MaxPrefillChunk:
		return fmt.Errorf("prompt chunk must be 0 (the model's, %d) to %d tokens, got %d", e.prefillChunk, MaxPrefillChunk, req.PrefillChunk)
	}
	return nil
}

// run generates req's reply: the prompt (what the prompt cache holds of it
// reused, the rest prefilled), the decode planned, then the reply's tokens.
func (g *generation) run(req Request) error {
	e := g.e
	if err := e.check(req); err != nil {
		return err
	}
	prompt, err := e.PromptTokens(req)
	if err != nil {
		return err
	}
	keepAt := e.conversationEnd(req, prompt)
	key := prompt // what prompt reuse matches: the ids, images told apart by their bytes
	if g.images, err = e.promptImages(prompt, req.Images); err != nil {
		return err
	} else if g.images != nil {
		keepAt = g.images.expanded(keepAt)
		prompt, key = g.images.ids, g.images.key()
	}
	if req.NoPromptCache {
		keepAt = 0 // prefill's first span then keeps nothing
	}
	if len(prompt) >= e.ContextLength() {
		return &PromptTooLongError{Tokens: len(prompt), ContextLength: e.ContextLength()}
	}
	st := Stats{Backend: e.BackendName, BackendReason: e.BackendReason, PromptTokens: len(prompt), ContextLength: e.ContextLength()}
	if err := e.keepMTP(e.mtpWanted()); err != nil { // before the prompt's forwards
		return err
	}
	start := time.Now()
	prefillGPU0, _ := e.gpuTime()
	reused, err := e.reuse(key)
	if err != nil {
		return err
	}
	st.ReusedPromptTokens, st.PrefilledTokens = reused, reused
	plan := e.planDecode(req, []int32{prompt[len(prompt)-1]})
	st.SampledOnDevice = plan.onDevice
	if plan.pipe != nil {
		// Its stop runs before any return: a step still running would touch
		// the cache after the next generation has taken it.
		defer func() { _ = plan.pipe.stop() }()
	}
	if cancelled, err := g.prefill(prompt, key, reused, keepAt, cmp.Or(req.PrefillChunk, e.prefillChunk), &st); err != nil || cancelled {
		return err
	}
	id, err := plan.pick.next(prompt[len(prompt)-1:])
	if err != nil {
		return err
	}
	prefillTime := time.Since(start)
	if gpu, ok := e.gpuTime(); ok {
		st.PrefillGPUTime = gpu - prefillGPU0
	}
	st.PrefillTokensPerSec = float64(len(prompt)-reused) / prefillTime.Seconds()
	st.KVLength, st.PrefilledTokens = len(prompt), len(prompt)
	st.Speculative = plan.spec != nil
	return g.decode(req, plan, prompt, id, start, &st)
}

// prefill runs the prompt from where the reused state ends: up to keepAt
// (the end of the conversation before the generation prompt), keeps a
// snapshot there for the next turn, then the rest but the last token, whose
// logits are run last (by the decode plan's picker) and give the first reply
// token. true: cancelled (the final event sent).
func (g *generation) prefill(prompt, key []int32, reused, keepAt, chunk int, st *Stats) (bool, error) {
	e := g.e
	for _, span := range [][2]int{{reused, keepAt}, {max(reused, keepAt), len(prompt) - 1}} {
		for i := span[0]; i < span[1]; i += chunk {
			if g.ctx.Err() != nil {
				g.send(Event{Kind: EventDone, Reason: ReasonCancelled, Stats: *st})
				return true, nil
			}
			end := min(i+chunk, span[1])
			if err := g.prefillChunk(prompt, i, end); err != nil {
				return false, err
			}
			st.PrefilledTokens = end
			if len(prompt)-reused > chunk && !g.send(Event{Kind: EventStats, Stats: *st}) {
				g.send(Event{Kind: EventDone, Reason: ReasonCancelled, Stats: *st})
				return true, nil
			}
		}
		if span[1] == keepAt && keepAt > reused {
			if err := e.keepSnapshot(key[:keepAt]); err != nil {
				return false, err
			}
		}
	}
	return false, nil
}

// decode sends the reply from id, its first token (the prompt's last step
// picked it): each turn sends one token and, when none is pending, asks the
// plan for the next (a step, or a speculative batch of them).
func (g *generation) decode(req Request, plan *decodePlan, prompt []int32, id int32, start time.Time, st *Stats) error {
	e := g.e
	thinking := startsThinking(e, prompt)
	var dec *tokenizer.StreamDecoder
	if e.tok != nil {
		dec = e.tok.NewStreamDecoder()
	}
	var pending []int32 // the tokens a step added beyond the one being sent
	context := slices.Clone(prompt)
	startCounters, startClock := e.Counters(), e.deviceClock()
	decodeStart, lastStats := time.Now(), time.Now()
	reason := ""
	for {
		if st.GeneratedTokens == 0 {
			st.TimeToFirstToken = time.Since(start)
			decodeStart, startCounters, startClock = time.Now(), e.Counters(), e.deviceClock()
		}
		st.GeneratedTokens++
		plan.history = append(plan.history, id)
		if e.isEOS(id) && !req.IgnoreStop {
			reason = ReasonStop
			break
		}
		text := ""
		switch {
		case id == e.thinkOpen:
			thinking = true
		case id == e.thinkClose:
			thinking = false
		case dec != nil:
			text = dec.Add(id)
		}
		if !g.send(Event{Kind: EventToken, Text: text, Thinking: thinking, Token: id, Logprobs: plan.logprobs}) {
			reason = ReasonCancelled
			break
		}
		if reason = g.ended(req, st, len(pending)); reason != "" {
			break
		}
		if len(pending) == 0 {
			var err error
			if pending, err = g.advance(req, plan, prompt, &context, id, st); err != nil {
				return err
			}
		}
		id, pending = pending[0], pending[1:]
		if time.Since(lastStats) >= statsEvery {
			g.decodeStats(st, decodeStart, startCounters, startClock)
			g.send(Event{Kind: EventStats, Stats: *st})
			lastStats = time.Now()
		}
	}
	if plan.pipe != nil {
		if err := plan.pipe.stop(); err != nil {
			return err
		}
	}
	if dec != nil {
		if rest := dec.Flush(); rest != "" {
			g.send(Event{Kind: EventToken, Text: rest, Thinking: thinking, Token: -1})
		}
	}
	g.decodeStats(st, decodeStart, startCounters, startClock)
	g.send(Event{Kind: EventDone, Reason: reason, Stats: *st})
	return nil
}

// ended is why the reply ends after the token just sent ("" : it goes on);
// pending are the tokens a speculative step already made after it, which
// are sent before the context counts as full (the step that made them filled
// it: KVLength counts them).
func (g *generation) ended(req Request, st *Stats, pending int) string {
	switch {
	case req.MaxTokens > 0 && st.GeneratedTokens >= req.MaxTokens:
		return ReasonLength
	case st.KVLength >= g.e.ContextLength() && pending == 0:
		return ReasonContext
	case g.ctx.Err() != nil:
		return ReasonCancelled
	}
	return ""
}

// advance runs the model on id, the token just sent, and returns the tokens
// that follow it: a speculative batch's (id and the kept guesses enter the
// cache; context becomes every token so far, what the drafter searches), or
// one step's.
func (g *generation) advance(req Request, plan *decodePlan, prompt []int32, context *[]int32, id int32, st *Stats) ([]int32, error) {
	e := g.e
	if plan.spec != nil && st.KVLength+2 <= e.ContextLength() {
		*context = append((*context)[:len(prompt)], plan.history[1:]...)
		var b batch
		var err error
		room := e.ContextLength() - st.KVLength
		if plan.greedy {
			left := 0
			if req.MaxTokens > 0 {
				left = req.MaxTokens - st.GeneratedTokens
			}
			stop := func(id int32) bool { return e.isEOS(id) && !req.IgnoreStop }
			b, err = plan.spec.steps(*context, id, room, left, stop, func() bool { return g.ctx.Err() != nil })
		} else {
			stepStart := time.Now()
			toks, proposed, accepted, serr := plan.spec.stepSampled(*context, id, room, plan.smp, req.Sampling.TopK, plan.history)
			if err = serr; err == nil {
				b.add(plan.spec, toks, proposed, accepted, time.Since(stepStart))
			}
		}
		if err != nil {
			return nil, err
		}
		st.DraftProposed += b.proposed
		st.DraftAccepted += b.accepted
		st.DraftTime += b.draftTime
		st.Verifies += b.verifies
		st.VerifyTime += b.verifyTime
		st.KVLength += len(b.tokens)
		return b.tokens, nil
	}
	var next int32
	var err error
	if plan.pipe != nil {
		// The step on the token after this one is launched ahead unless the
		// reply is known to end there (its token limit, the context's end).
		ahead := (req.MaxTokens == 0 || st.GeneratedTokens+1 < req.MaxTokens) && st.KVLength+2 <= e.ContextLength()
		next, err = plan.pipe.next(id, ahead)
	} else {
		next, err = plan.pick.next([]int32{id})
	}
	if err != nil {
		return nil, err
	}
	st.KVLength++
	return []int32{next}, nil
}

// decodeStats fills the decode rate and per-token device counts: the decode steps
// are the generated tokens after the first (which came from the prefill).
func (g *generation) decodeStats(st *Stats, decodeStart time.Time, c0 backend.Counters, clock0 clock) {
	steps := st.GeneratedTokens - 1
	if steps <= 0 {
		return
	}
	st.DecodeTokensPerSec = float64(steps) / time.Since(decodeStart).Seconds()
	c := g.e.Counters()
	st.DispatchesPerToken = float64(c.Dispatches-c0.Dispatches) / float64(steps)
	st.CommandBuffersPerTok = float64(c.CommandBuffers-c0.CommandBuffers) / float64(steps)
	st.GraphLaunchesPerTok = float64(c.GraphLaunches-c0.GraphLaunches) / float64(steps)
	st.GraphNodeUpdatesPerTok = float64(c.GraphNodeUpdates-c0.GraphNodeUpdates) / float64(steps)
	st.HostSyncsPerToken = float64(c.HostSyncs-c0.HostSyncs) / float64(steps)
	now := g.e.deviceClock()
	if now.timed {
		st.GPUTimePerToken = (now.busy - clock0.busy) / time.Duration(steps)
	}
	if now.idleTimed {
		st.GPUIdlePerToken = (now.idleBefore + now.idleInside - clock0.idleBefore - clock0.idleInside) / time.Duration(steps)
		st.GPUIdleInsidePerToken = (now.idleInside - clock0.idleInside) / time.Duration(steps)
	}
}

// startsThinking tells whether the prompt leaves the model inside a <think> block
// (templates that open it in the generation prompt).
func startsThinking(e *Engine, prompt []int32) bool {
	for i := len(prompt) - 1; i >= 0 && i >= len(prompt)-8; i-- {
		switch prompt[i] {
		case e.thinkOpen:
			return true
		case e.thinkClose:
			return false
		}
	}
	return false
}

func (e *Engine) isEOS(id int32) bool {
	for _, s := range e.eos {
		if s == id {
			return true
		}
	}
	return false
}

// StatsLine is the one-line summary printed after a generation.
// TokensPerVerify is what a verify yielded on average: its kept guesses and
// the model's own token after them (0 before any verify).
func (s Stats) TokensPerVerify() float64 {
	if s.Verifies == 0 {
		return 0
	}
	return float64(s.DraftAccepted+s.Verifies) / float64(s.Verifies)
}

func (s Stats) StatsLine() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d prompt tokens, %.1f tok/s prefill, TTFT %.0f ms; %d tokens, %.1f tok/s decode; KV %d/%d; %.0f dispatches, %.1f command buffers, %.1f graph launches, %.1f syncs per token; %s",
		s.PromptTokens, s.PrefillTokensPerSec, float64(s.TimeToFirstToken.Microseconds())/1000,
		s.GeneratedTokens, s.DecodeTokensPerSec, s.KVLength, s.ContextLength,
		s.DispatchesPerToken, s.CommandBuffersPerTok, s.GraphLaunchesPerTok, s.HostSyncsPerToken, s.Backend)
	if s.Speculative {
		rate := 0.0
		if s.DraftProposed > 0 {
			rate = 100 * float64(s.DraftAccepted) / float64(s.DraftProposed)
		}
		fmt.Fprintf(&b, ", drafts %d proposed, %d accepted (%.0f%%)", s.DraftProposed, s.DraftAccepted, rate)
		if s.Verifies > 0 {
			fmt.Fprintf(&b, ", %.2f tokens per verify, %.2f ms a verify, %.3f ms drafting a token",
				s.TokensPerVerify(), float64(s.VerifyTime.Microseconds())/1000/float64(s.Verifies),
				float64(s.DraftTime.Microseconds())/1000/float64(max(s.GeneratedTokens, 1)))
		}
	}
	if s.GPUTimePerToken > 0 {
		fmt.Fprintf(&b, ", GPU %.2f ms/token", float64(s.GPUTimePerToken.Microseconds())/1000)
	}
	if s.GraphNodeUpdatesPerTok > 0 {
		fmt.Fprintf(&b, ", %.1f graph nodes updated per token", s.GraphNodeUpdatesPerTok)
	}
	if s.GPUIdlePerToken > 0 {
		fmt.Fprintf(&b, " (idle %.3f ms/token waiting for the host, %.3f of it between graph segments)",
			float64(s.GPUIdlePerToken.Microseconds())/1000, float64(s.GPUIdleInsidePerToken.Microseconds())/1000)
	}
	if s.BackendReason != "" {
		fmt.Fprintf(&b, " (%s)", s.BackendReason)
	}
	return b.String()
}
