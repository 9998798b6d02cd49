package qwen

import (
	"fmt"

	"bagel/ops"
)

// ForwardPrompts runs a prompt chunk of each of several sequences in one
// forward: chunks[b] at caches[b]'s position, entering that cache. The
// projections, the experts and the norms run once over every chunk's rows
// (a batch's joining prompts read each weight once, not once a prompt);
// each sequence's conv, GDN rule and attention run over its own rows and
// state, as its Forward would. Each chunk must be at least the plan's
// ops.Plan.PromptMin tokens: alone it takes the prompt path, as it does
// here, and every kernel of that path computes a row from that row alone, so
// each sequence's cache gets the bits its own Forward would give it (the
// engine's tests hold it to that). It computes no logits (a prefill chunk
// needs none): it returns the rows' final hidden states, bf16 [T, hidden],
// the chunks' rows in order, in scratch. Where the MTP head drafts, each
// sequence's head cache is kept in step as its Forward keeps it.
func (m *Model) ForwardPrompts(c *ops.Ctx, caches []*Cache, chunks [][]int32) (ops.Tensor, error) {
	counts, err := m.checkPrompts(c.Plan.PromptMin(), caches, chunks)
	if err != nil {
		return ops.Tensor{}, err
	}
	var tokens []int32
	for _, ch := range chunks {
		tokens = append(tokens, ch...)
	}
	ids, err := m.takeIDs(c, tokens, ops.Tensor{})
	if err != nil {
		return ops.Tensor{}, err
	}
	m.prompts = true // attention takes each sequence's own partials (attention.attend)
	normed, err := m.run(c, ids, caches, counts, nil)
	m.prompts = false
	if err != nil {
		return ops.Tensor{}, err
	}
	row := 0
	for i, k := range caches {
		pos0, t := k.Offset, counts[i]
		k.Offset += t
		k.Disarm()
		m.keepHead(c, k, ids.Rows(row, row+t), normed.Rows(row, row+t), pos0, t)
		row += t
	}
	return normed, nil
}

// checkPrompts refuses prompt chunks ForwardPrompts does not run, and
// returns their lengths.
func (m *Model) checkPrompts(promptMin int, caches []*Cache, chunks [][]int32) ([]int, error) {
	if len(caches) == 0 || len(caches) != len(chunks) {
		return nil, fmt.Errorf("prompts together: %d chunks for %d sequences", len(chunks), len(caches))
	}
	counts := make([]int, len(chunks))
	for i, ch := range chunks {
		k := caches[i]
		if len(ch) < promptMin {
			return nil, fmt.Errorf("prompts together: sequence %d has %d tokens; a chunk under %d takes the step kernels alone", i, len(ch), promptMin)
		}
		if k.Offset+len(ch) > k.Capacity {
			return nil, fmt.Errorf("context full: sequence %d's %d tokens at position %d exceed the context length %d", i, len(ch), k.Offset, k.Capacity)
		}
		for _, other := range caches[:i] {
			if other == k {
				return nil, fmt.Errorf("prompts together: sequence %d shares its cache with another", i)
			}
		}
		if err := m.checkIDs(ch); err != nil {
			return nil, err
		}
		counts[i] = len(ch)
	}
	return counts, nil
}
