package engine

import (
	"fmt"
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
			withTiledGEMV(t, backendName+"/"+name, func(t *testing.T) {
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

// TestVerifyLogitsAreDecodeLogits: a verify-sized forward (the newest token
// and four guesses, one launch per kernel over five tokens) gives every
// position the logits a one-token decode step gives it, bit for bit, on the
// CPU and on each GPU backend: what lets greedy speculative decoding equal
// plain decoding. The GEMVs of several tokens may shape their threadgroups
// otherwise (QMV_SPLIT_MANY) but must add in a step's order.
func TestVerifyLogitsAreDecodeLogits(t *testing.T) {
	ids := otherIDs  // inside every test vocabulary
	const before = 7 // the cache's tokens before the verify
	verifyEqualsSteps(t, ids, before)
}

// TestVerifyLogitsPastSplitKeysAreDecodeLogits is the same where a decode
// step's attention splits its keys across threadgroups (ops.Attend): a
// verify of 5 after 160 keys, one of 5 across the 128 keys from which steps
// split (its first queries' steps did not), and one of 10 after 160 (more
// queries than the tiled split kernel takes at once).
func TestVerifyLogitsPastSplitKeysAreDecodeLogits(t *testing.T) {
	ids := make([]int32, 170)
	for i := range ids {
		ids[i] = otherIDs[i%len(otherIDs)] + int32(i/len(otherIDs))
	}
	for _, c := range []struct{ before, verify int }{{160, 5}, {125, 5}, {160, 10}} {
		t.Run(fmt.Sprintf("%d+%d", c.before, c.verify), func(t *testing.T) {
			verifyEqualsSteps(t, ids[:c.before+c.verify], c.before)
		})
	}
}

// verifyEqualsSteps checks, on the CPU and each GPU backend, with the tiled
// GEMVs off and on, that a verify of ids[before:] after ids[:before] gives
// the logits of decode steps of the same tokens, bit for bit.
func verifyEqualsSteps(t *testing.T, ids []int32, before int) {
	dirs := map[string]string{"wide-moe": t.TempDir()}
	testmodel.WriteRandom(t, dirs["wide-moe"], wideMoE)
	for _, name := range testmodel.Names {
		dirs[name] = testmodel.Weights(t, name)
	}
	for _, backendName := range append([]string{"cpu"}, gpuBackends()...) {
		for name, dir := range dirs {
			withTiledGEMV(t, backendName+"/"+name, func(t *testing.T) {
				e := loadGPU(t, dir, backendName, 256)                            // loads "cpu" as well
				steps := scoreFrom(t, e, ids, before, false)[e.Config.VocabSize:] // the singles' rows
				if err := e.resetCache(); err != nil {
					t.Fatal(err)
				}
				if _, err := e.forward(ids[:before], false); err != nil {
					t.Fatal(err)
				}
				verify, err := e.forward(ids[before:], true)
				if err != nil {
					t.Fatal(err)
				}
				if len(verify) != len(steps) {
					t.Fatalf("verify gave %d logits, the steps %d", len(verify), len(steps))
				}
				if differ, first := differing(verify, steps); differ > 0 {
					vocab := e.Config.VocabSize
					t.Errorf("%d of %d logits differ from the decode steps' (first: position %d, id %d: %g against %g)",
						differ, len(verify), before+first/vocab, first%vocab, verify[first], steps[first])
				}
			})
		}
	}
}

// wideMoE has the 35B-A3B's widths where they set a GEMV's threadgroups
// (hidden 2048, 16 × 128 attention and GDN values, 4-bit experts of 512 and
// an 8-bit router), so that its one-token GEMVs split rows among SIMD-groups
// as the real model's do; two layers and a small vocabulary keep it quick.
var wideMoE = testmodel.Spec{ModelType: "qwen3_5_moe", Hidden: 2048, Layers: 2, Interval: 2, Heads: 16, KVHeads: 2,
	HeadDim: 128, Hk: 4, Hv: 16, Dk: 128, Dv: 128, ConvKernel: 4, Experts: 8, TopK: 2, MoEInter: 512, Share: 512,
	Vocab: 512, Bits: 4, GroupSize: 64, RouterBits: 8}

// withTiledGEMV runs f as subtests of name with the tiled-GEMV switch off,
// on (the experts on their plain kernels), and on with the tiled experts
// (SwitchTiledGEMV, SwitchTiledExperts, read at model load: f loads its
// model).
func withTiledGEMV(t *testing.T, name string, f func(t *testing.T)) {
	defer switches.Reset(SwitchTiledGEMV)
	defer switches.Reset(SwitchTiledExperts)
	for _, c := range []struct{ gemv, experts bool }{{false, false}, {true, false}, {true, true}} {
		if err := switches.Set(SwitchTiledGEMV, c.gemv); err != nil {
			t.Fatal(err)
		}
		if err := switches.Set(SwitchTiledExperts, c.experts); err != nil {
			t.Fatal(err)
		}
		sub := fmt.Sprintf("%s/tiled-gemv=%v", name, c.gemv)
		if c.experts {
			sub += ",tiled-experts"
		}
		t.Run(sub, f)
	}
}
