package ops

import (
	"bagel/backend"
	"bagel/kernels"
)

// A draft tree's verify: one forward over T nodes flattened parents first
// (parent i32 [T], −1 for the root), where each node sees only its own path.
// The GDN layers read their conv window and state and leave them as they were
// (the accepted path is replayed into them after); the attention layers
// append every node's key and value at pos0 + its index, rotated at pos0 plus
// its depth (pos i32 [T]), and let a node see its ancestors (mask i32 [T]).

// TreeMaxNodes is the most nodes a tree verify takes (one u32 of mask a node).
var TreeMaxNodes = kernels.Defines()["GDN_TREE_MAX"]

// Conv1dSiLUTree is Conv1dSiLU over a tree: each node's window is its path's
// inputs then the state's, which is read only.
func Conv1dSiLUTree(c *Ctx, x, state, w, parent, out Tensor, kernelSize int) {
	if len(x.Shape) != 2 {
		fail("conv1d tree: x %v", x)
	}
	t, ch := x.Shape[0], x.Shape[1]
	checkDType("conv1d tree parent", parent, backend.I32)
	if !(state.Elements() == (kernelSize-1)*ch && w.Elements() == ch*kernelSize && out.Elements() == t*ch &&
		parent.Elements() == t) {
		fail("conv1d tree: x %v state %v w %v parent %v out %v", x, state, w, parent, out)
	}
	c.dispatch("conv1d_silu_tree_bf16", x.Arg(), state.Arg(), w.Arg(), parent.Arg(), out.Arg(),
		backend.Int(t), backend.Int(ch), backend.Int(kernelSize))
}

// GDNRecurrenceTree is GDNRecurrence over a tree (the gates computed inside):
// each node's output is the rule's over its path from state, read only.
func GDNRecurrenceTree(c *Ctx, conv, a, b, aLog, dtBias, state, parent, out Tensor, s GDNShape) {
	checkDType("gdn state", state, backend.F32)
	checkDType("gdn tree parent", parent, backend.I32)
	t := a.Elements() / s.Hv
	if !(conv.Elements() == t*s.ConvDim() && a.Elements() == t*s.Hv && b.Elements() == t*s.Hv && aLog.Elements() == s.Hv &&
		dtBias.Elements() == s.Hv && state.Elements() == s.Hv*s.Dv*s.Dk && out.Elements() == t*s.Hv*s.Dv &&
		parent.Elements() == t && t <= TreeMaxNodes) {
		fail("gdn_recurrence tree: conv %v a %v state %v parent %v out %v shape %+v", conv, a, state, parent, out, s)
	}
	c.dispatch("gdn_recurrence_tree_bf16", conv.Arg(), a.Arg(), b.Arg(), aLog.Arg(), dtBias.Arg(), state.Arg(), parent.Arg(),
		out.Arg(), backend.Int(t), backend.Int(s.Hk), backend.Int(s.Hv), backend.Int(s.Dk), backend.Int(s.Dv))
}

// AttnPrepTree is AttnPrep over a tree: node t rotated at pos[t], its key and
// value at pos0 + t.
func AttnPrepTree(c *Ctx, qp, k, v, qNorm, kNorm, q, gate, kCache, vCache, pos Tensor, rotDims, pos0 int, theta, eps float32) {
	checkDType("attn_prep tree pos", pos, backend.I32)
	if !(len(q.Shape) == 3 && pos.Elements() == q.Shape[0]) {
		fail("attn_prep tree: q %v pos %v", q, pos)
	}
	args := attnPrepArgs(c, qp, k, v, qNorm, kNorm, q, gate, kCache, vCache, rotDims, pos0, theta, eps)
	c.dispatch("attn_prep_tree_bf16", append(append(args[:9:9], pos.Arg()), args[9:]...)...)
}

// AttentionTree is Attention over a tree, the last T of the kvLen keys: node
// t sees the keys before the tree and node j where bit j of mask[t] is set.
func AttentionTree(c *Ctx, q, kCache, vCache, mask, out Tensor, kvLen int, scale float32) {
	if !(len(q.Shape) == 3 && len(kCache.Shape) == 3) {
		fail("attention tree: q %v cache %v", q, kCache)
	}
	t, hq, d := q.Shape[0], q.Shape[1], q.Shape[2]
	hkv, capacity := kCache.Shape[0], kCache.Shape[1]
	checkDType("attention tree mask", mask, backend.I32)
	if !(hq%hkv == 0 && kCache.Shape[2] == d && out.Elements() == q.Elements() && mask.Elements() == t && t <= TreeMaxNodes) {
		fail("attention tree: q %v cache %v mask %v out %v", q, kCache, mask, out)
	}
	if !(kvLen >= t && kvLen <= capacity) {
		fail("attention tree: kvLen %d for %d nodes, capacity %d", kvLen, t, capacity)
	}
	c.dispatch("attention_tree_bf16", q.Arg(), kCache.Arg(), vCache.Arg(), mask.Arg(), out.Arg(),
		backend.Int(t), backend.Int(hq), backend.Int(hkv), backend.Int(d), backend.Int(capacity), backend.Int(kvLen), backend.Float(scale))
}

// AttnPrepMRoPE is AttnPrep with Qwen3.5's interleaved multimodal RoPE: token
// t's positions pos[t] = (t, h, w) (i32 [T, 3]), rotary frequency i turning
// by h where i % 3 == 1 and i < 3·sections[1], by w where i % 3 == 2 and
// i < 3·sections[2], by t otherwise; its key and value at pos0 + t. Heads of
// up to AttnPrepMaxD dims.
func AttnPrepMRoPE(c *Ctx, qp, k, v, qNorm, kNorm, q, gate, kCache, vCache, pos Tensor, sections [3]int, rotDims, pos0 int, theta, eps float32) {
	checkDType("attn_prep mrope pos", pos, backend.I32)
	if !(len(q.Shape) == 3 && pos.Elements() == 3*q.Shape[0] && q.Shape[2] <= AttnPrepMaxD) {
		fail("attn_prep mrope: q %v pos %v", q, pos)
	}
	args := attnPrepArgs(c, qp, k, v, qNorm, kNorm, q, gate, kCache, vCache, rotDims, pos0, theta, eps)
	// attnPrepArgs ends ..., Cap, theta, eps: the sections go between.
	args = append(append(args[:9:9], pos.Arg()), args[9:16]...)
	args = append(args, backend.Int(sections[1]), backend.Int(sections[2]), backend.Float(theta), backend.Float(eps))
	c.dispatch("attn_prep_mrope_bf16", args...)
}
