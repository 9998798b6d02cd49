package gputest

import (
	"testing"

	"bagel/cpu"
)

// TestSplitAttentionInvariance holds the CPU reference of the split-KV
// kernels to SplitAttentionInvariance (the GPUs' are held to it in their
// packages' tests): a verify's queries take the ranges and bits of their
// decode steps.
func TestSplitAttentionInvariance(t *testing.T) {
	dev := cpu.New(0)
	for _, kernel := range []string{"attention_split_f32", "attention_split_mma_f32"} {
		SplitAttentionInvariance(t, dev, kernel, SplitInvarianceShapes)
	}
}
