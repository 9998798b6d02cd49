package engine

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"testing"

	"bagel/drafter"
	"bagel/ops"
	"bagel/qwen"
	"bagel/switches"
)

// TestBatchTreesEqualSolo: with speculative decoding on, a batch's greedy
// replies verify draft trees in the batch's steps (an oracle's trees with a
// wrong branch before or after the right one, prompt lookup's trees of a
// request's tree width) beside a reply verifying a line of guesses and a
// sampled one that takes its tree drafter's line, as alone: each reply is
// its plain reply alone, token for token, and the trees' paths are kept in
// part. On both test models, the step GEMVs on the matrix units and not.
func TestBatchTreesEqualSolo(t *testing.T) {
	withTiledGEMV(t, "trees", func(t *testing.T) { testBatchTrees(t, "cpu") })
}

// TestGPUBatchTreesEqualSolo is TestBatchTreesEqualSolo on each GPU backend.
func TestGPUBatchTreesEqualSolo(t *testing.T) {
	for _, name := range gpuBackends() {
		withTiledGEMV(t, name, func(t *testing.T) { testBatchTrees(t, name) })
	}
}

func testBatchTrees(t *testing.T, backendName string) {
	defer switches.Reset(SwitchSpeculative)
	for _, name := range []string{"tiny-moe", "tiny-dense"} {
		e := batchEngine(t, name, backendName)
		if err := switches.Set(SwitchSpeculative, false); err != nil {
			t.Fatal(err)
		}
		reqs := make([]Request, 5)
		plain := make([][]int32, len(reqs))
		for i := range reqs {
			reqs[i] = Request{PromptIDs: batchPrompt(i), MaxTokens: 14 + i, IgnoreStop: true, PrefillChunk: 16}
			plain[i] = solo(t, e, reqs[i])
		}
		oracle := func(i int) drafter.OracleDrafter {
			return drafter.OracleDrafter{Continuation: plain[i], PromptLen: len(reqs[i].PromptIDs)}
		}
		reqs[0].Drafter = oracleTree{oracle(0), false}
		reqs[1].Drafter = oracleTree{oracle(1), true}
		reqs[2].TreeWidth = 2
		reqs[3].Drafter = flakyDrafter{reply: plain[3], promptLen: len(reqs[3].PromptIDs)}
		reqs[4].Drafter = oracleTree{oracle(4), true}
		reqs[4].Sampling = Sampling{Temperature: 0.05, TopK: 20, TopP: 1, Seed: 5}
		if err := switches.Set(SwitchSpeculative, true); err != nil {
			t.Fatal(err)
		}
		sampled := solo(t, e, reqs[4]) // its lone drafting reply
		got, done := runBatch(t, e, reqs, 96)
		for i := range reqs {
			want := plain[i]
			if i == 4 {
				want = sampled
			}
			if done[i].Kind != EventDone || !slices.Equal(got[i], want) {
				t.Errorf("%s: reply %d ended %v %v: batched %v, alone %v", name, i, done[i].Kind, done[i].Err, got[i], want)
			}
		}
		for i := range 2 {
			if st := done[i].Stats; st.Verifies == 0 || st.DraftAccepted == 0 || st.DraftAccepted >= st.DraftProposed {
				t.Errorf("%s: tree reply %d: %d verifies, %d of %d guesses kept: want some kept, some not", name, i, st.Verifies, st.DraftAccepted, st.DraftProposed)
			}
		}
		e.Close()
	}
}

// TestTreeRowsEqualALoneTree: a draft tree riding in a batched step
// (ForwardTrees) beside a sequence of one token and one verifying a line
// gives, bit for bit, the logits of its ForwardTree alone, and a path kept
// from the batch's record (CommitTree) leaves its cache as the lone tree's
// commit leaves its own: their next steps' logits are equal.
func TestTreeRowsEqualALoneTree(t *testing.T) { onDeviceOfEachModel(t, treeRowsAlone) }

func treeRowsAlone(e *Engine) error {
	pool, err := e.model.NewCachePool(e.ctx, 3, 160)
	if err != nil {
		return err
	}
	defer pool.Free(e.ctx)
	caches := pool.Caches()
	alone, err := e.model.NewCache(e.ctx, 160)
	if err != nil {
		return err
	}
	defer alone.Free(e.ctx)
	for i, k := range append(slices.Clone(caches), alone) {
		if _, err := e.model.Forward(e.ctx, k, longPrompt(min(i, 1), 30+20*min(i, 1)), false); err != nil {
			return err
		}
	}
	// Sequence 1's tree: the root 12, two branches 13 → 15 and 14 → 16.
	rows := [][]int32{{11}, {12, 13, 14, 15, 16}, {17, 18, 19}}
	parent := []int{-1, 0, 0, 1, 2}
	logits, starts, err := e.model.ForwardTrees(e.ctx, caches, rows, [][]int{nil, parent, nil})
	if err != nil {
		return err
	}
	batched, err := ops.ReadBytes(e.ctx, logits)
	if err != nil {
		return err
	}
	own, err := e.model.ForwardTree(e.ctx, alone, rows[1], parent)
	if err != nil {
		return err
	}
	want, err := ops.ReadBytes(e.ctx, own)
	if err != nil {
		return err
	}
	row := 4 * e.Config.VocabSize
	if !bytes.Equal(batched[starts[1]*row:(starts[1]+len(rows[1]))*row], want) {
		return fmt.Errorf("the tree's rows differ from its ForwardTree's alone")
	}
	path := []int{0, 2, 4} // 12, 14, 16: not a prefix of the nodes' order
	for _, k := range []*qwen.Cache{caches[1], alone} {
		if err := k.CommitTree(e.ctx, e.model, k.Offset-len(rows[1]), path); err != nil {
			return err
		}
	}
	if same, err := sameNextStep(e, caches[1], alone); err != nil || !same {
		return cmp.Or(err, fmt.Errorf("after the commit, the batched tree's next step differs from the lone tree's"))
	}
	return nil
}
