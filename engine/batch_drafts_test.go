package engine

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"bagel/drafter"
	"bagel/ops"
	"bagel/qwen"
	"bagel/switches"
)

// flakyDrafter guesses a known reply, wrong at one place that moves with the
// reply's length: steps that keep every guess, some, and none.
type flakyDrafter struct {
	reply     []int32
	promptLen int
}

func (d flakyDrafter) Draft(history []int32, k int) []int32 {
	done := history[d.promptLen:]
	if len(done) > len(d.reply) || !slices.Equal(done, d.reply[:len(done)]) {
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
// reply with a penalty, which drafts nothing. Sampled replies with a top-k
// draft too (the rejection rule; one with a penalty), each the reply its
// seed gives when it drafts alone. On both test models, the step GEMVs on
// the matrix units and not.
func TestBatchDraftsEqualSolo(t *testing.T) {
	withTiledGEMV(t, "drafts", func(t *testing.T) { testBatchDrafts(t, "cpu") })
}

// TestGPUBatchDraftsEqualSolo is TestBatchDraftsEqualSolo on each GPU backend.
func TestGPUBatchDraftsEqualSolo(t *testing.T) {
	for _, name := range gpuBackends() {
		withTiledGEMV(t, name, func(t *testing.T) { testBatchDrafts(t, name) })
	}
}

func testBatchDrafts(t *testing.T, backendName string) {
	defer switches.Reset(SwitchSpeculative)
	const context = 96
	sampledKept := 0
	defer func() {
		if sampledKept == 0 && !t.Failed() && !t.Skipped() {
			t.Error("the sampled reply kept no guess on either model")
		}
	}()
	for _, name := range []string{"tiny-moe", "tiny-dense"} {
		e := batchEngine(t, name, backendName)
		repetitive := append(longPrompt(1, 8), longPrompt(1, 8)...)
		reqs := []Request{
			{PromptIDs: batchPrompt(0), MaxTokens: 12},
			{PromptIDs: repetitive, MaxTokens: 14}, // prompt lookup
			{PromptIDs: batchPrompt(1), MaxTokens: 10, DraftLength: 6},
			// Cool enough that guesses from the greedy reply are mostly kept.
			{PromptIDs: batchPrompt(2), MaxTokens: 11, Sampling: Sampling{Temperature: 0.05, TopK: 20, TopP: 1, Seed: 7}},
			{PromptIDs: batchPrompt(3), MaxTokens: 8, Sampling: Sampling{RepetitionPenalty: 1.3}}, // drafts nothing
			{PromptIDs: longPrompt(4, context-13)}, // until its context is full
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
		greedy := reqs[3]
		greedy.Sampling = Sampling{}
		for i, reply := range map[int][]int32{0: want[0], 2: want[2], 3: solo(t, e, greedy), 5: want[5]} { // guesses from the greedy replies
			reqs[i].Drafter = flakyDrafter{reply: reply, promptLen: len(reqs[i].PromptIDs)}
		}
		if err := switches.Set(SwitchSpeculative, true); err != nil {
			t.Fatal(err)
		}
		for _, i := range []int{3, 7} { // a sampled reply drafting alone takes its seed's draws in another order
			want[i] = solo(t, e, reqs[i])
		}
		got, done := runBatch(t, e, reqs, context)
		for i := range reqs {
			st := done[i].Stats
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
		// The sampled reply's guesses stop where its draws leave the greedy
		// reply: kept on one model at least (below), some rejected on each.
		if st := done[3].Stats; st.DraftAccepted == st.DraftProposed {
			t.Errorf("%s: the sampled reply kept all its %d guesses", name, st.DraftProposed)
		}
		sampledKept += done[3].Stats.DraftAccepted
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
// token or a verify of several (qwen.Model.ForwardRows, the one-token
// sequences' slots in one pool), each sequence's rows get the logits, bit
// for bit, of its own forward of those tokens; a verify then rolled back
// to a prefix of its rows (its GDN inputs replayed from the batch record)
// gives the next step's logits of a cache that ran that prefix alone.
func TestVerifyRowsEqualALoneVerify(t *testing.T) {
	for _, name := range []string{"tiny-moe", "tiny-dense"} {
		e := batchEngine(t, name, "cpu")
		if err := e.loop.do(func() error { return verifyRowsAlone(e) }); err != nil {
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
	next := [2][]byte{}
	for j, k := range []*qwen.Cache{caches[1], kept} {
		logits, err := e.model.Forward(e.ctx, k, []int32{21}, false)
		if err != nil {
			return err
		}
		if next[j], err = ops.ReadBytes(e.ctx, logits); err != nil {
			return err
		}
	}
	if !bytes.Equal(next[0], next[1]) {
		return fmt.Errorf("after the rollback to 2 rows the next logits differ from a cache that ran them alone")
	}
	return nil
}

// TestParallelDraftsInItsBatch: with speculative decoding on, a Parallel
// request with a drafter of its own joins the batch (its tokens counted
// among the batch's) and verifies its guesses there; one asking for draft
// trees takes Generate.
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
	tree.Drafter, tree.TreeWidth = nil, 2
	if got, _, _ := collect(t, p.Generate(context.Background(), tree)); !slices.Equal(got, want) || p.Tokens() != int64(len(want)) {
		t.Errorf("a draft tree's request: %v, the batch's tokens %d", got, p.Tokens())
	}
}
