package engine

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"bagel/switches"
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

// TestOverflowStopsEveryPick: a model whose logits overflow stops its reply
// with the non-finite error whichever way the token is picked: greedy on the
// device (the top-1 kernels' log-sum-exp is NaN), on the host, a top-k on the
// device, and greedy with speculative decoding.
func TestOverflowStopsEveryPick(t *testing.T) {
	dir := copyModel(t, "tiny-moe")
	for i := range 64 {
		poisonTensor(t, filepath.Join(dir, "model.safetensors"), "language_model.model.layers.1.post_attention_layernorm.weight", i, 0x7f7f)
	}
	e, err := Load(dir, Options{Backend: "cpu", ContextLength: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	defer switches.Reset()
	for _, c := range []struct {
		name     string
		switches map[string]bool
		sampling Sampling
	}{
		{"greedy on the device", map[string]bool{SwitchDeviceArgmax: true}, Sampling{}},
		{"greedy on the host", map[string]bool{SwitchDeviceArgmax: false}, Sampling{}},
		{"top-k on the device", map[string]bool{SwitchDeviceTopK: true}, Sampling{Temperature: 0.7, TopK: 20, TopP: 1, Seed: 1}},
		{"speculative greedy", map[string]bool{SwitchSpeculative: true}, Sampling{}},
	} {
		switches.Reset()
		for name, on := range c.switches {
			if err := switches.Set(name, on); err != nil {
				t.Fatal(err)
			}
		}
		var got error
		for ev := range e.Generate(context.Background(), Request{PromptIDs: []int32{9707, 11, 1246, 525}, MaxTokens: 4, Sampling: c.sampling}) {
			if ev.Kind == EventError {
				got = ev.Err
			}
		}
		if got == nil || !strings.Contains(got.Error(), "non-finite") {
			t.Errorf("%s: error %v, want the non-finite error", c.name, got)
		}
	}
}
