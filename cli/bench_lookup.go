package cli

import (
	"fmt"
	"slices"

	"bagel/engine"
	"bagel/tokenizer"
)

// lookupMessages asks for a reply that repeats most of its prompt (code to
// edit), where prompt lookup, the n-gram drafter, pays on a real model.
var lookupMessages = []tokenizer.Message{{Role: "user", Content: "func add(a, b int) int {\n\treturn a + b\n}\n\n" +
	"func sub(a, b int) int {\n\treturn a - b\n}\n\n" +
	"Rewrite both functions to take int64 instead of int, keeping everything else the same."}}

// lookupRow names the code-editing rows.
const lookupRow = "decode greedy, code-editing prompt"

// lookup records greedy decoding of a reply to lookupMessages with the
// speculative switch off, then on with the engine's own drafter (prompt
// lookup): the n-gram drafter's speed-up where a reply repeats text. Random
// weights need not repeat the code (the synthetic checkpoints' greedy replies
// fall into loops of their own, which prompt lookup catches too), so on them
// the row measures the drafter on that reply, not on a real model's. It
// returns false, recording nothing, for a model folder without a tokenizer
// or a backend without the switch.
func (b *bench) lookup() (bool, error) {
	if !slices.ContainsFunc(engine.Switches(), func(s engine.Switch) bool { return s.Name == engine.SwitchSpeculative }) {
		return false, nil
	}
	ids, err := b.e.PromptTokens(engine.Request{Messages: lookupMessages})
	if err != nil {
		return false, nil // no tokenizer or chat template: no text to ask
	}
	was := engine.SwitchOn(engine.SwitchSpeculative)
	defer engine.SetSwitch(engine.SwitchSpeculative, was)
	for _, on := range []bool{false, true} {
		if err := engine.SetSwitch(engine.SwitchSpeculative, on); err != nil {
			return false, err
		}
		var all []engine.Stats
		for r := range b.runs {
			b.progress(fmt.Sprintf("%s, %s=%s (run %d/%d)", lookupRow, engine.SwitchSpeculative, onOff(on), r+1, b.runs))
			st, _, err := b.generate(ids, b.tokens, engine.Sampling{}, nil, 0)
			if err != nil {
				return false, fmt.Errorf("%s: %w", lookupRow, err)
			}
			all = append(all, st)
		}
		slices.SortFunc(all, func(x, y engine.Stats) int { return int(1e6 * (x.DecodeTokensPerSec - y.DecodeTokensPerSec)) })
		st := all[len(all)/2]
		name := lookupRow
		if st.DraftProposed > 0 {
			name += fmt.Sprintf(" (%d/%d accepted)", st.DraftAccepted, st.DraftProposed)
		}
		b.add(name, engine.SwitchSpeculative+"="+onOff(on), st)
	}
	return true, nil
}
