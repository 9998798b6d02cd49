package drafter

// OracleDrafter replays a known continuation: the reply the target model is
// known to give (from an earlier greedy run). Every draft is then accepted,
// which measures the best speed-up speculative decoding can reach at a given
// draft length: `bagel bench` uses it, not the app.
type OracleDrafter struct {
	Continuation []int32 // the tokens that follow the prompt
	PromptLen    int     // history[:PromptLen] is the prompt
}

// Draft proposes the next k tokens of the continuation, or nil when the
// history has left it (the generated tokens are not a prefix of it).
func (d OracleDrafter) Draft(history []int32, k int) []int32 {
	if k < 1 || d.PromptLen < 0 || d.PromptLen > len(history) {
		return nil
	}
	done := history[d.PromptLen:]
	if len(done) > len(d.Continuation) || !equal(done, d.Continuation[:len(done)]) {
		return nil
	}
	rest := d.Continuation[len(done):]
	if len(rest) == 0 {
		return nil
	}
	return append([]int32(nil), rest[:min(k, len(rest))]...)
}
