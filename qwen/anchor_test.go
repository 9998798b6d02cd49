package qwen

import (
	"testing"

	"bagel/safetensors"
)

// TestPackedAnchor: the anchor follows the alignment of most packed bytes, not
// of most tensors, and ignores the other dtypes.
func TestPackedAnchor(t *testing.T) {
	f := &safetensors.File{Tensors: map[string]*safetensors.Tensor{
		"big.weight":    {DType: "U32", Offset: 1000 + 8, Data: make([]byte, 4096)},
		"small1.weight": {DType: "U32", Offset: 4, Data: make([]byte, 64)},
		"small2.weight": {DType: "U32", Offset: 36, Data: make([]byte, 64)},
		"norm.weight":   {DType: "BF16", Offset: 2, Data: make([]byte, 1<<20)},
	}}
	if got := packedAnchor(f); got != 0 {
		t.Errorf("packedAnchor = %d, want 0 (1008 %% 16, the big weight)", got)
	}
	delete(f.Tensors, "big.weight")
	if got := packedAnchor(f); got != 4 {
		t.Errorf("packedAnchor = %d, want 4", got)
	}
}
