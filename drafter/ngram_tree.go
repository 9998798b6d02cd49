package drafter

// NGramTreeDrafter is prompt lookup with several guesses: where the history's
// suffix occurs more than once, the different tokens that followed its
// occurrences become sibling branches (the most recent occurrence first), each
// continued by what followed that occurrence. A chat that repeats code with
// small changes keeps both the old and the new spelling in the tree.
type NGramTreeDrafter struct {
	MinN, MaxN int // suffix lengths to match, as NGramDrafter
	Width      int // most branches; values < 1 mean 1
}

// Draft is the drafter's first branch as a linear draft of up to k tokens
// (the most recent occurrence's continuation), for a driver that verifies
// one guess per position: NGramTreeDrafter is a Drafter too.
func (d NGramTreeDrafter) Draft(history []int32, k int) []int32 {
	t := d.DraftTree(history, k)
	if t == nil {
		return nil
	}
	// The first occurrence's continuation is nodes 0, 1, ... each below the
	// one before, added first.
	var out []int32
	for i, p := range t.Parent {
		if p != i-1 || len(out) == k {
			break
		}
		out = append(out, t.Tokens[i])
	}
	return out
}

// DraftTree returns the tree of the longest suffix (MaxN down to MinN tokens)
// that occurs earlier, with up to Width branches of up to depth tokens and at
// most Width·depth nodes in all; nil when no suffix matches or depth < 1.
func (d NGramTreeDrafter) DraftTree(history []int32, depth int) *Tree {
	minN := max(d.MinN, 1)
	maxN := max(d.MaxN, minN)
	width := max(d.Width, 1)
	if depth < 1 {
		return nil
	}
	for n := min(maxN, len(history)-1); n >= minN; n-- {
		suffix := history[len(history)-n:]
		t := &Tree{}
		branches := 0
		for start := len(history) - n - 1; start >= 0 && branches < width && t.Len() < width*depth; start-- {
			if !equal(history[start:start+n], suffix) {
				continue
			}
			follow := continuation(history, start+n, depth)
			before := t.Len()
			parent := -1
			for _, tok := range follow {
				if t.Len() >= width*depth {
					break
				}
				parent = t.Add(parent, tok)
			}
			if t.Len() > before && t.Parent[before] == -1 {
				branches++ // a new first token: a new branch
			}
		}
		if t.Len() > 0 {
			return t
		}
	}
	return nil
}
