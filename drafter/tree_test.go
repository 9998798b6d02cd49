package drafter

import (
	"reflect"
	"slices"
	"testing"
)

func TestOracleDrafter(t *testing.T) {
	d := OracleDrafter{Continuation: []int32{7, 8, 9, 10}, PromptLen: 2}
	for _, c := range []struct {
		history []int32
		k       int
		want    []int32
	}{
		{[]int32{1, 2}, 3, []int32{7, 8, 9}},
		{[]int32{1, 2, 7, 8}, 5, []int32{9, 10}},
		{[]int32{1, 2, 7, 8, 9, 10}, 2, nil}, // the continuation is used up
		{[]int32{1, 2, 7, 5}, 2, nil},        // the reply left the continuation
		{[]int32{1}, 2, nil},                 // shorter than the prompt
		{[]int32{1, 2}, 0, nil},
	} {
		if got := d.Draft(c.history, c.k); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Draft(%v, %d) = %v, want %v", c.history, c.k, got, c.want)
		}
	}
}

// exampleTree builds the tree of the tests below (flattened: 5, 9, 6, 7, 8):
//
//	context ─ 5 (node 0) ─ 6 (node 2) ─ 7 (node 3)
//	        │                       └ 8 (node 4)
//	        └ 9 (node 1)
func exampleTree() *Tree {
	t := &Tree{}
	a := t.Add(-1, 5)
	t.Add(-1, 9)
	b := t.Add(a, 6)
	t.Add(b, 7)
	t.Add(b, 8)
	if t.Add(-1, 5) != a {
		panic("a repeated child was added twice")
	}
	return t
}

func TestTreeMaskAndDepth(t *testing.T) {
	tr := exampleTree()
	if tr.Len() != 5 || tr.Depth(4) != 3 || tr.Depth(1) != 1 {
		t.Fatalf("len %d, depths %d %d", tr.Len(), tr.Depth(4), tr.Depth(1))
	}
	// rows/columns: [ctx, 5, 9, 6, 7, 8]
	want := [][]bool{
		{true, false, false, false, false, false},
		{true, true, false, false, false, false},
		{true, false, true, false, false, false},
		{true, true, false, true, false, false},
		{true, true, false, true, true, false},
		{true, true, false, true, false, true},
	}
	if got := tr.Mask(); !reflect.DeepEqual(got, want) {
		t.Errorf("mask\n%v\nwant\n%v", got, want)
	}
}

func TestTreeAccept(t *testing.T) {
	tr := exampleTree()
	for _, c := range []struct {
		next     []int32 // after: ctx, 5, 9, 6, 7, 8
		accepted []int32
		bonus    int32
	}{
		{[]int32{5, 6, 0, 8, 0, 42}, []int32{5, 6, 8}, 42}, // the deepest branch, then the bonus
		{[]int32{9, 0, 11, 0, 0, 0}, []int32{9}, 11},
		{[]int32{3, 0, 0, 0, 0, 0}, nil, 3}, // nothing accepted: the bonus alone
		{[]int32{5, 1, 0, 0, 0, 0}, []int32{5}, 1},
	} {
		acc, bonus := tr.Accept(c.next)
		if !reflect.DeepEqual(acc, c.accepted) || bonus != c.bonus {
			t.Errorf("Accept(%v) = %v + %d, want %v + %d", c.next, acc, bonus, c.accepted, c.bonus)
		}
	}
}

func TestNGramTreeDrafter(t *testing.T) {
	d := NGramTreeDrafter{MinN: 1, MaxN: 3, Width: 2}
	// "a b c" was followed once by "x y", later by "z w": both branches, the
	// most recent ("z") first.
	h := []int32{1, 2, 3, 10, 11, 0, 1, 2, 3, 20, 21, 0, 1, 2, 3}
	tr := d.DraftTree(h, 2)
	if tr == nil || !reflect.DeepEqual(tr.Tokens, []int32{20, 21, 10, 11}) || !reflect.DeepEqual(tr.Parent, []int{-1, 0, -1, 2}) {
		t.Fatalf("tree %+v", tr)
	}
	if acc, bonus := tr.Accept([]int32{10, 0, 0, 0, 11}); !reflect.DeepEqual(acc, []int32{10}) || bonus != 0 {
		t.Errorf("accept along the older branch: %v + %d", acc, bonus)
	}
	if tr := (NGramTreeDrafter{MinN: 1, MaxN: 3, Width: 1}).DraftTree(h, 2); tr.Len() != 2 {
		t.Errorf("width 1 gave %d nodes", tr.Len())
	}
	if tr := d.DraftTree([]int32{1, 2, 3}, 4); tr != nil {
		t.Errorf("no earlier match, got %+v", tr)
	}
	if tr := d.DraftTree(h, 0); tr != nil {
		t.Error("depth 0 gave a tree")
	}
	// A long run of one token: the node count stays at Width·depth.
	run := make([]int32, 500)
	if tr := d.DraftTree(run, 3); tr == nil || tr.Len() > 6 {
		t.Errorf("run: %+v", tr)
	}
	// A loop of two tokens goes on past the history's end, every branch the loop.
	if tr := d.DraftTree([]int32{5, 6, 5, 6, 5}, 4); tr == nil || !reflect.DeepEqual(tr.Tokens, []int32{6, 5, 6, 5}) {
		t.Errorf("loop: %+v", tr)
	}
}

// TestTreeAcceptPathAndPrefix: AcceptPath names the nodes Accept keeps, a
// prefix of the nodes is a tree, and the n-gram tree drafter's linear draft is
// its first branch.
func TestTreeAcceptPathAndPrefix(t *testing.T) {
	tree := exampleTree()
	next := make([]int32, tree.Len()+1)
	// Follow the first child at every step, then stop with a token no child has.
	cur := -1
	for {
		child := -1
		for i, p := range tree.Parent {
			if p == cur {
				child = i
				break
			}
		}
		if child < 0 {
			next[cur+1] = -7
			break
		}
		next[cur+1] = tree.Tokens[child]
		cur = child
	}
	nodes, bonus := tree.AcceptPath(next)
	accepted, bonus2 := tree.Accept(next)
	if bonus != -7 || bonus2 != -7 || len(nodes) != len(accepted) || len(nodes) == 0 {
		t.Fatalf("AcceptPath %v %d, Accept %v %d", nodes, bonus, accepted, bonus2)
	}
	for i, n := range nodes {
		if tree.Tokens[n] != accepted[i] || (i > 0 && tree.Parent[n] != nodes[i-1]) || (i == 0 && tree.Parent[n] != -1) {
			t.Fatalf("AcceptPath %v does not walk down to %v", nodes, accepted)
		}
	}
	p := tree.Prefix(2)
	if p.Len() != 2 || p.Parent[1] >= 1 || tree.Prefix(100).Len() != tree.Len() || tree.Prefix(-1).Len() != 0 {
		t.Fatalf("Prefix(2) = %+v", p)
	}
	d := NGramTreeDrafter{MinN: 1, MaxN: 2, Width: 3}
	history := []int32{1, 2, 3, 4, 1, 2, 5, 6, 1, 2}
	if got := d.Draft(history, 3); !slices.Equal(got, []int32{5, 6, 1}) {
		t.Fatalf("first branch %v, want [5 6 1] (the most recent occurrence's continuation)", got)
	}
}

// TestOracleTreeDrafter: the right continuation first, then wrong branches
// that share none of its first tokens.
func TestOracleTreeDrafter(t *testing.T) {
	d := OracleTreeDrafter{Oracle: OracleDrafter{Continuation: []int32{5, 0, 9}, PromptLen: 2}, Width: 3}
	tree := d.DraftTree([]int32{1, 2}, 3)
	if tree.Len() != 9 || !slices.Equal(tree.Tokens[:3], []int32{5, 0, 9}) || tree.Parent[3] != -1 || tree.Parent[6] != -1 {
		t.Fatalf("tree %+v", tree)
	}
	if accepted, bonus := tree.Accept([]int32{5, 0, 9, 4, 0, 0, 0, 0, 0, 0}); !slices.Equal(accepted, []int32{5, 0, 9}) || bonus != 4 {
		t.Fatalf("accepted %v, bonus %d", accepted, bonus)
	}
	if d.DraftTree([]int32{1, 2, 7}, 3) != nil {
		t.Fatal("a tree past the continuation")
	}
}
