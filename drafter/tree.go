package drafter

// Tree is a draft tree: several guesses per depth, verified in one forward
// pass. Nodes are stored flattened, parents before children (the order the
// verify forward takes them, after the context's last token); node i follows
// its parent's path, and Parent == -1 means it follows the context directly.
type Tree struct {
	Tokens []int32
	Parent []int
}

// Len is the number of nodes.
func (t *Tree) Len() int { return len(t.Tokens) }

// Add appends a node with token following node parent (-1: the context) and
// returns its index. A child of an existing node with the same token is not
// added twice: its index is returned.
func (t *Tree) Add(parent int, token int32) int {
	for i := range t.Tokens {
		if t.Parent[i] == parent && t.Tokens[i] == token {
			return i
		}
	}
	t.Tokens = append(t.Tokens, token)
	t.Parent = append(t.Parent, parent)
	return len(t.Tokens) - 1
}

// Depth is how many nodes lie on node i's path, i included.
func (t *Tree) Depth(i int) int {
	d := 0
	for ; i >= 0; i = t.Parent[i] {
		d++
	}
	return d
}

// Mask is the tree-causal attention mask of the verify forward over
// [last context token, node 0, node 1, ...]: row r may see column c when c is
// r itself or on r's path back to the context token (position 0, which every
// row sees; the context before it is seen by all, as in a plain decode).
func (t *Tree) Mask() [][]bool {
	n := t.Len() + 1
	mask := make([][]bool, n)
	for r := range mask {
		mask[r] = make([]bool, n)
		mask[r][0] = true
		for i := r - 1; i >= 0; i = t.Parent[i] {
			mask[r][i+1] = true
		}
	}
	return mask
}

// Accept walks the tree along the target's choices. next[0] is the token the
// target picks after the context's last token, next[1+i] the one it picks
// after node i (the verify forward's outputs, position by position). From the
// root, the child whose token is the target's pick is accepted, and so on; the
// target's pick after the last accepted node is the bonus token, which is
// always right. The accepted tokens plus the bonus are what the step adds.
func (t *Tree) Accept(next []int32) (accepted []int32, bonus int32) {
	nodes, bonus := t.AcceptPath(next)
	for _, n := range nodes {
		accepted = append(accepted, t.Tokens[n])
	}
	return accepted, bonus
}

// AcceptPath is Accept's walk as the accepted nodes' indices, in order down
// the tree (what a verify keeps of its flattened nodes).
func (t *Tree) AcceptPath(next []int32) (nodes []int, bonus int32) {
	if len(next) != t.Len()+1 {
		panic("drafter: Accept wants one target token per node plus the root")
	}
	cur := -1 // the context
	for {
		want := next[cur+1]
		child := -1
		for i, p := range t.Parent {
			if p == cur && t.Tokens[i] == want {
				child = i
				break
			}
		}
		if child < 0 {
			return nodes, want
		}
		nodes = append(nodes, child)
		cur = child
	}
}

// Prefix is the tree's first n nodes (all when n ≥ Len): parents come
// before their children, so they are a tree.
func (t *Tree) Prefix(n int) *Tree {
	n = max(0, min(n, t.Len()))
	return &Tree{Tokens: t.Tokens[:n:n], Parent: t.Parent[:n:n]}
}

// TreeDrafter proposes a draft tree of at most depth levels.
type TreeDrafter interface {
	DraftTree(history []int32, depth int) *Tree
}
