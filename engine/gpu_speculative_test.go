package engine

import (
	"slices"
	"testing"

	"bagel/drafter"
	"bagel/internal/testmodel"
	"bagel/switches"
)

// TestGPUSpeculativeGreedyEqualsPlain: on each GPU backend, greedy replies
// verified in one forward over the last token and its drafts (linear, with
// rollbacks, and as draft trees) are the same backend's plain greedy replies
// token for token. The verify runs the decode kernels over several tokens,
// each token's arithmetic as in a one-token step, so nothing may differ.
func TestGPUSpeculativeGreedyEqualsPlain(t *testing.T) {
	defer switches.Reset(SwitchSpeculative)
	for _, backendName := range gpuBackends() {
		for _, name := range testmodel.Names {
			t.Run(backendName+"/"+name, func(t *testing.T) {
				e := loadGPU(t, testmodel.Weights(t, name), backendName, 256)
				req, plain, oracle := plainReply(t, e)
				for _, c := range []struct {
					name string
					d    drafter.Drafter
				}{
					{"oracle", oracle},
					{"every third wrong", everyThirdWrong{oracle}},
					{"tree, wrong branch first", oracleTree{oracle, false}},
					{"tree, right branch first", oracleTree{oracle, true}},
				} {
					req := req
					req.Drafter = c.d
					spec, done := generateWith(t, e, SwitchSpeculative, true, req)
					if !slices.Equal(plain, spec) {
						t.Errorf("%s drafts: speculative %v\nplain %v", c.name, spec, plain)
					}
					if st := done.Stats; st.DraftAccepted == 0 || st.Verifies == 0 {
						t.Errorf("%s drafts: %d proposed, %d accepted, %d verifies", c.name, st.DraftProposed, st.DraftAccepted, st.Verifies)
					}
				}
			})
		}
	}
}
