package engine

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestFindNonFinite: a healthy model is finite everywhere; a model whose
// layer-1 MLP norm weight holds huge (finite) values overflows in layer 1's
// MLP, and FindNonFinite names layer 1 and nothing before it.
func TestFindNonFinite(t *testing.T) {
	ids := []int32{9707, 11, 1246, 525, 3555, 30, 2585, 374}
	healthy, err := Load(copyModel(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 32})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := healthy.FindNonFinite(ids)
	healthy.Close()
	if err != nil || bad != nil {
		t.Fatalf("healthy model: %v, %v", bad, err)
	}

	dir := copyModel(t, "tiny-moe")
	for i := range 64 { // the largest finite bf16: finite weights, overflowing products
		poisonTensor(t, filepath.Join(dir, "model.safetensors"), "language_model.model.layers.1.post_attention_layernorm.weight", i, 0x7f7f)
	}
	e, err := Load(dir, Options{Backend: "cpu", ContextLength: 32})
	if err != nil {
		t.Fatalf("the weights are finite, so the load must pass: %v", err)
	}
	defer e.Close()
	bad, err = e.FindNonFinite(ids)
	if err != nil {
		t.Fatal(err)
	}
	if bad == nil || bad.Layer != 1 || !strings.Contains(bad.String(), "layer 1 (gated DeltaNet)") {
		t.Fatalf("want layer 1 named, got %v", bad)
	}
	t.Log(bad)
	// The cache is usable afterwards.
	if _, err := e.forward(ids[:2], false); err != nil {
		t.Fatal(err)
	}
}
