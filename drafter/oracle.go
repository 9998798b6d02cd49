package drafter

// OracleDrafter replays a known continuation: the reply the target model is
// known to give (from an earlier greedy run). Every draft is then accepted,
// which measures the best speed-up speculative decoding can reach at a given
// draft length: `bagel bench` uses it, not the app.
type OracleDrafter struct {
	Continuation []int32 // the tokens that follow the prompt
	PromptLen    int     // history[:PromptLen] is the prompt
}

// Draft proposes the next k tokens of the continuation, or nil when the
// history has left it (the generated tokens are not a prefix of it).
func (d OracleDrafter) Draft(history []int32, k int) []int32 {
	if k < 1 || d.PromptLen < 0 || d.PromptLen > len(history) {
		return nil
	}
	done := history[d.PromptLen:]
	if len(done) > len(d.Continuation) || !equal(done, d.Continuation[:len(done)]) {
		return nil
	}
	rest := d.Continuation[len(done):]
	if len(rest) == 0 {
		return nil
	}
	return append([]int32(nil), rest[:min(k, len(rest))]...)
}

// OracleTreeDrafter is a draft tree for benchmarks: the oracle's right
// continuation as the first branch, then Width−1 branches of wrong guesses
// (each token of the continuation less the branch's number), so that a
// verify carries Width times the guesses and keeps the first branch, whose
// nodes are in place: what verifying a tree costs when its best branch is
// right.
type OracleTreeDrafter struct {
	Oracle OracleDrafter
	Width  int
}

// Draft is the oracle's linear draft.
func (d OracleTreeDrafter) Draft(history []int32, k int) []int32 { return d.Oracle.Draft(history, k) }

// DraftTree is the tree of depth guesses a branch; nil past the continuation.
func (d OracleTreeDrafter) DraftTree(history []int32, depth int) *Tree {
	right := d.Oracle.Draft(history, depth)
	if len(right) == 0 {
		return nil
	}
	t := &Tree{}
	for b := range max(d.Width, 1) {
		parent := -1
		for _, tok := range right {
			if b > 0 { // a wrong guess, a valid id: below the right one, or above it near 0
				if tok >= int32(b) {
					tok -= int32(b)
				} else {
					tok += int32(b)
				}
			}
			parent = t.Add(parent, tok)
		}
	}
	return t
}
