package engine

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"bagel/internal/testmodel"
	"bagel/switches"
)

// sampledReply is a seeded sampled reply with device sampling and the decode
// pipeline as given.
func sampledReply(t *testing.T, e *Engine, req Request, onDevice, pipeline bool) ([]int32, Event) {
	t.Helper()
	if err := switches.Set(SwitchDeviceSampling, onDevice); err != nil {
		t.Fatal(err)
	}
	return greedyReply(t, e, req, pipeline) // greedy or not, as req.Sampling says
}

// TestDeviceSamplingDrawsAsTheHost: a seeded reply drawn on the device (the
// host reading back the token alone) is the host sampler's reply, with and
// without the decode pipeline; a stop token ends the pipelined one where it
// ends the plain one; and a repetition penalty keeps the host's draw.
func TestDeviceSamplingDrawsAsTheHost(t *testing.T) {
	defer switches.Reset(SwitchDeviceSampling)
	defer switches.Reset(SwitchDecodePipeline)
	prompt := []int32{9707, 11, 1246, 525, 3555, 30}
	for _, model := range []string{"tiny-moe", "tiny-dense"} {
		e, err := Load(testmodel.Weights(t, model), Options{Backend: "cpu", ContextLength: 64})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []Sampling{
			{Temperature: 0.7, TopP: 0.8, TopK: 20, Seed: 7},
			{Temperature: 1.3, TopK: 50, MinP: 0.02, Seed: 11},
			{Temperature: 0.6, TopP: 0.95, TopK: 20, RepetitionPenalty: 1, Seed: 3},
		} {
			req := Request{PromptIDs: prompt, MaxTokens: 16, IgnoreStop: true, Sampling: s}
			host, _ := sampledReply(t, e, req, false, false)
			device, done := sampledReply(t, e, req, true, false)
			piped, _ := sampledReply(t, e, req, true, true)
			if !slices.Equal(host, device) || !slices.Equal(device, piped) {
				t.Errorf("%s %+v: host %v\ndevice %v\npipelined %v", model, s, host, device, piped)
			}
			if !done.Stats.SampledOnDevice {
				t.Errorf("%s %+v: not sampled on the device: %+v", model, s, done.Stats)
			}
			stop := host[9]
			e.eos = append(e.eos, stop)
			req.IgnoreStop = false
			plain, _ := sampledReply(t, e, req, true, false)
			piped, pipedDone := sampledReply(t, e, req, true, true)
			if !slices.Equal(plain, piped) || pipedDone.Reason != ReasonStop {
				t.Errorf("%s %+v, to the stop token %d: pipelined %v (%s), plain %v", model, s, stop, piped, pipedDone.Reason, plain)
			}
			e.eos = e.eos[:len(e.eos)-1]
		}
		// A repetition penalty: the host draws, whatever the switch says.
		req := Request{PromptIDs: prompt, MaxTokens: 8, IgnoreStop: true,
			Sampling: Sampling{Temperature: 0.7, TopK: 20, RepetitionPenalty: 1.2, Seed: 5}}
		a, _ := sampledReply(t, e, req, false, false)
		b, _ := sampledReply(t, e, req, true, true)
		if !slices.Equal(a, b) {
			t.Errorf("%s with a repetition penalty: %v, switches on %v", model, b, a)
		}
		e.Close()
	}
}

// TestDrawnTokenReportsNonFinite: the draw's −1 (logits not all finite) stops
// the reply as the host's checks do.
func TestDrawnTokenReportsNonFinite(t *testing.T) {
	raw := make([]byte, 4)
	binary.LittleEndian.PutUint32(raw, uint32(0xffffffff))
	if _, err := drawnToken(raw); !errors.Is(err, errNonFinite) {
		t.Errorf("−1 read back: %v, want errNonFinite", err)
	}
	binary.LittleEndian.PutUint32(raw, 4242)
	if id, err := drawnToken(raw); id != 4242 || err != nil {
		t.Errorf("4242 read back: %d, %v", id, err)
	}
}
