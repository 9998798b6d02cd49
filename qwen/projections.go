package qwen

import "bagel/ops"

// Projection is one shape of the quantized matrices a decode token multiplies
// by, for timing the GEMV on it alone (engine.TimeProjections, `bagel bench
// --projections`): the effective bandwidth of each shape is what the decode
// path's kernels are tuned against.
type Projection struct {
	Name string      // the first matrix of the shape, e.g. "model.layers.0.mlp.switch_mlp.gate_proj"
	W    ops.QLinear // that matrix
	// PerToken is how many products of the shape a decode token makes (a
	// product of an expert stack reads the router's ExpertsPerToken experts).
	PerToken int
	Bytes    int64 // what one product reads of the matrix (DecodeWeightBytes' measure)
}

// Projections lists the model's quantized matrices by shape (rows, input
// width, bits, group size, stacked or not), in the order a forward first
// meets them, the head last. The embedding table is not among them: a token
// reads one row of it (unless it is also the head).
func (m *Model) Projections() []Projection {
	type key struct {
		out, in, bits, gs int
		stacked           bool
	}
	index := map[key]int{}
	var ps []Projection
	add := func(name string, q *ops.QLinear) {
		k := key{q.Out, q.In, q.Bits, q.GroupSize, q.Experts > 0}
		if i, ok := index[k]; ok {
			ps[i].PerToken++
			return
		}
		index[k] = len(ps)
		ps = append(ps, Projection{Name: name, W: *q, PerToken: 1, Bytes: m.productBytes(q)})
	}
	for i, l := range m.layers {
		for _, w := range l.weights(m.Cfg, i) {
			if w.kind == kindLinear && w.lin != nil {
				add(w.name, w.lin)
			}
		}
	}
	head := "lm_head"
	if m.Cfg.TieWordEmbeddings {
		head = "model.embed_tokens (the head)"
	}
	add(head, &m.lmHead)
	return ps
}
