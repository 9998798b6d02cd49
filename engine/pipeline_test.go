package engine

import (
	"context"
	"slices"
	"testing"

	"bagel/internal/testmodel"
	"bagel/switches"
)

// greedyReply is the reply to req (greedy, unless req.Sampling says
// otherwise) with the decode pipeline on or off.
func greedyReply(t *testing.T, e *Engine, req Request, pipeline bool) ([]int32, Event) {
	t.Helper()
	if err := switches.Set(SwitchDecodePipeline, pipeline); err != nil {
		t.Fatal(err)
	}
	ids, _, done := collect(t, e.Generate(context.Background(), req))
	return ids, done
}

// TestDecodePipelineMatchesPlainDecode: with the next step launched before
// the last one's token is read, greedy replies are the same tokens, ending
// for the same reason, at a token limit and at the context's end, and the
// cache holds the prompt and the reply as a plain decode leaves it.
func TestDecodePipelineMatchesPlainDecode(t *testing.T) {
	defer switches.Reset(SwitchDecodePipeline)
	prompt := []int32{9707, 11, 1246, 525, 3555, 30}
	for _, model := range []string{"tiny-moe", "tiny-dense"} {
		e, err := Load(testmodel.Weights(t, model), Options{Backend: "cpu", ContextLength: 24})
		if err != nil {
			t.Fatal(err)
		}
		if !e.CanPipeline() {
			t.Fatal("the cpu backend reads back asynchronously (it runs the pipeline here)")
		}
		for _, req := range []Request{
			{PromptIDs: prompt, MaxTokens: 9, IgnoreStop: true}, // ends at its token limit
			{PromptIDs: prompt, MaxTokens: 1, IgnoreStop: true}, // the prompt's token only
			{PromptIDs: prompt, IgnoreStop: true},               // ends at the context's end
		} {
			plain, plainDone := greedyReply(t, e, req, false)
			plainOffset := e.cache.Offset
			piped, pipedDone := greedyReply(t, e, req, true)
			if !slices.Equal(plain, piped) || plainDone.Reason != pipedDone.Reason {
				t.Errorf("%s, %d tokens at most: pipelined %v (%s), plain %v (%s)", model, req.MaxTokens,
					piped, pipedDone.Reason, plain, plainDone.Reason)
			}
			if e.cache.Offset != plainOffset || pipedDone.Stats.KVLength != plainDone.Stats.KVLength {
				t.Errorf("%s, %d tokens at most: cache at %d (stats %d), plain decode %d (%d)", model, req.MaxTokens,
					e.cache.Offset, pipedDone.Stats.KVLength, plainOffset, plainDone.Stats.KVLength)
			}
		}
		e.Close()
	}
}

// TestDecodePipelineStopsOnAnEndToken: a reply ending on a stop token has had
// the step after it launched; the reply is the plain one, and the next turn,
// which reuses the held prompt state, replies as a fresh cache does.
func TestDecodePipelineStopsOnAnEndToken(t *testing.T) {
	defer switches.Reset(SwitchDecodePipeline)
	e, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	prompt := []int32{9707, 11, 1246, 525, 3555, 30}
	all, _ := greedyReply(t, e, Request{PromptIDs: prompt, MaxTokens: 8, IgnoreStop: true}, false)
	// The fourth token of the reply ends it (the first of its kind: the reply
	// stops before it).
	stop := all[3]
	e.eos = append(e.eos, stop)
	req := Request{PromptIDs: prompt, MaxTokens: 8}
	plain, plainDone := greedyReply(t, e, req, false)
	piped, done := greedyReply(t, e, req, true)
	if !slices.Equal(piped, plain) || done.Reason != ReasonStop || plainDone.Reason != ReasonStop || len(piped) > 3 {
		t.Fatalf("pipelined reply %v (%s), plain %v (%s), stopping at %d", piped, done.Reason, plain, plainDone.Reason, stop)
	}
	next := append(append(slices.Clone(prompt), piped...), 100, 200)
	warm, _ := greedyReply(t, e, Request{PromptIDs: next, MaxTokens: 5, IgnoreStop: true}, true)
	if err := switches.Set(SwitchPromptReuse, false); err != nil {
		t.Fatal(err)
	}
	defer switches.Reset(SwitchPromptReuse)
	cold, _ := greedyReply(t, e, Request{PromptIDs: next, MaxTokens: 5, IgnoreStop: true}, false)
	if !slices.Equal(warm, cold) {
		t.Errorf("the turn after a pipelined reply: %v, from a fresh cache %v", warm, cold)
	}
}

// TestGPUDecodePipeline: on each GPU backend that reads back asynchronously
// (CUDA), the pipelined greedy reply equals the plain one on the same
// backend, at a token limit and on a stop token (the step after it ran for
// nothing), and so does a reply drawn on the device; and the GPU time read
// while steps were still queued adds up.
func TestGPUDecodePipeline(t *testing.T) {
	defer switches.Reset(SwitchDecodePipeline)
	for _, backendName := range gpuBackends() {
		for _, name := range testmodel.Names {
			t.Run(backendName+"/"+name, func(t *testing.T) {
				e := loadGPU(t, testmodel.Weights(t, name), backendName, 256)
				if !e.CanPipeline() {
					t.Skipf("%s reads back synchronously", backendName)
				}
				req := Request{PromptIDs: []int32{9707, 11, 1246, 525, 3555, 30}, MaxTokens: 40, IgnoreStop: true}
				plain, _ := greedyReply(t, e, req, false)
				piped, done := greedyReply(t, e, req, true)
				if !slices.Equal(plain, piped) {
					t.Fatalf("pipelined %v, plain %v", piped, plain)
				}
				if done.Stats.GPUTimePerToken <= 0 {
					t.Errorf("no GPU time read from the pipelined steps: %+v", done.Stats)
				}
				e.eos = append(e.eos, plain[20])
				req.IgnoreStop = false
				plain, _ = greedyReply(t, e, req, false)
				piped, done = greedyReply(t, e, req, true)
				if !slices.Equal(plain, piped) || done.Reason != ReasonStop {
					t.Fatalf("to a stop token: pipelined %v (%s), plain %v", piped, done.Reason, plain)
				}
				e.eos = e.eos[:len(e.eos)-1]
				// Drawn on the device (sample_top_f32): pipelined as plain; the
				// host's f64 draw may part from the device's f32 one at a boundary.
				defer switches.Reset(SwitchDeviceSampling)
				sreq := Request{PromptIDs: req.PromptIDs, MaxTokens: 40, IgnoreStop: true,
					Sampling: Sampling{Temperature: 0.7, TopP: 0.8, TopK: 20, Seed: 7}}
				host, _ := sampledReply(t, e, sreq, false, false)
				device, _ := sampledReply(t, e, sreq, true, false)
				pipedDraw, _ := sampledReply(t, e, sreq, true, true)
				if !slices.Equal(device, pipedDraw) {
					t.Fatalf("drawn on the device: pipelined %v, plain %v", pipedDraw, device)
				}
				if !slices.Equal(host, device) {
					t.Logf("drawn on the device %v, by the host %v (a uniform on a boundary?)", device, host)
				}
			})
		}
	}
}

// TestCPUDecodesWithoutThePipeline: outside the engine's tests the CPU
// backend, whose work runs as it is dispatched, decodes step by step (a step
// launched ahead would run before the token it follows reaches the reader),
// and its reply is the pipelined one.
func TestCPUDecodesWithoutThePipeline(t *testing.T) {
	defer switches.Reset(SwitchDecodePipeline)
	e, err := Load(testmodel.Weights(t, "tiny-dense"), Options{Backend: "cpu", ContextLength: 32})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	req := Request{PromptIDs: []int32{9707, 11, 1246, 525, 3555, 30}, MaxTokens: 6, IgnoreStop: true}
	piped, _ := greedyReply(t, e, req, true)
	pipelineAtDispatch = false
	defer func() { pipelineAtDispatch = true }()
	if e.CanPipeline() {
		t.Fatal("the CPU backend runs the decode pipeline outside the engine's tests")
	}
	if plain, _ := greedyReply(t, e, req, true); !slices.Equal(plain, piped) {
		t.Errorf("without the pipeline %v, with it %v", plain, piped)
	}
}
