package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"

	"bagel/drafter"
	"bagel/ops"
	"bagel/qwen"
	"bagel/switches"
)

// flakyDrafter guesses a known reply, wrong at one place that moves with the
// reply's length: steps that keep every guess, some, and none. It stops
// where the reply leaves the known one, unless loose: then it guesses the
// known reply's tokens at the positions that follow.
type flakyDrafter struct {
	reply     []int32
	promptLen int
	loose     bool
}

func (d flakyDrafter) Draft(history []int32, k int) []int32 {
	done := history[d.promptLen:]
	if len(done) >= len(d.reply) || !d.loose && !slices.Equal(done, d.reply[:len(done)]) {
		return nil
	}
	rest := d.reply[len(done):]
	g := slices.Clone(rest[:min(k, len(rest))])
	if p := len(done) % (k + 2); p < len(g) {
		g[p] = (g[p] + 1) % 1000
	}
	return g
}

// overlongDrafter guesses more tokens than it is asked for, every one wrong.
type overlongDrafter struct{}

func (overlongDrafter) Draft(history []int32, k int) []int32 { return make([]int32, k+20) }

// TestBatchDraftsEqualSolo: with speculative decoding on, a batch's greedy
// replies draft and verify their guesses in the batch's steps, and each
// reply is its plain greedy reply alone, token for token: guesses kept in
// full, in part and not at all (rolled back in the pooled slots), prompt
// lookup's own guesses, a reply whose guesses stop at its context's end, a
// drafter that gives more than it is asked for (cut), beside a greedy
// reply with a penalty, which drafts nothing, and sampled replies that
// draft (more guesses than the step's rows hold: each the same reply in
// the same batch again). On both test models, the step GEMVs on the matrix
// units and not. Sampled replies: TestBatchSampledDraftsEqualSolo.
func TestBatchDraftsEqualSolo(t *testing.T) {
	withTiledGEMV(t, "drafts", func(t *testing.T) { testBatchDrafts(t, "cpu") })
}

// TestGPUBatchDraftsEqualSolo is TestBatchDraftsEqualSolo and
// TestBatchSampledDraftsEqualSolo on each GPU backend.
func TestGPUBatchDraftsEqualSolo(t *testing.T) {
	for _, name := range gpuBackends() {
		withTiledGEMV(t, name, func(t *testing.T) {
			testBatchDrafts(t, name)
			testBatchSampledDrafts(t, name)
		})
	}
}

// TestBatchSampledDraftsEqualSolo: sampled replies with a top-k draft in a
// batch whose rows hold every guess they make, and each is the reply its
// seed gives when it drafts alone: guesses rejected (a hot reply, its draws
// from the residual) and kept (a cool one), a penalized one (each verify
// row penalized with its own window), beside a greedy reply.
func TestBatchSampledDraftsEqualSolo(t *testing.T) {
	testBatchSampledDrafts(t, "cpu")
}

func testBatchSampledDrafts(t *testing.T, backendName string) {
	defer switches.Reset(SwitchSpeculative)
	kept, rejected := 0, 0
	for _, name := range []string{"tiny-moe", "tiny-dense"} {
		e := batchEngine(t, name, backendName)
		reqs := []Request{
			{PromptIDs: batchPrompt(0), MaxTokens: 10, Sampling: Sampling{Temperature: 1, TopK: 8, TopP: 1, Seed: 11}},
			// Cool enough that guesses from the greedy reply are mostly kept.
			{PromptIDs: batchPrompt(1), MaxTokens: 12, Sampling: Sampling{Temperature: 0.05, TopK: 20, TopP: 1, Seed: 12}},
			{PromptIDs: batchPrompt(2), MaxTokens: 9, Sampling: Sampling{Temperature: 0.3, TopK: 5, TopP: 0.9, RepetitionPenalty: 1.2, Seed: 13}},
			{PromptIDs: batchPrompt(3), MaxTokens: 8},
		}
		if err := switches.Set(SwitchSpeculative, false); err != nil {
			t.Fatal(err)
		}
		for i := range reqs[:3] { // guesses from the greedy replies, four a step: 16 rows in all
			reqs[i].IgnoreStop, reqs[i].PrefillChunk = true, 16
			greedy := reqs[i]
			greedy.Sampling = Sampling{}
			reqs[i].Drafter = flakyDrafter{reply: solo(t, e, greedy), promptLen: len(reqs[i].PromptIDs), loose: true}
		}
		reqs[3].IgnoreStop = true
		if err := switches.Set(SwitchSpeculative, true); err != nil {
			t.Fatal(err)
		}
		want := make([][]int32, len(reqs))
		for i := range reqs {
			want[i] = solo(t, e, reqs[i])
		}
		got, done := runBatch(t, e, reqs, 96)
		for i := range reqs {
			if st := done[i].Stats; done[i].Kind != EventDone || !slices.Equal(got[i], want[i]) || i < 3 && st.Verifies == 0 {
				t.Errorf("%s: reply %d ended %v %v after %d verifies: batched %v, alone %v", name, i, done[i].Kind, done[i].Err, st.Verifies, got[i], want[i])
			}
		}
		for _, d := range done[:3] {
			kept += d.Stats.DraftAccepted
			rejected += d.Stats.DraftProposed - d.Stats.DraftAccepted
		}
		e.Close()
	}
	if !t.Skipped() && (kept == 0 || rejected == 0) {
		t.Errorf("the sampled replies kept %d guesses and rejected %d: want both", kept, rejected)
	}
}

func testBatchDrafts(t *testing.T, backendName string) {
	defer switches.Reset(SwitchSpeculative)
	const context = 96
	for _, name := range []string{"tiny-moe", "tiny-dense"} {
		e := batchEngine(t, name, backendName)
		repetitive := append(longPrompt(1, 8), longPrompt(1, 8)...)
		reqs := []Request{
			{PromptIDs: batchPrompt(0), MaxTokens: 12},
			{PromptIDs: repetitive, MaxTokens: 14}, // prompt lookup
			{PromptIDs: batchPrompt(1), MaxTokens: 10, DraftLength: 6},
			{PromptIDs: batchPrompt(2), MaxTokens: 11, Sampling: Sampling{Temperature: 0.8, TopK: 20, TopP: 1, Seed: 7}},
			{PromptIDs: batchPrompt(3), MaxTokens: 8, Sampling: Sampling{RepetitionPenalty: 1.3}}, // drafts nothing
			{PromptIDs: longPrompt(4, context-13)},                                                // until its context is full
			{PromptIDs: batchPrompt(4)[:20], MaxTokens: 7, Drafter: overlongDrafter{}},
			{PromptIDs: repetitive[3:], MaxTokens: 9, Sampling: Sampling{Temperature: 0.7, TopK: 5, TopP: 1, RepetitionPenalty: 1.3, Seed: 9}},
		}
		if err := switches.Set(SwitchSpeculative, false); err != nil {
			t.Fatal(err)
		}
		want := make([][]int32, len(reqs))
		for i := range reqs {
			reqs[i].IgnoreStop, reqs[i].PrefillChunk = true, 16
			want[i] = solo(t, e, reqs[i])
		}
		want[5] = want[5][:context-len(reqs[5].PromptIDs)+1] // alone its context is the engine's, longer
		for _, i := range []int{0, 2, 3, 5} {                // guesses from the plain replies
			reqs[i].Drafter = flakyDrafter{reply: want[i], promptLen: len(reqs[i].PromptIDs)}
		}
		if err := switches.Set(SwitchSpeculative, true); err != nil {
			t.Fatal(err)
		}
		got, done := runBatch(t, e, reqs, context)
		held := e.slotBytes()
		again, _ := runBatch(t, e, reqs, context)
		// The slots keep their rollback snapshots (a slot's at most: its GDN
		// states) and the model its batch record, counted and not grown.
		caches := int64(len(reqs)) * qwen.CacheBytes(e.Config, context)
		most := caches + int64(len(reqs))*qwen.CacheBytes(e.Config, 0) + e.model.BatchRecordBytes()
		if held <= caches || e.slotBytes() < held || e.slotBytes() > most {
			t.Errorf("%s: the slots held %d bytes after the first batch, %d after the second (caches alone %d, at most %d)", name, held,
				e.slotBytes(), caches, most)
		}
		for i := range reqs {
			st := done[i].Stats
			// The sampled replies (3, 7) guess fewer than alone where the
			// rows run short (testBatchSampledDrafts has them equal): the
			// same again for the same batch.
			if i == 3 || i == 7 {
				want[i] = again[i]
			}
			if done[i].Kind != EventDone || !slices.Equal(got[i], want[i]) {
				t.Errorf("%s: reply %d ended %v %v: batched %v, alone %v", name, i, done[i].Kind, done[i].Err, got[i], want[i])
			}
			// Prompt lookup (1, 7) guesses where the reply repeats itself:
			// random weights seldom do.
			drafts := i != 4
			if st.Speculative != drafts || i != 1 && i != 7 && drafts != (st.DraftProposed > 0) {
				t.Errorf("%s: reply %d: speculative %v, %d guesses proposed", name, i, st.Speculative, st.DraftProposed)
			}
		}
		for _, i := range []int{0, 2} {
			if st := done[i].Stats; st.DraftAccepted == 0 || st.DraftAccepted == st.DraftProposed || st.Verifies == 0 {
				t.Errorf("%s: reply %d kept %d of %d guesses in %d verifies: want some kept, some not", name, i, st.DraftAccepted, st.DraftProposed, st.Verifies)
			}
		}
		if done[5].Reason != ReasonContext {
			t.Errorf("%s: the last reply ended %q, want its context's end", name, done[5].Reason)
		}
		e.Close()
	}
}

// TestShareRows: a step's spare rows go round the drafting replies a guess
// at a time.
func TestShareRows(t *testing.T) {
	drafts := [][]int32{{1, 2, 3, 4}, nil, {5}, {6, 7, 8}}
	got := shareRows(drafts, 5)
	want := [][]int32{{1, 2}, nil, {5}, {6, 7}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("shared %v, want %v", got, want)
	}
	if got := shareRows([][]int32{{1, 2}}, 0); len(got[0]) != 0 {
		t.Errorf("no spare rows: kept %v", got[0])
	}
}

// TestVerifyRowsEqualALoneVerify: in a batched step whose sequences run one
// token or a verify of several (qwen.Model.ForwardRows, their slots in one
// pool), each sequence's rows get the logits, bit for bit, of its own
// forward of those tokens and of its decode steps; a verify then rolled back
// to a prefix of its rows (its GDN inputs replayed from the batch record)
// gives the next step's logits of a cache that ran that prefix alone.
func TestVerifyRowsEqualALoneVerify(t *testing.T) { onDeviceOfEachModel(t, verifyRowsAlone) }

// onDeviceOfEachModel runs f on the device goroutine of a CPU engine of
// each test model.
func onDeviceOfEachModel(t *testing.T, f func(e *Engine) error) {
	for _, name := range []string{"tiny-moe", "tiny-dense"} {
		e := batchEngine(t, name, "cpu")
		if err := e.loop.do(func() error { return f(e) }); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		e.Close()
	}
}

func verifyRowsAlone(e *Engine) error {
	pool, err := e.model.NewCachePool(e.ctx, 4, 160)
	if err != nil {
		return err
	}
	defer pool.Free(e.ctx)
	caches := pool.Caches()
	alone := make([]*qwen.Cache, len(caches))
	for i := range caches {
		if alone[i], err = e.model.NewCache(e.ctx, 160); err != nil {
			return err
		}
		defer alone[i].Free(e.ctx)
		for _, k := range []*qwen.Cache{caches[i], alone[i]} {
			if _, err := e.model.Forward(e.ctx, k, longPrompt(i, 20+40*i), false); err != nil {
				return err
			}
		}
	}
	rows := [][]int32{{11}, {12, 13, 14, 15}, {16}, {17, 18, 19}}
	before, err := caches[1].SnapshotState(e.ctx)
	if err != nil {
		return err
	}
	logits, starts, err := e.model.ForwardRows(e.ctx, caches, rows)
	if err != nil {
		return err
	}
	batched, err := ops.ReadBytes(e.ctx, logits)
	if err != nil {
		return err
	}
	row := 4 * e.Config.VocabSize
	for i, toks := range rows {
		own, err := e.model.Forward(e.ctx, alone[i], toks, true)
		if err != nil {
			return err
		}
		want, err := ops.ReadBytes(e.ctx, own)
		if err != nil {
			return err
		}
		if !bytes.Equal(batched[starts[i]*row:(starts[i]+len(toks))*row], want) {
			return fmt.Errorf("sequence %d's rows differ from its own forward's", i)
		}
		// And each row is its decode step's.
		plain, err := e.model.NewCache(e.ctx, 160)
		if err != nil {
			return err
		}
		defer plain.Free(e.ctx)
		if _, err := e.model.Forward(e.ctx, plain, longPrompt(i, 20+40*i), false); err != nil {
			return err
		}
		for j, tok := range toks {
			step, err := e.model.Forward(e.ctx, plain, []int32{tok}, false)
			if err != nil {
				return err
			}
			want, err := ops.ReadBytes(e.ctx, step)
			if err != nil {
				return err
			}
			if at := starts[i] + j; !bytes.Equal(batched[at*row:(at+1)*row], want) {
				return fmt.Errorf("sequence %d's row %d differs from its decode step's", i, j)
			}
		}
	}
	// Keep two of sequence 1's four rows; a cache of its own runs just those.
	if err := caches[1].Restore(e.ctx, before); err != nil {
		return err
	}
	if err := caches[1].ReplayGDN(e.ctx, e.model, 2); err != nil {
		return err
	}
	kept, err := e.model.NewCache(e.ctx, 160)
	if err != nil {
		return err
	}
	defer kept.Free(e.ctx)
	for _, toks := range [][]int32{longPrompt(1, 60), rows[1][:2]} {
		if _, err := e.model.Forward(e.ctx, kept, toks, false); err != nil {
			return err
		}
	}
	if same, err := sameNextStep(e, caches[1], kept); err != nil || !same {
		return cmp.Or(err, fmt.Errorf("after the rollback to 2 rows the next logits differ from a cache that ran them alone"))
	}
	return nil
}

// sameNextStep says whether a step of the same token over caches a and b
// gives the same logits, bit for bit.
func sameNextStep(e *Engine, a, b *qwen.Cache) (bool, error) {
	var next [2][]byte
	for j, k := range []*qwen.Cache{a, b} {
		logits, err := e.model.Forward(e.ctx, k, []int32{21}, false)
		if err != nil {
			return false, err
		}
		if next[j], err = ops.ReadBytes(e.ctx, logits); err != nil {
			return false, err
		}
	}
	return bytes.Equal(next[0], next[1]), nil
}

// TestParallelDraftsInItsBatch: with speculative decoding on, a Parallel
// request with a drafter of its own joins the batch (its tokens counted
// among the batch's) and verifies its guesses there, a draft tree's too.
func TestParallelDraftsInItsBatch(t *testing.T) {
	defer switches.Reset(SwitchSpeculative)
	e := batchEngine(t, "tiny-moe", "cpu")
	defer e.Close()
	req := Request{PromptIDs: batchPrompt(1), MaxTokens: 9, IgnoreStop: true}
	want := solo(t, e, req)
	if err := switches.Set(SwitchSpeculative, true); err != nil {
		t.Fatal(err)
	}
	p, err := e.Parallel(2, 96)
	if err != nil {
		t.Fatal(err)
	}
	req.Drafter = drafter.OracleDrafter{Continuation: want, PromptLen: len(req.PromptIDs)}
	got, _, done := collect(t, p.Generate(context.Background(), req))
	if st := done.Stats; !slices.Equal(got, want) || st.DraftAccepted == 0 || st.DraftAccepted != st.DraftProposed {
		t.Errorf("batched with the oracle: %v (kept %d of %d guesses), alone %v", got, done.Stats.DraftAccepted, done.Stats.DraftProposed, want)
	}
	if p.Tokens() != int64(len(want)) {
		t.Errorf("the batch sent %d tokens, want the reply's %d", p.Tokens(), len(want))
	}
	tree := req
	tree.Drafter = oracleTree{drafter.OracleDrafter{Continuation: want, PromptLen: len(req.PromptIDs)}, false}
	if got, _, done := collect(t, p.Generate(context.Background(), tree)); !slices.Equal(got, want) || p.Tokens() != int64(2*len(want)) || done.Stats.Verifies == 0 {
		t.Errorf("a draft tree's request: %v after %d verifies, the batch's tokens %d", got, done.Stats.Verifies, p.Tokens())
	}
}

// TestPenalizeRowsWindows: a sampled reply's verify rows are each penalized
// with the window its guesses before the row extend (its lone verify's,
// stepSampled), a reply without a penalty's row left as it is.
func TestPenalizeRowsWindows(t *testing.T) {
	e := batchEngine(t, "tiny-dense", "cpu")
	defer e.Close()
	g := &generation{e: e}
	step := []*batchSeq{
		{g: g, smp: newSampler(Sampling{}), history: []int32{4}},
		{g: g, smp: newSampler(Sampling{Temperature: 1, TopK: 5, TopP: 1, RepetitionPenalty: 2}), history: []int32{3}},
	}
	drafts := [][]int32{nil, {5, 6}}
	const v = 8
	var got []float32
	err := e.loop.do(func() error {
		defer e.scratch.Reset()
		logits := e.scratch.Get("test.logits", ops.F32, 4, v)
		raw := make([]byte, 4*4*v)
		for i := range 4 * v {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(1))
		}
		if err := ops.WriteBytes(e.ctx, logits, raw); err != nil {
			return err
		}
		if err := penalizeRows(step, logits, []int{0, 1}, drafts); err != nil {
			return err
		}
		var err error
		got, err = ops.ReadF32(e.ctx, logits)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for r, penalized := range [][]int{nil, {3}, {3, 5}, {3, 5, 6}} {
		for id := range v {
			want := float32(1)
			if slices.Contains(penalized, id) {
				want = 0.5
			}
			if got[r*v+id] != want {
				t.Errorf("row %d, id %d: %v, want %v (penalized: %v)", r, id, got[r*v+id], want, penalized)
			}
		}
	}
}

// sometimesDrafter guesses a known reply's next tokens, right, only where
// the reply so far has a length of a multiple of every or one more: guesses
// come in runs of two positions, as prompt lookup's do over a repeated
// passage (a pipelined batch sees a guess one token late).
type sometimesDrafter struct {
	reply     []int32
	promptLen int
	every     int
}

func (d sometimesDrafter) Draft(history []int32, k int) []int32 {
	done := len(history) - d.promptLen
	if done%d.every > 1 || done >= len(d.reply) {
		return nil
	}
	return slices.Clone(d.reply[done:min(done+k, len(d.reply))])
}

// TestPipelinedBatchWithQuietDrafters: greedy replies whose drafters guess
// now and then run pipelined between their guesses (pipelines says so while
// no drafter has a guess) and verify the guesses in steps of their own:
// each reply is its plain greedy reply, its guesses kept.
func TestPipelinedBatchWithQuietDrafters(t *testing.T) {
	defer switches.Reset(SwitchSpeculative)
	e := batchEngine(t, "tiny-moe", "cpu")
	defer e.Close()
	var reqs []Request
	want := make([][]int32, 3)
	for i := range want {
		reqs = append(reqs, Request{PromptIDs: batchPrompt(i)[:9], MaxTokens: 40, IgnoreStop: true})
		want[i] = solo(t, e, reqs[i])
		reqs[i].Drafter = sometimesDrafter{reply: want[i], promptLen: 9, every: 8 + i}
	}
	if err := switches.Set(SwitchSpeculative, true); err != nil {
		t.Fatal(err)
	}
	got, done := runBatch(t, e, reqs, 96)
	for i := range reqs {
		// A run of guesses every 8 to 10 tokens: a verify after each pipelined
		// stretch, not the first only.
		if st := done[i].Stats; !slices.Equal(got[i], want[i]) || st.Verifies < 3 || st.DraftAccepted != st.DraftProposed {
			t.Errorf("reply %d: batched %v (kept %d of %d guesses in %d verifies), alone %v", i, got[i], st.DraftAccepted, st.DraftProposed,
				st.Verifies, want[i])
		}
	}
	// Two greedy replies that have taken 4 and 5 tokens: pipelined unless
	// a drafter has a guess for what follows.
	seq := func(d sometimesDrafter, taken int) *batchSeq {
		s := &batchSeq{smp: newSampler(Sampling{}), spec: &speculator{e: e, drafter: d, draftLen: 4}, seen: make([]int32, 9+taken)}
		s.st.GeneratedTokens = taken
		return s
	}
	quiet := []*batchSeq{seq(sometimesDrafter{reply: want[0], promptLen: 9, every: 7}, 4), seq(sometimesDrafter{reply: want[1], promptLen: 9, every: 7}, 5)}
	if !e.pipelines(quiet) {
		t.Error("replies whose drafters have no guess do not pipeline")
	}
	if e.pipelines(append(quiet, seq(sometimesDrafter{reply: want[2], promptLen: 9, every: 3}, 7))) {
		t.Error("a batch pipelines although a drafter has a guess")
	}
}

// TestBudgetPassesPipelinedSteps: a pipelined step counts as a plain step
// in a reply's draft budget, and the probe it brings due is the next
// step's.
func TestBudgetPassesPipelinedSteps(t *testing.T) {
	b := newDraftBudget(4)
	b.missed = 50 // guesses do not pay: only probes
	if b.mayGuess() {
		t.Fatal("a budget whose guesses do not pay may guess at once")
	}
	for range probeEvery {
		b.pass()
	}
	if !b.mayGuess() || b.length() != 1 {
		t.Errorf("after %d pipelined steps the probe is not due (idle %d)", probeEvery, b.idle)
	}
}

// TestBatchMTPDraftsEqualPlain: with MTP drafting on, the demo model's
// replies in a batch draft with its MTP head, kept in step through the
// batched steps and rolled back with a verify's slot, the batch's drafts
// made together (MTPDraftBatch), and each is its plain greedy reply (three
// questions, drafts of 1 and of 3); the head's guesses are kept about as
// often as alone (the first ≥ 70% where the replies recite).
func TestBatchMTPDraftsEqualPlain(t *testing.T) {
	testBatchMTPDrafts(t, "cpu")
}

// TestGPUBatchMTPDraftsEqualPlain is TestBatchMTPDraftsEqualPlain on each GPU
// backend (the Metal simulator under make test).
func TestGPUBatchMTPDraftsEqualPlain(t *testing.T) {
	for _, name := range gpuBackends() {
		t.Run(name, func(t *testing.T) { testBatchMTPDrafts(t, name) })
	}
}

func testBatchMTPDrafts(t *testing.T, backendName string) {
	defer switches.Reset(SwitchSpeculativeMTP)
	dir, _ := mtpCase(t, 0)
	var e *Engine
	if backendName == "cpu" {
		var err error
		if e, err = Load(dir, Options{Backend: "cpu", ContextLength: 512, PromptCacheBytes: -1}); err != nil {
			t.Fatal(err)
		}
	} else {
		e = loadGPU(t, dir, backendName, 512)
	}
	defer e.Close()
	var reqs []Request
	var want [][]int32
	for _, i := range []int{0, 3, 4} { // replies that recite the model's books
		_, req := mtpCase(t, i)
		// Nothing held from the plain replies: a conversation kept while the
		// head was not would be restored out of step (no drafts).
		req.NoPromptCache = true
		plain, _ := generateWith(t, e, SwitchSpeculativeMTP, false, req)
		reqs, want = append(reqs, req), append(want, plain)
	}
	if err := switches.Set(SwitchSpeculativeMTP, true); err != nil {
		t.Fatal(err)
	}
	rollbacks := 0
	for _, draft := range []int{1, 3} {
		alone := make([]Stats, len(reqs))
		for i := range reqs {
			reqs[i].DraftLength = draft
			_, done := generateWith(t, e, SwitchSpeculativeMTP, true, reqs[i])
			alone[i] = done.Stats
		}
		got, done := runBatch(t, e, reqs, 256)
		for i := range reqs {
			st := done[i].Stats
			if !slices.Equal(got[i], want[i]) {
				t.Errorf("question %d, drafts of %d (%q %v): batched %v\nplain %v", i, draft, done[i].Reason, done[i].Err, got[i], want[i])
			}
			// The head drafts in the batch as alone (its chained guesses from
			// its own output rows): about as many kept.
			if st.Verifies == 0 || draft == 1 && st.DraftAccepted*10 < st.DraftProposed*7 || st.DraftAccepted*10 < alone[i].DraftAccepted*9 {
				t.Errorf("question %d, drafts of %d: %d verifies, %d of %d guesses kept (alone %d of %d)", i, draft, st.Verifies, st.DraftAccepted,
					st.DraftProposed, alone[i].DraftAccepted, alone[i].DraftProposed)
			}
			if st.DraftAccepted < st.DraftProposed {
				rollbacks++
			}
		}
	}
	if rollbacks == 0 {
		t.Error("every guess was kept: no rollback exercised")
	}
}

// TestMTPDraftBatchEqualsAlone: the MTP head's drafts for several
// sequences together (qwen.Model.MTPDraftBatch: a row each, chained on its
// own output rows, one sequence leaving the chain early at its cache's
// end) are the guesses it makes for each alone (MTPDraft), on the demo
// model; in caches of their own, and in a pool's slots, where each link's
// attention runs in one launch for all of them (attn_prep_batch_bf16, no
// attn_prep_bf16 a sequence).
func TestMTPDraftBatchEqualsAlone(t *testing.T) {
	for _, pooled := range []bool{false, true} {
		withDemoHead(t, func(e *Engine) error {
			var caches []*qwen.Cache
			var lasts []int32
			var pool *qwen.CachePool
			if pooled {
				var err error
				if pool, err = e.model.NewCachePool(e.ctx, 3, 256); err != nil {
					return err
				}
				defer pool.Free(e.ctx)
			}
			want := []int{4, 4, 2}
			for i, capacity := range []int{256, 256, 0} {
				_, req := mtpCase(t, []int{0, 3, 4}[i])
				prompt := req.PromptIDs
				if capacity == 0 {
					capacity = len(prompt) + 2 // room for two guesses after its last token
				}
				var k *qwen.Cache
				if pooled {
					k, want[i] = pool.Caches()[i], 4
				} else {
					var err error
					if k, err = e.model.NewCache(e.ctx, capacity); err != nil {
						return err
					}
					defer k.Free(e.ctx)
				}
				if _, err := e.model.Forward(e.ctx, k, prompt[:len(prompt)-1], false); err != nil {
					return err
				}
				caches, lasts = append(caches, k), append(lasts, prompt[len(prompt)-1])
			}
			pick := func(logits ops.Tensor) ([]int32, error) {
				rows, err := e.readTopK(logits, logits.Shape[0], 1)
				if err != nil {
					return nil, err
				}
				picks := make([]int32, len(rows))
				for r, c := range rows {
					picks[r] = c.ids[0]
				}
				return picks, nil
			}
			var names []string
			dev, enc := e.ctx.Dev, e.ctx.Enc
			e.ctx.Dev, e.ctx.Enc = recordingDevice{dev, &names}, recordingEncoder{enc, &names}
			together, err := e.model.MTPDraftBatch(e.ctx, caches, lasts, 4, pick)
			e.ctx.Dev, e.ctx.Enc = dev, enc
			if err != nil {
				return err
			}
			lone, batched := slices.Index(names, "attn_prep_bf16") >= 0, slices.Index(names, "attn_prep_batch_bf16") >= 0
			if lone == pooled || batched != pooled {
				t.Errorf("pooled %v: the head's attention prepared a sequence at a time %v, in one launch %v", pooled, lone, batched)
			}
			for b, k := range caches {
				alone, err := e.model.MTPDraft(e.ctx, k, lasts[b], 4, func(logits ops.Tensor) (int32, error) {
					p, err := pick(logits)
					return p[0], err
				})
				if err != nil {
					return err
				}
				if !slices.Equal(together[b], alone) || len(alone) != want[b] {
					return fmt.Errorf("pooled %v, sequence %d: together %v, alone %v", pooled, b, together[b], alone)
				}
			}
			return nil
		})
	}
}

// TestBatchedStepKeepsMTPInStep: after a batched step (one sequence's
// verify among them), each cache's MTP head is where plain forwards of the
// same tokens leave a cache of its own: the head drafts the same guesses.
func TestBatchedStepKeepsMTPInStep(t *testing.T) {
	withDemoHead(t, func(e *Engine) error {
		pool, err := e.model.NewCachePool(e.ctx, 3, 256)
		if err != nil {
			return err
		}
		defer pool.Free(e.ctx)
		rows := [][]int32{{13}, {13, 220, 17}, {16}}
		var twins []*qwen.Cache
		for i, k := range pool.Caches() {
			_, req := mtpCase(t, []int{0, 3, 4}[i])
			twin, err := e.model.NewCache(e.ctx, 256)
			if err != nil {
				return err
			}
			defer twin.Free(e.ctx)
			for _, c := range []*qwen.Cache{k, twin} {
				if _, err := e.model.Forward(e.ctx, c, req.PromptIDs, false); err != nil {
					return err
				}
			}
			if _, err := e.model.Forward(e.ctx, twin, rows[i], true); err != nil {
				return err
			}
			twins = append(twins, twin)
		}
		if _, _, err := e.model.ForwardRows(e.ctx, pool.Caches(), rows); err != nil {
			return err
		}
		pick := func(logits ops.Tensor) (int32, error) {
			r, err := e.readTopK(logits, 1, 1)
			if err != nil {
				return 0, err
			}
			return r[0].ids[0], nil
		}
		for i, k := range pool.Caches() {
			var got [2][]int32
			for j, c := range []*qwen.Cache{k, twins[i]} {
				if got[j], err = e.model.MTPDraft(e.ctx, c, 42, 3, pick); err != nil {
					return err
				}
			}
			if !slices.Equal(got[0], got[1]) {
				return fmt.Errorf("sequence %d: after the batched step the head drafts %v, after plain forwards %v", i, got[0], got[1])
			}
		}
		return nil
	})
}

// withDemoHead runs f on the device goroutine of the demo model loaded on
// the CPU, its forwards keeping the MTP head in step.
func withDemoHead(t *testing.T, f func(e *Engine) error) {
	t.Helper()
	dir, _ := mtpCase(t, 0)
	e, err := Load(dir, Options{Backend: "cpu", ContextLength: 512, PromptCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	err = e.loop.do(func() error {
		e.model.MTPOn = true
		defer func() { e.model.MTPOn = false }()
		return f(e)
	})
	if err != nil {
		t.Error(err)
	}
}
