package engine

import (
	"slices"
	"testing"

	"bagel/drafter"
	"bagel/internal/testmodel"
	"bagel/switches"
)

// oracleTree is a tree drafter built on an oracle's right guesses: a branch
// wrong from its first token and the right continuation with its last guess
// wrong. With the wrong branch first the kept path is never a prefix of the
// nodes' order (its keys and values move, CommitTree); with rightFirst it is.
type oracleTree struct {
	oracle     drafter.OracleDrafter
	rightFirst bool
}

func (o oracleTree) Draft(history []int32, k int) []int32 { return o.oracle.Draft(history, k) }

func (o oracleTree) DraftTree(history []int32, depth int) *drafter.Tree {
	right := o.oracle.Draft(history, depth)
	if len(right) == 0 {
		return nil
	}
	t := &drafter.Tree{}
	wrong := func() {
		p := -1
		for _, tok := range right {
			p = t.Add(p, (tok+1)%1000+1) // no token the tiny models pick here
		}
	}
	if !o.rightFirst {
		wrong()
	}
	p := -1
	for i, tok := range right {
		if i == len(right)-1 && i > 0 {
			tok = (tok+1)%1000 + 1
		}
		p = t.Add(p, tok)
	}
	if o.rightFirst {
		wrong()
	}
	return t
}

// TestTreeSpeculativeGreedyEqualsPlain: greedy replies verified as draft
// trees are the plain greedy replies token for token, on both test models,
// with an oracle's trees (a branch wrong, a branch right but for its last
// guess, in either order).
func TestTreeSpeculativeGreedyEqualsPlain(t *testing.T) {
	defer switches.Reset(SwitchSpeculative)
	for _, name := range []string{"tiny-moe", "tiny-dense"} {
		e, err := Load(testmodel.Weights(t, name), Options{Backend: "cpu", ContextLength: 256})
		if err != nil {
			t.Fatal(err)
		}
		req, plain, oracle := plainReply(t, e)
		for _, rightFirst := range []bool{false, true} {
			req := req
			req.Drafter = oracleTree{oracle, rightFirst}
			spec, done := generateWith(t, e, SwitchSpeculative, true, req)
			if !slices.Equal(plain, spec) {
				t.Errorf("%s, oracle tree (right branch first %v): speculative %v\nplain %v", name, rightFirst, spec, plain)
			}
			if st := done.Stats; st.DraftAccepted == 0 || st.DraftAccepted >= st.DraftProposed || st.Verifies == 0 {
				t.Errorf("%s, oracle tree (right branch first %v): %d proposed, %d accepted, %d verifies",
					name, rightFirst, st.DraftProposed, st.DraftAccepted, st.Verifies)
			}
		}
		e.Close()
	}
}
