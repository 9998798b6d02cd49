// Package drafter proposes draft tokens for speculative decoding: cheap guesses
// of the next few tokens that the model then verifies in one forward pass,
// keeping the longest prefix it agrees with. A drafter sees token ids only;
// it needs no model, so it is pure Go and tested on the host.
package drafter

// Drafter proposes up to k tokens to follow history (the prompt and the tokens
// generated so far, oldest first). It may return fewer, or none when it has no
// guess; the caller then decodes one token the plain way. The result is a new
// slice: the caller may keep it while history grows.
type Drafter interface {
	Draft(history []int32, k int) []int32
}

// NeverDrafter proposes nothing. With it the speculative driver decodes one
// token per step, which measures the driver's own overhead.
type NeverDrafter struct{}

// Draft returns nil.
func (NeverDrafter) Draft(history []int32, k int) []int32 { return nil }
