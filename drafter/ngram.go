package drafter

// NGramDrafter is prompt lookup (Saxena's prompt-lookup decoding, llama.cpp's
// lookup decoding): the last n tokens of the history are searched for earlier
// in the history, and the tokens that followed their most recent earlier
// occurrence are proposed, the repetition carried on where they run into the
// end of the history (continuation). n runs from MaxN down to MinN, so the
// longest context that matches wins. It does well where the reply repeats the prompt:
// editing code, quoting, summaries.
type NGramDrafter struct {
	MinN int // shortest suffix to match; values < 1 mean 1
	MaxN int // longest suffix to match; values < MinN mean MinN
}

// Draft proposes up to k tokens that followed the most recent earlier match of
// the history's longest matching suffix (MaxN down to MinN tokens); nil when no
// suffix of at least MinN tokens occurs earlier, or k < 1.
func (d NGramDrafter) Draft(history []int32, k int) []int32 {
	minN, maxN := max(d.MinN, 1), d.MaxN
	maxN = max(maxN, minN)
	if k < 1 {
		return nil
	}
	for n := min(maxN, len(history)-1); n >= minN; n-- {
		suffix := history[len(history)-n:]
		// Latest start first (the most recent match). A match may overlap the
		// suffix (a run of one repeated token), but it ends before the last
		// token, so at least one token follows it.
		for start := len(history) - n - 1; start >= 0; start-- {
			if !equal(history[start:start+n], suffix) {
				continue
			}
			return continuation(history, start+n, k)
		}
	}
	return nil
}

// continuation is the k tokens from history[from] on, where from is just past
// an earlier occurrence of the history's suffix. Tokens past the end of the
// history continue the repetition that the match shows: the suffix recurs
// every len(history) − from tokens, so token j past the end is token
// j − (len(history) − from) of the continuation itself (a run of one token
// goes on as that token, a loop of a few as that loop). Proposing only what
// is in the history would stop a draft at the end of a short loop, one guess
// a verify when the reply repeats a single token.
func continuation(history []int32, from, k int) []int32 {
	out := make([]int32, 0, k)
	for j := from; len(out) < k; j++ {
		if j < len(history) {
			out = append(out, history[j])
		} else {
			out = append(out, out[j-len(history)])
		}
	}
	return out
}

func equal(a, b []int32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
