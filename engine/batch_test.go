package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"bagel/internal/testmodel"
	"bagel/ops"
	"bagel/qwen"
	"bagel/switches"
)

// batchPrompt is prompt i of a batch test: lengths 9 to 60, so that with a
// chunk of 16 tokens the sequences join the decode steps at different steps.
func batchPrompt(i int) []int32 {
	ids := make([]int32, 9+17*i)
	for j := range ids {
		ids[j] = int32((j*131 + 7*i + 3) % 150000)
	}
	return ids
}

// runBatch runs reqs as one batch and returns each stream's tokens and final event.
func runBatch(t *testing.T, e *Engine, reqs []Request, contextLength int) ([][]int32, []Event) {
	t.Helper()
	streams, err := e.GenerateBatch(context.Background(), reqs, contextLength)
	if err != nil {
		t.Fatal(err)
	}
	return drain(t, streams)
}

// drain reads the streams together (a reader that waits for one stream while
// another's slot is full would stall the batch) and returns their tokens and
// final events.
func drain(t *testing.T, streams []Stream) ([][]int32, []Event) {
	t.Helper()
	ids, done := make([][]int32, len(streams)), make([]Event, len(streams))
	type got struct {
		i  int
		ev Event
	}
	ch := make(chan got)
	for i, s := range streams {
		go func() {
			for ev := range s.Events {
				ch <- got{i, ev}
			}
			ch <- got{i, Event{Kind: -1}}
		}()
	}
	for open := len(streams); open > 0; {
		g := <-ch
		switch g.ev.Kind {
		case -1:
			open--
		case EventToken:
			if g.ev.Token >= 0 {
				ids[g.i] = append(ids[g.i], g.ev.Token)
			}
		case EventDone, EventError:
			done[g.i] = g.ev
		}
	}
	return ids, done
}

// batchEngine loads test model name for a batch test: on the CPU with a
// context of 128 tokens and no prompt reuse, or on GPU backend backendName
// (skipped without its driver).
func batchEngine(t *testing.T, name, backendName string) *Engine {
	t.Helper()
	return batchEngineWith(t, name, backendName, 128)
}

// batchEngineWith is batchEngine with a context of n tokens.
func batchEngineWith(t *testing.T, name, backendName string, n int) *Engine {
	t.Helper()
	if backendName != "cpu" {
		return loadGPU(t, testmodel.Weights(t, name), backendName, n)
	}
	e, err := Load(testmodel.Weights(t, name), Options{Backend: "cpu", ContextLength: n, PromptCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// solo is req's reply generated alone.
func solo(t *testing.T, e *Engine, req Request) []int32 {
	t.Helper()
	req.NoPromptCache = true
	ids, _, _ := collect(t, e.Generate(context.Background(), req))
	return ids
}

// TestBatchEqualsSolo: each greedy reply of a batch of four is its reply
// generated alone, token for token, on both test models and with the step
// GEMVs on the matrix units and not: the sequences join the steps at
// different steps (prompts of 9 to 60 tokens in chunks of 16) and leave at
// different ones (token limits of 5 to 14). And the batch's four sampled
// replies (top-k, top-p, a repetition penalty, temperature alone) are each
// the one its seed gives alone.
func TestBatchEqualsSolo(t *testing.T) {
	withTiledGEMV(t, "batch", func(t *testing.T) { testBatchEqualsSolo(t, "cpu") })
}

// TestGPUBatchEqualsSolo is TestBatchEqualsSolo on each GPU backend: a
// batched step's rows take a plain step's kernels there too.
func TestGPUBatchEqualsSolo(t *testing.T) {
	for _, name := range gpuBackends() {
		withTiledGEMV(t, name, func(t *testing.T) { testBatchEqualsSolo(t, name) })
	}
}

func testBatchEqualsSolo(t *testing.T, backendName string) {
	defer switches.Reset(SwitchDeviceSampling)
	for _, onDevice := range []bool{true, false} {
		// On, a top-k reply is drawn on the device, alone and in a batch
		// (drawRows); off, on the host from the device's candidates.
		if err := switches.Set(SwitchDeviceSampling, onDevice); err != nil {
			t.Fatal(err)
		}
		batchEqualsSolo(t, backendName)
	}
}

func batchEqualsSolo(t *testing.T, backendName string) {
	for _, name := range []string{"tiny-moe", "tiny-dense"} {
		e := batchEngine(t, name, backendName)
		sampled := []Sampling{
			{Temperature: 0.8, TopK: 20, TopP: 1, Seed: 7},
			{Temperature: 1, TopP: 0.9, Seed: 8},
			{Temperature: 0.7, TopK: 5, TopP: 1, RepetitionPenalty: 1.3, Seed: 9},
			{Temperature: 1.2, TopP: 1, Seed: 10},
		}
		for _, mode := range []string{"greedy", "sampled"} {
			var reqs []Request
			for i := range 4 {
				req := Request{PromptIDs: batchPrompt(i), MaxTokens: 5 + 3*i, IgnoreStop: true, PrefillChunk: 16}
				if mode == "sampled" {
					req.Sampling = sampled[i]
				}
				reqs = append(reqs, req)
			}
			got, done := runBatch(t, e, reqs, 96)
			for i, req := range reqs {
				if st := done[i].Stats; st.GeneratedTokens != req.MaxTokens || st.PromptTokens != len(req.PromptIDs) || st.PrefillTokensPerSec <= 0 || st.TimeToFirstToken <= 0 {
					t.Errorf("%s %s: sequence %d's stats %+v", name, mode, i, st)
				}
				if done[i].Kind != EventDone || done[i].Reason != ReasonLength {
					t.Fatalf("%s %s: sequence %d ended %v %q %v", name, mode, i, done[i].Kind, done[i].Reason, done[i].Err)
				}
				if want := solo(t, e, req); !slices.Equal(got[i], want) {
					t.Errorf("%s %s: sequence %d batched %v, alone %v", name, mode, i, got[i], want)
				}
			}
			again, _ := runBatch(t, e, reqs, 96)
			if !slices.EqualFunc(got, again, slices.Equal) {
				t.Errorf("%s %s: the same batch gave other tokens the second time", name, mode)
			}
		}
		e.Close()
	}
}

// TestGPUBatchOfEightEqualsSolo: eight greedy replies decoded together (a
// step of eight rows: the experts' down on moe_down_warp_bf16, which takes
// ops.MoEDownWarpMinTokens rows or more) each equal their reply alone, with
// the experts on their plain kernels and on the matrix units.
func TestGPUBatchOfEightEqualsSolo(t *testing.T) {
	for _, name := range gpuBackends() {
		withTiledGEMV(t, name, func(t *testing.T) {
			e := batchEngineWith(t, "tiny-moe", name, 256)
			defer e.Close()
			var reqs []Request
			for i := range ops.MoEDownWarpMinTokens {
				reqs = append(reqs, Request{PromptIDs: batchPrompt(i), MaxTokens: 6 + i, IgnoreStop: true, PrefillChunk: 16})
			}
			got, done := runBatch(t, e, reqs, 256)
			for i, req := range reqs {
				if done[i].Kind != EventDone || done[i].Reason != ReasonLength {
					t.Fatalf("sequence %d ended %v %q %v", i, done[i].Kind, done[i].Reason, done[i].Err)
				}
				if want := solo(t, e, req); !slices.Equal(got[i], want) {
					t.Errorf("sequence %d batched %v, alone %v", i, got[i], want)
				}
			}
		})
	}
}

// TestBatchCancelOneLeavesTheOthers: a sequence cancelled after its third
// token ends "cancelled" within a step, and the others' replies are theirs
// alone; the slots are reused by the next batch without a byte more.
func TestBatchCancelOneLeavesTheOthers(t *testing.T) {
	e := batchEngine(t, "tiny-moe", "cpu")
	defer e.Close()
	var reqs []Request
	for i := range 3 {
		reqs = append(reqs, Request{PromptIDs: batchPrompt(i), MaxTokens: 12, IgnoreStop: true})
	}
	streams, err := e.GenerateBatch(context.Background(), reqs, 64)
	if err != nil {
		t.Fatal(err)
	}
	var first []int32
	for ev := range streams[1].Events { // the others' backlogs hold their 13 events meanwhile
		if ev.Kind == EventToken {
			if first = append(first, ev.Token); len(first) == 3 {
				streams[1].Cancel()
			}
		}
		if ev.Kind == EventDone && ev.Reason != ReasonCancelled {
			t.Errorf("the cancelled sequence ended %q", ev.Reason)
		}
	}
	others := []Stream{streams[0], streams[2]}
	got, done := drain(t, others)
	for j, i := range []int{0, 2} {
		if done[j].Reason != ReasonLength {
			t.Fatalf("sequence %d ended %q %v", i, done[j].Reason, done[j].Err)
		}
		if want := solo(t, e, reqs[i]); !slices.Equal(got[j], want) {
			t.Errorf("sequence %d beside a cancelled one: %v, alone %v", i, got[j], want)
		}
	}
	if len(first) > 4 {
		t.Errorf("the cancelled sequence sent %d tokens after its third", len(first)-3)
	}
	held := e.slotBytes()
	runBatch(t, e, reqs, 64)
	if held == 0 || e.slotBytes() != held || len(e.slots) != 3 {
		t.Errorf("a second batch of three: %d slots, %d bytes; the first held %d", len(e.slots), e.slotBytes(), held)
	}
}

// TestBatchRefusals: an empty batch, one over MaxBatch and one whose caches
// do not fit are refused with what is wrong; a bad request ends its own
// stream with an error and the others run.
func TestBatchRefusals(t *testing.T) {
	e, err := Load(testmodel.Weights(t, "tiny-dense"), Options{Backend: "cpu", ContextLength: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	many := make([]Request, MaxBatch+1)
	for _, c := range []struct {
		reqs []Request
		n    int
		want string
	}{
		{nil, 0, "1 to 16 replies, got 0"},
		{many, 0, "got 17"},
		{[]Request{{PromptIDs: []int32{1, 2}}}, 1 << 40, "run fewer at once or with a shorter context"},
	} {
		_, err := e.GenerateBatch(context.Background(), c.reqs, c.n)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("batch of %d at %d tokens: error %v, want %q", len(c.reqs), c.n, err, c.want)
		}
	}
	reqs := []Request{
		{PromptIDs: batchPrompt(0), MaxTokens: 4},
		{PromptIDs: batchPrompt(3), MaxTokens: 4}, // 60 tokens: too long for 32
		{PromptIDs: batchPrompt(1), MaxTokens: 4, Sampling: Sampling{Temperature: -1}},
	}
	got, done := runBatch(t, e, reqs, 32)
	if done[0].Kind != EventDone || len(got[0]) != 4 {
		t.Errorf("the good request beside two bad ones: %d tokens, %v %q", len(got[0]), done[0].Err, done[0].Reason)
	}
	for i, want := range map[int]string{1: "context", 2: "temperature"} {
		if done[i].Kind != EventError || !strings.Contains(fmt.Sprint(done[i].Err), want) {
			t.Errorf("request %d: %v %v, want an error about %s", i, done[i].Kind, done[i].Err, want)
		}
	}
}

// TestParallelJoinsARunningReply: a request made while another streams joins
// its steps (Parallel): the short second reply ends before the long first
// one, which a turn after the other would not allow, and each is its reply
// alone; a third request past the limit of two waits for a place, and the
// batch never holds more than two slots.
func TestParallelJoinsARunningReply(t *testing.T) {
	e := batchEngine(t, "tiny-moe", "cpu")
	defer e.Close()
	p, err := e.Parallel(2, 96)
	if err != nil {
		t.Fatal(err)
	}
	reqs := []Request{
		{PromptIDs: batchPrompt(0), MaxTokens: 40, IgnoreStop: true},
		{PromptIDs: batchPrompt(1), MaxTokens: 6, IgnoreStop: true},
		{PromptIDs: batchPrompt(2), MaxTokens: 6, IgnoreStop: true},
	}
	type reply struct {
		ids []int32
		end time.Time
	}
	replies := make([]chan reply, len(reqs))
	read := func(i int, events <-chan Event, started chan<- struct{}) {
		var r reply
		for ev := range events {
			if ev.Kind == EventToken {
				if r.ids = append(r.ids, ev.Token); len(r.ids) == 3 && started != nil {
					close(started)
				}
			}
			if ev.Kind == EventError {
				t.Errorf("reply %d: %v", i, ev.Err)
			}
		}
		r.end = time.Now()
		replies[i] <- r
	}
	for i := range replies {
		replies[i] = make(chan reply, 1)
	}
	started := make(chan struct{})
	go read(0, p.Generate(context.Background(), reqs[0]), started)
	<-started
	go read(1, p.Generate(context.Background(), reqs[1]), nil)
	go read(2, p.Generate(context.Background(), reqs[2]), nil)
	got := []reply{<-replies[0], <-replies[1], <-replies[2]}
	if !got[1].end.Before(got[0].end) {
		t.Errorf("the reply that joined ended after the long one: it did not step beside it")
	}
	for i, req := range reqs {
		if want := solo(t, e, req); !slices.Equal(got[i].ids, want) {
			t.Errorf("reply %d: %v, alone %v", i, got[i].ids, want)
		}
	}
	if len(e.slots) != 2 {
		t.Errorf("%d slots for a limit of 2", len(e.slots))
	}
	if _, err := e.Parallel(1, 0); err == nil {
		t.Error("Parallel(1) was not refused")
	}
}

// TestParallelCancelWhileWaiting: a request cancelled while its batch waits
// for the engine's turn (another caller holds it) ends "cancelled" at once.
func TestParallelCancelWhileWaiting(t *testing.T) {
	e, err := Load(testmodel.Weights(t, "tiny-dense"), Options{Backend: "cpu", ContextLength: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	p, err := e.Parallel(2, 32)
	if err != nil {
		t.Fatal(err)
	}
	if !e.take(context.Background()) {
		t.Fatal("no turn")
	}
	ctx, cancel := context.WithCancel(context.Background())
	events := p.Generate(ctx, Request{PromptIDs: batchPrompt(0), MaxTokens: 4})
	cancel()
	select {
	case ev := <-events:
		if ev.Kind != EventDone || ev.Reason != ReasonCancelled {
			t.Errorf("first event %v %q, want done: cancelled", ev.Kind, ev.Reason)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled request waited for the turn")
	}
	e.give()
	if ids, _, done := collect(t, p.Generate(context.Background(), Request{PromptIDs: batchPrompt(0), MaxTokens: 4})); len(ids) != 4 || done.Reason != ReasonLength {
		t.Errorf("the next request: %d tokens, %q", len(ids), done.Reason)
	}
}

// gateDrafter guesses nothing; its first call tells entered and waits for
// open: a test holds a batch's runner there.
type gateDrafter struct {
	entered, open chan struct{}
	once          *sync.Once
}

func newGateDrafter() gateDrafter {
	return gateDrafter{entered: make(chan struct{}), open: make(chan struct{}), once: &sync.Once{}}
}

func (d gateDrafter) Draft([]int32, int) []int32 {
	d.once.Do(func() { close(d.entered); <-d.open })
	return nil
}

// TestParallelHandsOnTheTurn: a caller waiting for the engine's turn (a
// lone Generate: a scoring, a reply of another engine user) while a batch
// keeps taking joins gets it once the batch's replies under way end, before
// the requests queued behind them start; each reply is its reply alone.
func TestParallelHandsOnTheTurn(t *testing.T) {
	defer switches.Reset(SwitchSpeculative)
	if err := switches.Set(SwitchSpeculative, true); err != nil { // (the gate is a drafter)
		t.Fatal(err)
	}
	e := batchEngine(t, "tiny-moe", "cpu")
	defer e.Close()
	p, err := e.Parallel(2, 96)
	if err != nil {
		t.Fatal(err)
	}
	long := func(i int) Request { return Request{PromptIDs: batchPrompt(i), MaxTokens: 40, IgnoreStop: true} }
	short := func(i int) Request { return Request{PromptIDs: batchPrompt(i), MaxTokens: 4, IgnoreStop: true} }
	gate := newGateDrafter()
	gated := long(0)
	gated.Drafter = gate
	running := []<-chan Event{p.Generate(context.Background(), long(1)), p.Generate(context.Background(), gated)}
	<-gate.entered // both replies under way, the runner held
	var queued []<-chan Event
	for i := range 3 {
		queued = append(queued, p.Generate(context.Background(), short(2+i)))
	}
	lone := e.Generate(context.Background(), short(5))
	for deadline := time.Now().Add(10 * time.Second); !e.othersWait(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the lone Generate never waited for the turn")
		}
	}
	close(gate.open)
	var order atomic.Int64
	type reply struct {
		ids        []int32
		first, end int64 // order of the first token and of the end
	}
	read := func(events <-chan Event, out chan<- reply) {
		var r reply
		for ev := range events {
			switch {
			case ev.Kind == EventToken && ev.Token >= 0:
				if r.ids = append(r.ids, ev.Token); len(r.ids) == 1 {
					r.first = order.Add(1)
				}
			case ev.Kind == EventError:
				t.Error(ev.Err)
			}
		}
		r.end = order.Add(1)
		out <- r
	}
	all := append(append(running, queued...), lone)
	outs := make([]chan reply, len(all))
	for i, events := range all {
		outs[i] = make(chan reply, 1)
		go read(events, outs[i])
	}
	got := make([]reply, len(all))
	for i := range outs {
		got[i] = <-outs[i]
	}
	alone := got[len(got)-1]
	for i, r := range got[2 : len(got)-1] {
		if r.first < alone.end {
			t.Errorf("queued request %d started before the lone reply waiting for the turn ended", i)
		}
	}
	if want := solo(t, e, short(5)); !slices.Equal(alone.ids, want) {
		t.Errorf("the lone reply: %v, alone %v", alone.ids, want)
	}
	for i, r := range got[2 : len(got)-1] {
		if want := solo(t, e, short(2+i)); !slices.Equal(r.ids, want) {
			t.Errorf("queued request %d: %v, alone %v", i, r.ids, want)
		}
	}
}

// TestStalledReaderStallsNoOne: a reply whose reader stops reading (a
// client paused, a connection stalled) does not stall the replies stepping
// beside it: they end while it is unread, and its events then all reach
// its reader, in order, its reply whole; cancelled unread, it ends
// "cancelled" with its tokens dropped.
func TestStalledReaderStallsNoOne(t *testing.T) {
	e := batchEngine(t, "tiny-moe", "cpu")
	defer e.Close()
	p, err := e.Parallel(3, 128)
	if err != nil {
		t.Fatal(err)
	}
	req := func(i int) Request { return Request{PromptIDs: batchPrompt(i), MaxTokens: 100, IgnoreStop: true} }
	stalled := p.Generate(context.Background(), req(0))
	ctx, cancel := context.WithCancel(context.Background())
	dropped := p.Generate(ctx, req(1))
	cancel() // unread
	reading := make(chan []int32)
	go func() {
		ids, _, _ := collect(t, p.Generate(context.Background(), req(2)))
		reading <- ids
	}()
	select {
	case ids := <-reading:
		if want := solo(t, e, req(2)); !slices.Equal(ids, want) {
			t.Errorf("the reply read: %v, alone %v", ids, want)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("a reply whose reader reads waited for one whose reader does not")
	}
	ids, _, done := collect(t, stalled)
	if want := solo(t, e, req(0)); !slices.Equal(ids, want) || done.Reason != ReasonLength {
		t.Errorf("the stalled reply, read at last: %d tokens (%q), alone %d", len(ids), done.Reason, len(want))
	}
	var n int
	var last Event
	for ev := range dropped {
		if ev.Kind == EventToken {
			n++
		}
		last = ev
	}
	if last.Kind != EventDone || last.Reason != ReasonCancelled || n > streamBuffer {
		t.Errorf("the reply cancelled unread: %d tokens, then %v %q; want at most %d, then cancelled", n, last.Kind, last.Reason, streamBuffer)
	}
}

// TestParallelCancelWhileQueued: a request cancelled while it waits for a
// place in a running batch (the app's Stop on a chat behind others, a client
// that left) ends "cancelled" at once, not when a place frees; the replies
// stepping go on.
func TestParallelCancelWhileQueued(t *testing.T) {
	e := batchEngine(t, "tiny-moe", "cpu")
	defer e.Close()
	p, err := e.Parallel(2, 128)
	if err != nil {
		t.Fatal(err)
	}
	long := func(i int) Request { return Request{PromptIDs: batchPrompt(i), MaxTokens: 100, IgnoreStop: true} }
	var order atomic.Int64
	ended := make([]int64, 3)
	var wg sync.WaitGroup
	read := func(i int, events <-chan Event, started chan<- struct{}) {
		defer wg.Done()
		var last Event
		for ev := range events {
			if started != nil && ev.Kind == EventToken {
				close(started)
				started = nil
			}
			last = ev
		}
		ended[i] = order.Add(1)
		if want := []string{ReasonLength, ReasonLength, ReasonCancelled}[i]; last.Kind != EventDone || last.Reason != want {
			t.Errorf("reply %d ended %v %q, want %q", i, last.Kind, last.Reason, want)
		}
	}
	for i := range 2 {
		started := make(chan struct{})
		wg.Add(1)
		go read(i, p.Generate(context.Background(), long(i)), started)
		<-started
	}
	ctx, cancel := context.WithCancel(context.Background())
	wg.Add(1)
	go read(2, p.Generate(ctx, long(2)), nil)
	time.Sleep(5 * time.Millisecond) // queued behind the two
	cancel()
	wg.Wait()
	if ended[2] != 1 {
		t.Errorf("the queued request cancelled ended %d of 3: it waited for a place", ended[2])
	}
}

// TestTwoBatchesTakeTurns: two batches of one engine (the app's chats and
// a Local server allowed more replies at once than they) take the engine's
// turn in turn, each admitting its waiting replies when it gets it, and
// every reply is its reply alone: the turn changes hands a few times, not
// back and forth without a step (each handing it on at once to the other,
// which waits).
func TestTwoBatchesTakeTurns(t *testing.T) {
	e := batchEngine(t, "tiny-moe", "cpu")
	defer e.Close()
	batches := make([]*Parallel, 2)
	for i := range batches {
		var err error
		if batches[i], err = e.Parallel(2, 96); err != nil {
			t.Fatal(err)
		}
	}
	reqs := make([]Request, 8)
	got := make([][]int32, len(reqs))
	var wg sync.WaitGroup
	for i := range reqs {
		reqs[i] = Request{PromptIDs: batchPrompt(i % 4), MaxTokens: 10 + i, IgnoreStop: true}
		wg.Go(func() { got[i], _, _ = collect(t, batches[i%2].Generate(context.Background(), reqs[i])) })
	}
	wg.Wait()
	for i, req := range reqs {
		if want := solo(t, e, req); !slices.Equal(got[i], want) {
			t.Errorf("reply %d: %v, alone %v", i, got[i], want)
		}
	}
	if n := e.handoffs.Load(); n > int64(len(reqs)) {
		t.Errorf("the turn was handed on %d times for %d replies", n, len(reqs))
	}
}

// TestParallelReusesPrompts: a batched reply keeps its conversation's state
// for the next turn, as a plain reply does: the next turn (batched) restores
// it and reads only the rest of its prompt, and its reply is the one a
// reading of the whole prompt gives; a plain reply (Generate) restores a
// state a batched one kept.
func TestParallelReusesPrompts(t *testing.T) {
	e, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	p, err := e.Parallel(2, 128)
	if err != nil {
		t.Fatal(err)
	}
	first := batchPrompt(2) // 43 tokens
	ids, _, done := collect(t, p.Generate(context.Background(), Request{PromptIDs: first, MaxTokens: 4, IgnoreStop: true}))
	if done.Stats.ReusedPromptTokens != 0 {
		t.Fatalf("the first turn reused %d tokens of nothing", done.Stats.ReusedPromptTokens)
	}
	second := append(append(append([]int32{}, first...), ids...), 11, 22, 33)
	req := Request{PromptIDs: second, MaxTokens: 6, IgnoreStop: true}
	got, _, done := collect(t, p.Generate(context.Background(), req))
	if done.Stats.ReusedPromptTokens != len(first)-1 {
		t.Errorf("the second turn reused %d tokens, want %d (the first's prompt but its last)", done.Stats.ReusedPromptTokens, len(first)-1)
	}
	if err := switches.Set(SwitchPromptReuse, false); err != nil { // the whole prompt read
		t.Fatal(err)
	}
	want := solo(t, e, req)
	switches.Reset(SwitchPromptReuse)
	if !slices.Equal(got, want) {
		t.Errorf("the second turn, its prompt reused: %v; read whole: %v", got, want)
	}
	third := append(append(append([]int32{}, second...), got...), 44)
	_, _, done = collect(t, e.Generate(context.Background(), Request{PromptIDs: third, MaxTokens: 2, IgnoreStop: true}))
	if done.Stats.ReusedPromptTokens < len(second)-1 {
		t.Errorf("a plain reply after the batched turns reused %d tokens, want at least %d", done.Stats.ReusedPromptTokens, len(second)-1)
	}
}

// TestRepliesTakeTiledGEMV: a model loaded for several replies at once runs
// its decode GEMVs on the matrix units on CUDA, unless the tiled-gemv switch
// was chosen (either way); one reply, the CPU and Metal keep the switch's
// default.
func TestRepliesTakeTiledGEMV(t *testing.T) {
	dir := testmodel.Weights(t, "tiny-moe")
	for _, backendName := range append([]string{"cpu"}, gpuBackends()...) {
		t.Run(backendName, func(t *testing.T) { testRepliesTakeTiledGEMV(t, dir, backendName) })
	}
}

func testRepliesTakeTiledGEMV(t *testing.T, dir, backendName string) {
	load := func(replies int) *Engine {
		e, err := Load(dir, Options{Backend: backendName, ContextLength: 64, Replies: replies})
		if err != nil {
			if backendName != "cpu" && os.Getenv("BAGEL_REQUIRE_GPU") == "" && strings.Contains(err.Error(), "no ") {
				t.Skipf("%s unavailable: %v", backendName, err)
			}
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		return e
	}
	want := backendName == "cuda"
	if got := load(4).TiledGEMV(); got != want {
		t.Errorf("%s, 4 replies: tiled GEMVs %v, want %v", backendName, got, want)
	}
	if load(1).TiledGEMV() {
		t.Errorf("%s, one reply: tiled GEMVs, want the switch's default (off)", backendName)
	}
	if err := switches.Set(SwitchTiledGEMV, false); err != nil {
		t.Fatal(err)
	}
	if load(4).TiledGEMV() {
		t.Errorf("%s, 4 replies with tiled-gemv chosen off: tiled GEMVs", backendName)
	}
	switches.Reset(SwitchTiledGEMV)
}

// TestParallelCountsItsReplies: Replies says how many replies a Parallel
// steps and how many wait past its limit, and none once they have ended.
func TestParallelCountsItsReplies(t *testing.T) {
	e := batchEngine(t, "tiny-moe", "cpu")
	defer e.Close()
	p, err := e.Parallel(2, 96)
	if err != nil {
		t.Fatal(err)
	}
	if s, w := p.Replies(); s != 0 || w != 0 {
		t.Fatalf("before any request: %d stepping, %d waiting", s, w)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var done sync.WaitGroup
	for i := range 3 {
		events := p.Generate(ctx, Request{PromptIDs: batchPrompt(i), MaxTokens: 80, IgnoreStop: true})
		done.Go(func() {
			for range events {
			}
		})
	}
	waitFor := func(what string, ok func(s, w int) bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
			if s, w := p.Replies(); ok(s, w) {
				return
			} else if time.Now().After(deadline) {
				t.Fatalf("%s: still %d stepping, %d waiting", what, s, w)
			}
		}
	}
	waitFor("three replies at a limit of two", func(s, w int) bool { return s == 2 && w == 1 })
	cancel()
	done.Wait()
	waitFor("after they ended", func(s, w int) bool { return s == 0 && w == 0 })
}

// longPrompt is a prompt of n tokens, i telling prompts apart.
func longPrompt(i, n int) []int32 {
	ids := make([]int32, n)
	for j := range ids {
		ids[j] = int32((j*97 + 31*i + 5) % 1000)
	}
	return ids
}

// TestPooledStepEqualsSeparateCaches: a batched step of sequences whose
// caches share a pool (each layer's conv, rule, attention preamble and
// attention one launch for all, the attention's split rows and plain rows
// apart) gives the logits, bit for bit, of the same step over caches of
// their own (launches a sequence), step after step, rows short and long;
// the pool's idle slot is left as it was. On the CPU here and on each GPU backend in
// TestGPUPooledStepEqualsSeparateCaches.
func TestPooledStepEqualsSeparateCaches(t *testing.T) {
	testPooledStep(t, "cpu")
	// The long rows' split attention off the matrix units (Metal's).
	defer switches.Reset(SwitchSplitKVTiled)
	if err := switches.Set(SwitchSplitKVTiled, false); err != nil {
		t.Fatal(err)
	}
	testPooledStep(t, "cpu")
}

func TestGPUPooledStepEqualsSeparateCaches(t *testing.T) {
	for _, name := range gpuBackends() {
		t.Run(name, func(t *testing.T) { testPooledStep(t, name) })
	}
}

func testPooledStep(t *testing.T, backendName string) {
	for _, name := range []string{"tiny-moe", "tiny-dense"} {
		e := batchEngine(t, name, backendName)
		err := e.loop.do(func() error {
			pool, err := e.model.NewCachePool(e.ctx, 4, 192)
			if err != nil {
				return err
			}
			defer pool.Free(e.ctx)
			pooled := []*qwen.Cache{pool.Caches()[2], pool.Caches()[0], pool.Caches()[3]} // slot 1 idle
			// Short and long rows: past 128 keys a step's attention splits
			// (the third row from its first step, the second from its fourth).
			lengths := []int{5, 124, 140}
			var own []*qwen.Cache
			for i := range pooled {
				k, err := e.model.NewCache(e.ctx, 192)
				if err != nil {
					return err
				}
				defer k.Free(e.ctx)
				own = append(own, k)
				for _, kk := range []*qwen.Cache{pooled[i], k} {
					if _, err := e.model.Forward(e.ctx, kk, longPrompt(i, lengths[i]), false); err != nil {
						return err
					}
				}
			}
			// Slot 1 holds a prompt the steps must leave as it is: a cache of
			// its own beside it holds the same.
			idle := pool.Caches()[1]
			idleOwn, err := e.model.NewCache(e.ctx, 192)
			if err != nil {
				return err
			}
			defer idleOwn.Free(e.ctx)
			for _, kk := range []*qwen.Cache{idle, idleOwn} {
				if _, err := e.model.Forward(e.ctx, kk, batchPrompt(5)[:9], false); err != nil {
					return err
				}
			}
			tokens := []int32{11, 12, 13}
			for step := range 6 {
				var got [2][]byte
				for j, caches := range [][]*qwen.Cache{pooled, own} {
					logits, err := e.model.ForwardBatch(e.ctx, caches, tokens)
					if err != nil {
						return err
					}
					if got[j], err = ops.ReadBytes(e.ctx, logits); err != nil {
						return err
					}
				}
				if !bytes.Equal(got[0], got[1]) {
					return fmt.Errorf("step %d: the pooled step's logits differ from the separate caches'", step)
				}
				v := e.Config.VocabSize
				for i := range tokens {
					row := make([]float32, v)
					for j := range row {
						row[j] = math.Float32frombits(binary.LittleEndian.Uint32(got[0][4*(i*v+j):]))
					}
					tokens[i] = int32(argmax(row))
				}
			}
			var next [2][]byte
			for j, kk := range []*qwen.Cache{idle, idleOwn} {
				logits, err := e.model.Forward(e.ctx, kk, []int32{42}, false)
				if err != nil {
					return err
				}
				if next[j], err = ops.ReadBytes(e.ctx, logits); err != nil {
					return err
				}
			}
			if !bytes.Equal(next[0], next[1]) {
				return fmt.Errorf("the idle slot's state moved under the others' steps")
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s on %s: %v", name, backendName, err)
		}
		e.Close()
	}
}

// TestPipelinedBatchFillsItsContext: greedy replies run pipelined to their
// context's end send the tokens a lone reply sends there: the last one
// picked from the context's last position (before, a reply ended a token
// early: it counted the step launched ahead as held), their caches full.
func TestPipelinedBatchFillsItsContext(t *testing.T) {
	e := batchEngine(t, "tiny-moe", "cpu")
	defer e.Close()
	if !e.CanPipeline() {
		t.Skip("no pipeline on this backend")
	}
	reqs := []Request{
		{PromptIDs: batchPrompt(2), MaxTokens: 200, IgnoreStop: true},
		{PromptIDs: batchPrompt(0), MaxTokens: 200, IgnoreStop: true},
	}
	got, done := runBatch(t, e, reqs, 128)
	for i, req := range reqs {
		want := solo(t, e, req)
		if !slices.Equal(got[i], want) || done[i].Reason != ReasonContext || done[i].Stats.KVLength != 128 {
			t.Errorf("reply %d: %d tokens, %q, KV %d; alone %d tokens", i, len(got[i]), done[i].Reason, done[i].Stats.KVLength, len(want))
		}
	}
}

// TestPipelinedBatchEndsARowAtItsStop: in a batch of greedy replies run one
// step ahead of the host, a reply that meets its end-of-text ends there (the
// step launched past it dropped for it) and the others go on, each reply
// equal to the one it gets alone.
func TestPipelinedBatchEndsARowAtItsStop(t *testing.T) {
	e := batchEngine(t, "tiny-moe", "cpu")
	defer e.Close()
	var reqs []Request
	for i := range 3 {
		reqs = append(reqs, Request{PromptIDs: batchPrompt(i)[:9], MaxTokens: 12, IgnoreStop: true})
	}
	// The first reply's fourth token becomes an end-of-text.
	first := solo(t, e, reqs[0])
	e.eos = append(e.eos, first[3])
	for i := range reqs {
		reqs[i].IgnoreStop = false
	}
	got, done := runBatch(t, e, reqs, 96)
	for i, req := range reqs {
		if want := solo(t, e, req); !slices.Equal(got[i], want) {
			t.Errorf("reply %d: batched %v, alone %v", i, got[i], want)
		}
	}
	if done[0].Reason != ReasonStop || len(got[0]) != 3 {
		t.Errorf("the first reply ended %q after %d tokens %v, want a stop after 3", done[0].Reason, len(got[0]), got[0])
	}
}

// TestBatchesShareAPool: a batch takes its slots from one pool (its steps
// then run each layer's GDN and attention once for all its replies): a
// larger batch replaces a pool whose slots are all free with one of its
// size, and a smaller one after it takes slots of that pool, the memory held
// never more than the largest batch's.
func TestBatchesShareAPool(t *testing.T) {
	e := batchEngine(t, "tiny-moe", "cpu")
	defer e.Close()
	var held int64
	for _, c := range []struct{ n, pool int }{{3, 3}, {5, 5}, {2, 5}} {
		n := c.n
		var reqs []Request
		for i := range n {
			reqs = append(reqs, Request{PromptIDs: batchPrompt(i)[:9], MaxTokens: 3, IgnoreStop: true})
		}
		_, done := runBatch(t, e, reqs, 64)
		for i, d := range done {
			if d.Kind != EventDone {
				t.Fatalf("a batch of %d: reply %d ended %v %v", n, i, d.Kind, d.Err)
			}
		}
		if len(e.pools) != 1 {
			t.Fatalf("after a batch of %d: %d pools", n, len(e.pools))
		}
		if n == 5 {
			held = e.slotBytes()
		}
		if got := len(e.pools[0].Caches()); got != c.pool {
			t.Errorf("after a batch of %d: a pool of %d slots, want %d", n, got, c.pool)
		}
	}
	if e.slotBytes() != held || len(e.slots) != 5 {
		t.Errorf("after the batch of 2: %d slots, %d bytes; the batch of 5 held %d", len(e.slots), e.slotBytes(), held)
	}
}

// TestPipelinedBatchDrawsAsAlone: a batch of replies drawn on the device
// (a top-k, no penalty) beside a greedy one runs pipelined, each draw
// taking its generator's uniforms in its steps' order: every reply is the
// one its seed gives alone.
func TestPipelinedBatchDrawsAsAlone(t *testing.T) {
	e := batchEngine(t, "tiny-moe", "cpu")
	defer e.Close()
	reqs := []Request{
		{Sampling: Sampling{Temperature: 0.9, TopK: 20, TopP: 1, Seed: 3}},
		{},
		{Sampling: Sampling{Temperature: 1.1, TopK: 8, TopP: 0.8, Seed: 4}},
	}
	var step []*batchSeq
	for i := range reqs {
		reqs[i].PromptIDs, reqs[i].MaxTokens, reqs[i].IgnoreStop = batchPrompt(i)[:9], 12, true
		step = append(step, &batchSeq{req: reqs[i], smp: newSampler(reqs[i].Sampling), draw: drawsOnDevice(reqs[i].Sampling)})
	}
	if !e.pipelines(step) {
		t.Fatal("a batch of device draws and a greedy reply does not pipeline")
	}
	got, _ := runBatch(t, e, reqs, 96)
	for i, req := range reqs {
		if want := solo(t, e, req); !slices.Equal(got[i], want) {
			t.Errorf("reply %d: batched %v, alone %v", i, got[i], want)
		}
	}
}

// TestBatchSendsLiveStats: a batched reply sends its stats as it goes, as
// Generate's do (the panel's live figures): its long prompt's progress
// chunk by chunk, then its tokens, KV length and rate while it decodes.
func TestBatchSendsLiveStats(t *testing.T) {
	defer func(d time.Duration) { statsEvery = d }(statsEvery)
	statsEvery = 0
	e := batchEngine(t, "tiny-moe", "cpu")
	defer e.Close()
	reqs := []Request{
		{PromptIDs: batchPrompt(3), MaxTokens: 6, IgnoreStop: true, PrefillChunk: 16},
		{PromptIDs: batchPrompt(0), MaxTokens: 6, IgnoreStop: true, PrefillChunk: 16},
	}
	streams, err := e.GenerateBatch(context.Background(), reqs, 96)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range streams { // each stream's backlog holds its whole reply: read them in turn
		var prefill, decode []Stats
		for ev := range s.Events {
			if ev.Kind != EventStats {
				continue
			}
			if ev.Stats.GeneratedTokens == 0 {
				prefill = append(prefill, ev.Stats)
			} else {
				decode = append(decode, ev.Stats)
			}
		}
		if i == 0 && (len(prefill) < 2 || prefill[0].PrefilledTokens >= prefill[len(prefill)-1].PrefilledTokens) {
			t.Errorf("the long prompt's progress: %d stats %+v", len(prefill), prefill)
		}
		if len(decode) < 3 {
			t.Fatalf("reply %d sent %d stats while it decoded", i, len(decode))
		}
		last := decode[len(decode)-1]
		if last.KVLength <= decode[0].KVLength || last.GeneratedTokens <= decode[0].GeneratedTokens || last.DecodeTokensPerSec <= 0 {
			t.Errorf("reply %d's live stats do not move: first %+v, last %+v", i, decode[0], last)
		}
	}
}

// TestCloseDuringBatch: unloading the model while a batch steps (the app
// switching models with chats answering: one drafting, one waiting for a
// place) ends every stream, stepping or queued, with ErrClosed, never a
// panic or a stream left open without a final event (a queued one was),
// and leaves no goroutine; a request or a batch after the close ends with
// ErrClosed too.
func TestCloseDuringBatch(t *testing.T) {
	defer switches.Reset(SwitchSpeculative)
	if err := switches.Set(SwitchSpeculative, true); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	e := batchEngine(t, "tiny-moe", "cpu")
	p, err := e.Parallel(2, 96)
	if err != nil {
		t.Fatal(err)
	}
	long := Request{PromptIDs: batchPrompt(0), MaxTokens: 80, IgnoreStop: true}
	drafting := Request{PromptIDs: batchPrompt(1), MaxTokens: 80, IgnoreStop: true, TreeWidth: 2}
	streams := []<-chan Event{p.Generate(context.Background(), long), p.Generate(context.Background(), drafting),
		p.Generate(context.Background(), long)}
	if ev := <-streams[0]; ev.Kind != EventToken {
		t.Fatalf("first event %v", ev.Kind)
	}
	e.Close()
	for i, events := range append(streams, p.Generate(context.Background(), long)) {
		var last Event
		for ev := range events {
			last = ev
		}
		if last.Kind != EventError || !errors.Is(last.Err, ErrClosed) {
			t.Errorf("stream %d ended with %+v, want ErrClosed", i, last)
		}
	}
	if streams, err := e.GenerateBatch(context.Background(), []Request{long}, 96); err == nil {
		if _, done := drain(t, streams); done[0].Kind != EventError || !errors.Is(done[0].Err, ErrClosed) {
			t.Errorf("a batch after the close ended with %+v, want ErrClosed", done[0])
		}
	} else if !errors.Is(err, ErrClosed) {
		t.Errorf("a batch after the close: %v, want ErrClosed", err)
	}
	if n := goroutinesBackTo(before, 5*time.Second); n > before {
		t.Errorf("%d goroutines before, %d after", before, n)
	}
}

// TestBatchConvFusedOrApart: a batched step's GDN in-projection with every
// reply's conv in one launch (fused-gdn-conv-batch, on the tiled GEMVs) and
// the two launches apart give each greedy reply the same tokens, with one
// launch fewer a GDN layer and step fused.
func TestBatchConvFusedOrApart(t *testing.T) {
	defer switches.Reset(SwitchTiledGEMV, SwitchFusedGDNConvBatch)
	if err := switches.Set(SwitchTiledGEMV, true); err != nil {
		t.Fatal(err)
	}
	var got [2][][]int32
	var dispatches [2]float64
	for i, fused := range []bool{false, true} {
		if err := switches.Set(SwitchFusedGDNConvBatch, fused); err != nil {
			t.Fatal(err)
		}
		e := batchEngine(t, "tiny-moe", "cpu")
		var reqs []Request
		for j := range 3 {
			reqs = append(reqs, Request{PromptIDs: batchPrompt(j), MaxTokens: 6, IgnoreStop: true, PrefillChunk: 16})
		}
		var done []Event
		got[i], done = runBatch(t, e, reqs, 96)
		dispatches[i] = done[0].Stats.DispatchesPerToken
		e.Close()
	}
	if !slices.EqualFunc(got[0], got[1], slices.Equal) {
		t.Errorf("the conv apart gave %v, fused %v", got[0], got[1])
	}
	t.Logf("dispatches a token: %.1f apart, %.1f fused; tokens %v", dispatches[0], dispatches[1], got[1])
	if dispatches[1] >= dispatches[0] {
		t.Errorf("%.1f dispatches a token fused, %.1f apart: the fused launch did not run", dispatches[1], dispatches[0])
	}
}
