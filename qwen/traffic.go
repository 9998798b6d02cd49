package qwen

import "bagel/ops"

// DecodeWeightBytes is what one decode token reads of the weights: every
// linear layer whole (codes, scales and biases) except the stacked experts,
// of which only ExpertsPerToken of NumExperts are read, and the embedding, of
// which one row is; plus the norms and the GDN parameters. It is the
// numerator of the effective weight bandwidth `bagel bench` reports: divided
// by the time per token, it says how close decode is to the memory's speed.
func (m *Model) DecodeWeightBytes() int64 {
	cfg := m.Cfg
	var total int64
	count := func(ws []weight) {
		for _, w := range ws {
			switch {
			case w.kind == kindLinear && w.lin != nil:
				total += m.productBytes(w.lin)
			case w.dst != nil:
				total += int64(w.dst.Bytes())
			}
		}
	}
	for _, w := range m.weights() {
		if w.lin == &m.embed {
			rowBytes := int64(m.embed.W.Bytes()+m.embed.Scales.Bytes()+m.embed.Bias.Bytes()) / int64(cfg.VocabSize)
			total += rowBytes
			if cfg.TieWordEmbeddings { // the head reads the whole table
				total += rowBytes * int64(cfg.VocabSize)
			}
			continue
		}
		count([]weight{w})
	}
	for i, l := range m.layers {
		count(l.weights(cfg, i))
	}
	return total
}

// productBytes is what one decode product by q reads of it: codes, scales and
// biases, of an expert stack only the experts the router picks.
func (m *Model) productBytes(q *ops.QLinear) int64 {
	bytes := int64(q.W.Bytes() + q.Scales.Bytes() + q.Bias.Bytes())
	if q.Experts > 0 {
		bytes = bytes / int64(q.Experts) * int64(min(m.Cfg.ExpertsPerToken, q.Experts))
	}
	return bytes
}
