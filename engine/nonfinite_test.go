package engine

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"bagel/internal/testmodel"
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

// TestNonFiniteRowEndsItsReplyAlone: in a batch, a reply whose row of
// logits is not finite (its token's embedding overflows) ends with the
// non-finite error, and the replies stepping beside it go on to their own
// replies alone, greedy, sampled and drafting, in steps one at a time or
// pipelined.
func TestNonFiniteRowEndsItsReplyAlone(t *testing.T) {
	const poisoned = 777
	dir := copyModel(t, "tiny-moe")
	poisonTensor(t, filepath.Join(dir, "model.safetensors"), "language_model.model.embed_tokens.scales", poisoned, 0x7f7f)
	e, err := Load(dir, Options{Backend: "cpu", ContextLength: 128, PromptCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	defer switches.Reset(SwitchSpeculative)
	if err := switches.Set(SwitchSpeculative, true); err != nil {
		t.Fatal(err)
	}
	reqs := []Request{
		{PromptIDs: batchPrompt(0), MaxTokens: 8, IgnoreStop: true},
		{PromptIDs: append(batchPrompt(1), poisoned), MaxTokens: 8, IgnoreStop: true},
		{PromptIDs: batchPrompt(2), MaxTokens: 8, IgnoreStop: true, Sampling: Sampling{Temperature: 0.8, TopK: 20, TopP: 1, Seed: 3}},
		{PromptIDs: batchPrompt(3), MaxTokens: 8, IgnoreStop: true, TreeWidth: 2},
	}
	check := func(how string, reqs []Request) {
		t.Helper()
		got, done := runBatch(t, e, reqs, 96)
		if done[1].Kind != EventError || done[1].Err == nil || !strings.Contains(done[1].Err.Error(), "non-finite") {
			t.Errorf("%s: the poisoned reply ended with %+v, want the non-finite error", how, done[1])
		}
		for i := range reqs {
			if i == 1 {
				continue
			}
			if want := solo(t, e, reqs[i]); done[i].Kind != EventDone || !slices.Equal(got[i], want) {
				t.Errorf("%s: reply %d beside it ended %v %v: %v, alone %v", how, i, done[i].Kind, done[i].Err, got[i], want)
			}
		}
	}
	check("drafting", reqs)
	if err := switches.Set(SwitchSpeculative, false); err != nil {
		t.Fatal(err)
	}
	check("pipelined", reqs[:2]) // greedy replies without drafts: the batch pipeline
}

// TestNonFiniteMidReplyPipelined: a greedy reply whose own third token's
// embedding overflows, decoded with the pipeline (each step launched on the
// device's pick before the host reads it), sends its first three tokens and
// ends with the non-finite error: the step launched on the failed pick (−1)
// reads inside the embedding table.
func TestNonFiniteMidReplyPipelined(t *testing.T) {
	req := Request{PromptIDs: batchPrompt(2), MaxTokens: 8, IgnoreStop: true}
	healthy, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 128, PromptCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	plain := solo(t, healthy, req)
	healthy.Close()
	dir := copyModel(t, "tiny-moe")
	poisonTensor(t, filepath.Join(dir, "model.safetensors"), "language_model.model.embed_tokens.scales", int(plain[2]), 0x7f7f)
	e, err := Load(dir, Options{Backend: "cpu", ContextLength: 128, PromptCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if !e.CanPipeline() {
		t.Skip("the CPU backend does not pipeline here")
	}
	var got []int32
	var last Event
	for ev := range e.Generate(context.Background(), req) {
		if ev.Kind == EventToken {
			got = append(got, ev.Token)
		}
		last = ev
	}
	if !slices.Equal(got, plain[:3]) || last.Kind != EventError || !strings.Contains(last.Err.Error(), "non-finite") {
		t.Errorf("sent %v, ended with %v %v; want %v, then the non-finite error", got, last.Kind, last.Err, plain[:3])
	}
}
