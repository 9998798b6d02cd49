package engine

import (
	"time"

	"bagel/drafter"
	"bagel/ops"
	"bagel/qwen"
)

// Speculative decoding with a draft tree (greedy replies; a
// drafter.TreeDrafter such as NGramTreeDrafter): several guesses per
// position, every branch verified in one forward over the tree's nodes
// (qwen.Model.ForwardTree: each node sees its own path), the branch the model
// agrees with longest kept (drafter.Tree.AcceptPath) plus the model's pick
// after it. The tree leaves the GDN layers' windows and states as they were,
// so keeping a path is moving its keys and values into place and replaying
// the GDN rule over its recorded inputs (qwen.Cache.CommitTree): no snapshot
// and no restore. The reply is the plain greedy reply token for token.

// MaxTreeWidth bounds Request.TreeWidth: a tree of that many branches of the
// default depth still fits one verify (qwen.RecordRows nodes).
const MaxTreeWidth = 3

// treeStep is step with a tree drafter.
func (s *speculator) treeStep(td drafter.TreeDrafter, context []int32, last int32, room int) (out []int32, proposed, accepted int, err error) {
	e := s.e
	tree := s.validTree(td, context, room)
	if tree == nil { // no guess, or one the model cannot take: decode plainly
		id, err := e.forwardArgmax([]int32{last})
		return []int32{id}, 0, 0, err
	}
	tokens, parent := append([]int32{last}, tree.Tokens...), treeParents(tree)
	var pos0 int
	picks := make([]int32, len(tokens))
	err = e.stepWith(func() (ops.Tensor, error) {
		pos0 = e.cache.Offset
		return e.model.ForwardTree(e.ctx, e.cache, tokens, parent)
	}, nil, func(logits ops.Tensor) error {
		rows, err := e.readTopK(logits, len(tokens), 1)
		for i := range picks {
			if err == nil {
				picks[i], err = rows[i].greedy()
			}
		}
		return err
	})
	if err != nil {
		return nil, 0, 0, err
	}
	out, path := acceptTree(tree, picks)
	err = e.loop.do(func() error {
		defer e.scratch.Reset()
		if err := e.cache.CommitTree(e.ctx, e.model, pos0, path); err != nil {
			_ = e.cache.Reset(e.ctx) // the state is unknown: start over rather than go on wrong
			return err
		}
		return nil
	})
	return out, tree.Len(), len(path) - 1, err
}

// treeParents is a verify's parents of tree: node 0 the newest token (the
// root, −1), the tree's nodes after it.
func treeParents(tree *drafter.Tree) []int {
	parent := make([]int, 1+tree.Len())
	parent[0] = -1
	for i, p := range tree.Parent {
		parent[i+1] = p + 1
	}
	return parent
}

// acceptTree is what a verify of tree keeps, picks the model's pick after
// each of its rows (the root's first): the tokens of the branch the model
// agrees with longest and its pick after it, and the path of the verify's
// rows to keep (CommitTree: the root, then the branch's nodes).
func acceptTree(tree *drafter.Tree, picks []int32) (out []int32, path []int) {
	nodes, bonus := tree.AcceptPath(picks)
	path = []int{0}
	for _, n := range nodes {
		path = append(path, n+1)
		out = append(out, tree.Tokens[n])
	}
	return append(out, bonus), path
}

// validTree asks the drafter for a tree as deep as the step may guess and
// cuts it to what one verify takes (qwen.RecordRows nodes with last, and the
// context left); nil when it is empty or a guess is outside the vocabulary.
func (s *speculator) validTree(td drafter.TreeDrafter, context []int32, room int) *drafter.Tree {
	depth := s.guesses(room)
	if depth <= 0 {
		return nil
	}
	start := time.Now()
	tree := td.DraftTree(context, depth)
	s.draftTime = time.Since(start)
	if tree == nil {
		return nil
	}
	tree = tree.Prefix(min(qwen.RecordRows-1, room-1))
	if tree.Len() == 0 {
		return nil
	}
	for _, tok := range tree.Tokens {
		if tok < 0 || int(tok) >= s.e.Config.VocabSize {
			return nil
		}
	}
	return tree
}
