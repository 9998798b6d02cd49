package qwen

import (
	"fmt"

	"bagel/ops"
)

// A draft tree's verify (speculative decoding with several guesses per
// depth): ForwardTree runs the tree's nodes, flattened parents first, in one
// forward in which each node sees only its own path (ops/tree.go), and
// CommitTree then keeps one path: the attention layers' keys and values of
// its nodes move to the positions after the context, and the GDN layers,
// whose window and state the tree left as they were, replay the path's
// recorded inputs.

// treeStep is a tree forward's layout on the device, i32 [T] each.
type treeStep struct {
	parent ops.Tensor // the node before each on its path, −1 for the root
	pos    ops.Tensor // RoPE positions: the cache's offset plus the node's depth
	mask   ops.Tensor // bit j: node j is the node or one of its ancestors
}

// checkTree checks a flattened tree of parents: node 0 the root (−1), every
// other node's parent an earlier node, at most the record's rows (a verify
// is replayed from its record) and ops.TreeMaxNodes.
func checkTree(parent []int) error {
	if len(parent) == 0 || len(parent) > min(RecordRows, ops.TreeMaxNodes) {
		return fmt.Errorf("draft tree of %d nodes, want 1 to %d", len(parent), min(RecordRows, ops.TreeMaxNodes))
	}
	if parent[0] != -1 {
		return fmt.Errorf("draft tree: node 0 has parent %d, want −1 (the root)", parent[0])
	}
	for t, p := range parent[1:] {
		if p < 0 || p > t {
			return fmt.Errorf("draft tree: node %d has parent %d, want 0 to %d", t+1, p, t)
		}
	}
	return nil
}

// treeLayout is a tree's parents, RoPE positions (from pos0) and masks.
func treeLayout(parent []int, pos0 int) (par, pos, mask []int32) {
	par, pos, mask = make([]int32, len(parent)), make([]int32, len(parent)), make([]int32, len(parent))
	for t, p := range parent {
		par[t], pos[t], mask[t] = int32(p), int32(pos0), int32(uint32(1)<<t)
		if p >= 0 {
			pos[t] = pos[p] + 1
			mask[t] |= mask[p]
		}
	}
	return par, pos, mask
}

// ForwardTree runs a draft tree's nodes (tokens, flattened parents first;
// parent[t] the node before t, −1 for node 0, the root, which follows the
// context) at the cache's offset and returns the logits f32 [T, vocab] of
// every node. The cache's length grows by T (each node's key and value at
// offset + its index), its GDN windows and states stay as they were, and the
// GDN layers' inputs are recorded for CommitTree, which must follow.
func (m *Model) ForwardTree(c *ops.Ctx, cache *Cache, tokens []int32, parent []int) (ops.Tensor, error) {
	if err := m.checkTreeOf(tokens, parent); err != nil {
		return ops.Tensor{}, err
	}
	if err := cache.ArmRecord(c, m); err != nil {
		return ops.Tensor{}, err
	}
	tr, err := writeTree(c, cache, parent, 0)
	if err != nil {
		return ops.Tensor{}, err
	}
	m.trees = []*treeStep{tr}
	defer func() { m.trees = nil }()
	return m.forward(c, cache, tokens, ops.Tensor{}, true, nil)
}

// checkTreeOf refuses a draft tree's tokens and parents that do not agree
// or a tree the tree kernels cannot run.
func (m *Model) checkTreeOf(tokens []int32, parent []int) error {
	if len(tokens) != len(parent) {
		return fmt.Errorf("draft tree: %d tokens for %d parents", len(tokens), len(parent))
	}
	if err := checkTree(parent); err != nil {
		return err
	}
	if m.Cfg.HeadDim > ops.AttnPrepMaxD {
		return fmt.Errorf("draft tree: attention heads of %d dims, at most %d", m.Cfg.HeadDim, ops.AttnPrepMaxD)
	}
	return nil
}

// treeNames are the scratch names of the trees of a forward's sequences.
var treeNames = func() (names [MaxBatch][3]string) {
	for i := range names {
		for j, what := range []string{"parent", "pos", "mask"} {
			names[i][j] = fmt.Sprintf("tree.%s.%d", what, i)
		}
	}
	return names
}()

// writeTree writes the layout of a tree of parents at cache's offset to the
// device, in scratch of the forward's sequence i.
func writeTree(c *ops.Ctx, cache *Cache, parent []int, i int) (*treeStep, error) {
	par, pos, mask := treeLayout(parent, cache.Offset+cache.ropeShift)
	t, s, names := len(parent), c.Scratch, treeNames[i]
	tr := &treeStep{parent: s.Get(names[0], ops.I32, t), pos: s.Get(names[1], ops.I32, t), mask: s.Get(names[2], ops.I32, t)}
	for _, w := range []struct {
		dst ops.Tensor
		v   []int32
	}{{tr.parent, par}, {tr.pos, pos}, {tr.mask, mask}} {
		if err := ops.WriteInt32(c, w.dst, w.v); err != nil {
			return nil, err
		}
	}
	return tr, nil
}

// treeOf is the draft tree of the forward's sequence i, nil for none.
func (m *Model) treeOf(i int) *treeStep {
	if i < len(m.trees) {
		return m.trees[i]
	}
	return nil
}

// CommitTree keeps the path of nodes path (increasing indices from 0, the
// root) of the last ForwardTree, which began at offset pos0: the cache then
// holds the context and the path's tokens, as a forward of them would leave
// it. The attention layers' keys and values of the path's nodes move to
// pos0, pos0 + 1, ...; every GDN layer replays the path's recorded inputs.
// A tree that rode in a batched step (ForwardTrees) commits the same way,
// from its rows of the model's batch record.
func (k *Cache) CommitTree(c *ops.Ctx, m *Model, pos0 int, path []int) error {
	if len(path) == 0 || path[0] != 0 || pos0+len(path) > k.Capacity {
		return fmt.Errorf("commit of path %v at %d in a cache of %d", path, pos0, k.Capacity)
	}
	if len(k.replay) != len(k.layers) {
		return fmt.Errorf("commit of path %v: the last forward recorded no tree", path)
	}
	for i := 1; i < len(path); i++ {
		if path[i] <= path[i-1] {
			return fmt.Errorf("commit: path %v does not go down the tree", path)
		}
	}
	for i, l := range k.layers {
		r := k.replay[i] // the tree's recorded rows: the cache's record, or its rows of the batch record
		for n, node := range path {
			if node == n {
				continue // already in place: the path is a prefix of the order so far
			}
			if r == nil { // attention: node's key and value to position pos0 + n
				for _, t := range []ops.Tensor{l.keys, l.values} {
					for h := range t.Shape[0] {
						head := t.Rows(h, h+1).Reshape(t.Shape[1], t.Shape[2])
						ops.Copy(c, head.Rows(pos0+node, pos0+node+1), head.Rows(pos0+n, pos0+n+1))
					}
				}
				continue
			}
			for _, t := range []ops.Tensor{r.qkv, r.z, r.a, r.b} { // GDN: the record's row to row n
				ops.Copy(c, t.Rows(node, node+1), t.Rows(n, n+1))
			}
		}
	}
	k.Offset = pos0
	return k.ReplayGDN(c, m, len(path))
}
