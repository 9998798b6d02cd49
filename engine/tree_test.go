package engine

import (
	"math"
	"testing"

	"bagel/internal/testmodel"
	"bagel/ops"
)

// TestTreeVerifyFollowsPaths runs a draft tree after a prompt and checks each
// node's logits against a plain forward of the prompt and the node's path;
// then commits one path and checks that the next token's logits are those of
// a plain forward of the prompt, the path and that token (CPU, both models):
// the same bits, as the tree kernels compute each node as the linear ones do.
func TestTreeVerifyFollowsPaths(t *testing.T) {
	prompt := []int32{9707, 11, 1246, 525, 3555, 30}
	// Node 0 the prompt's last token; two branches below it, one of depth 3.
	tokens := []int32{30, 2585, 374, 279, 6722, 13, 576}
	parent := []int{-1, 0, 1, 2, 0, 4, 1}
	for _, name := range []string{"tiny-moe", "tiny-dense"} {
		t.Run(name, func(t *testing.T) {
			e, err := Load(testmodel.Weights(t, name), Options{Backend: "cpu", ContextLength: 64})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			vocab := e.Config.VocabSize
			plain := func(ids []int32) []float32 { // the last position's logits, from an empty cache
				if err := e.loop.do(func() error { return e.cache.Reset(e.ctx) }); err != nil {
					t.Fatal(err)
				}
				out, err := e.forward(ids, false)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			pathOf := func(n int) []int {
				var p []int
				for ; n >= 0; n = parent[n] {
					p = append([]int{n}, p...)
				}
				return p
			}
			withPath := func(nodes []int, extra ...int32) []int32 {
				ids := append([]int32(nil), prompt[:len(prompt)-1]...)
				for _, n := range nodes {
					ids = append(ids, tokens[n])
				}
				return append(ids, extra...)
			}

			// The tree after the prompt (its last token is node 0).
			if err := e.loop.do(func() error { return e.cache.Reset(e.ctx) }); err != nil {
				t.Fatal(err)
			}
			if _, err := e.forward(prompt[:len(prompt)-1], false); err != nil {
				t.Fatal(err)
			}
			pos0 := len(prompt) - 1
			var tree []float32
			err = e.stepWith(func() (ops.Tensor, error) { return e.model.ForwardTree(e.ctx, e.cache, tokens, parent) }, nil,
				func(logits ops.Tensor) (err error) {
					tree, err = ops.ReadF32(e.ctx, logits)
					return err
				})
			if err != nil {
				t.Fatal(err)
			}
			other := pathOf(5) // 0 → 4 → 5: not a prefix of the order, so its nodes move
			if err := e.loop.do(func() error { return e.cache.CommitTree(e.ctx, e.model, pos0, other) }); err != nil {
				t.Fatal(err)
			}
			next, err := e.forward([]int32{7}, false)
			if err != nil {
				t.Fatal(err)
			}
			closeTo := func(what string, got, want []float32) {
				t.Helper()
				worst := 0.0
				for i := range want {
					worst = math.Max(worst, math.Abs(float64(got[i]-want[i])))
				}
				if worst != 0 {
					t.Errorf("%s: logits differ by up to %g", what, worst)
				}
			}
			closeTo("after committing path [0 4 5]", next, plain(withPath(other, 7)))
			for n := range tokens {
				closeTo("node", tree[n*vocab:(n+1)*vocab], plain(withPath(pathOf(n))))
			}
		})
	}
}
