package engine

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"bagel/drafter"
	"bagel/internal/testmodel"
	"bagel/switches"
)

// TestDeviceArgmaxMatchesHost generates greedily with the token picked on the
// device and on the host: the same tokens, and the stats say which path ran.
func TestDeviceArgmaxMatchesHost(t *testing.T) {
	e, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	defer switches.Reset(SwitchDeviceArgmax)
	req := Request{PromptIDs: []int32{9707, 11, 1246, 525, 3555}, MaxTokens: 24}
	onDevice, doneDevice := generateWith(t, e, SwitchDeviceArgmax, true, req)
	onHost, doneHost := generateWith(t, e, SwitchDeviceArgmax, false, req)
	if !slices.Equal(onDevice, onHost) {
		t.Errorf("device argmax %v\nhost argmax   %v", onDevice, onHost)
	}
	if !doneDevice.Stats.SampledOnDevice || doneHost.Stats.SampledOnDevice {
		t.Errorf("SampledOnDevice %v with the switch on, %v off", doneDevice.Stats.SampledOnDevice, doneHost.Stats.SampledOnDevice)
	}
	// With a repetition penalty the device's top 1 of the penalized logits
	// picks (device-topk); without that switch the host reads the logits. A
	// penalty below 1 favours the tokens seen, so that it shows in a reply of
	// the random model, which repeats nothing unprompted.
	req.Sampling.RepetitionPenalty = 0.5
	defer switches.Reset(SwitchDeviceTopK)
	penalized, done := generateWith(t, e, SwitchDeviceTopK, true, req)
	if !done.Stats.SampledOnDevice {
		t.Error("greedy with a repetition penalty not picked on the device")
	}
	onHost, done = generateWith(t, e, SwitchDeviceTopK, false, req)
	if done.Stats.SampledOnDevice || !slices.Equal(penalized, onHost) {
		t.Errorf("penalized greedy on the device %v\non the host %v (SampledOnDevice %v)", penalized, onHost, done.Stats.SampledOnDevice)
	}
	if slices.Equal(penalized, onDevice) {
		t.Errorf("the repetition penalty changed nothing: %v", penalized)
	}
}

// TestIgnoreStopDecodesToMaxTokens makes a token the greedy reply is known to
// produce an end-of-sequence token: without IgnoreStop the reply stops there,
// with it the reply runs to MaxTokens.
func TestIgnoreStopDecodesToMaxTokens(t *testing.T) {
	e, err := Load(testmodel.Weights(t, "tiny-dense"), Options{Backend: "cpu", ContextLength: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.eos = nil
	req := Request{PromptIDs: []int32{1, 2, 3}, MaxTokens: 6}
	first, _, _ := collect(t, e.Generate(context.Background(), req))
	// Make the second generated token an end-of-sequence token.
	e.eos = []int32{first[1]}
	stopAt := slices.Index(first, first[1]) // the stop token itself is not delivered
	if ids, _, done := collect(t, e.Generate(context.Background(), req)); done.Reason != ReasonStop || len(ids) != stopAt {
		t.Fatalf("without IgnoreStop: %v tokens, reason %q", ids, done.Reason)
	}
	req.IgnoreStop = true
	if ids, _, done := collect(t, e.Generate(context.Background(), req)); done.Reason != ReasonLength || len(ids) != 6 {
		t.Fatalf("with IgnoreStop: %v tokens, reason %q", ids, done.Reason)
	}
}

// TestDeviceTopKMatchesHost samples with a top-k (and top-p, min-p and a
// repetition penalty) from the device's candidates and from the host's
// logits: the same seed gives the same tokens.
func TestDeviceTopKMatchesHost(t *testing.T) {
	e, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	defer switches.Reset(SwitchDeviceTopK)
	for _, s := range []Sampling{
		{Temperature: 0.8, TopK: 20, TopP: 0.9, MinP: 0.05, RepetitionPenalty: 1.1, Seed: 7},
		{Temperature: 1.5, TopK: 40, Seed: 3},
		{Temperature: 0.6, TopK: 1, Seed: 1},
		{Temperature: 0, RepetitionPenalty: 1.3}, // greedy, penalized on the device
		{Temperature: 0, RepetitionPenalty: 0.8, RepetitionContext: 8},
	} {
		req := Request{PromptIDs: []int32{9707, 11, 1246, 525, 3555}, MaxTokens: 24, Sampling: s}
		onDevice, doneDevice := generateWith(t, e, SwitchDeviceTopK, true, req)
		onHost, doneHost := generateWith(t, e, SwitchDeviceTopK, false, req)
		if !slices.Equal(onDevice, onHost) {
			t.Errorf("%+v:\ndevice top-k %v\nhost         %v", s, onDevice, onHost)
		}
		if !doneDevice.Stats.SampledOnDevice || doneHost.Stats.SampledOnDevice {
			t.Errorf("SampledOnDevice %v with the switch on, %v off", doneDevice.Stats.SampledOnDevice, doneHost.Stats.SampledOnDevice)
		}
	}
}

// generateWith runs req with one switch set, returning the tokens and the Done event.
func generateWith(t *testing.T, e *Engine, name string, on bool, req Request) ([]int32, Event) {
	t.Helper()
	if err := switches.Set(name, on); err != nil {
		t.Fatal(err)
	}
	ids, _, done := collect(t, e.Generate(context.Background(), req))
	return ids, done
}

// plainReply is the request the speculative tests share (40 tokens past a
// fixed prompt, stop tokens ignored), e's plain greedy reply to it, and an
// oracle drafter that replays that reply.
func plainReply(t *testing.T, e *Engine) (Request, []int32, drafter.OracleDrafter) {
	t.Helper()
	prompt := []int32{9707, 11, 1246, 525, 3555, 30, 2585}
	req := Request{PromptIDs: prompt, MaxTokens: 40, IgnoreStop: true}
	plain, _ := generateWith(t, e, SwitchSpeculative, false, req)
	return req, plain, drafter.OracleDrafter{Continuation: plain, PromptLen: len(prompt)}
}

func TestNonFiniteLogitsStopTheReply(t *testing.T) {
	if !finiteLogits([]float32{1, -3, 0}) {
		t.Error("finite logits reported non-finite")
	}
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		if finiteLogits([]float32{1, bad, 2}) {
			t.Errorf("%v not caught", bad)
		}
	}
}

// TestSpeculativeGreedyEqualsPlain: greedy replies with speculative decoding
// are the plain greedy replies token for token, on both test models, whether
// the drafts are all right (an oracle replaying the plain reply), partly right
// (the oracle's guesses with every third one wrong: rollbacks) or never.
func TestSpeculativeGreedyEqualsPlain(t *testing.T) {
	defer switches.Reset(SwitchSpeculative)
	for _, name := range []string{"tiny-moe", "tiny-dense"} {
		e, err := Load(testmodel.Weights(t, name), Options{Backend: "cpu", ContextLength: 256})
		if err != nil {
			t.Fatal(err)
		}
		req, plain, oracle := plainReply(t, e)
		for _, c := range []struct {
			name     string
			d        drafter.Drafter
			accepted func(proposed, accepted int) bool
		}{
			{"oracle", oracle, func(p, a int) bool { return p > 0 && a == p }},
			{"every third wrong", everyThirdWrong{oracle}, func(p, a int) bool { return a > 0 && a < p }},
			{"always wrong", alwaysWrong{}, func(p, a int) bool { return p > 0 && a == 0 }},
		} {
			req := req
			req.Drafter = c.d
			spec, done := generateWith(t, e, SwitchSpeculative, true, req)
			if !slices.Equal(plain, spec) {
				t.Errorf("%s, %s drafts: speculative %v\nplain %v", name, c.name, spec, plain)
			}
			if st := done.Stats; !st.Speculative || !c.accepted(st.DraftProposed, st.DraftAccepted) {
				t.Errorf("%s, %s drafts: %d proposed, %d accepted", name, c.name, st.DraftProposed, st.DraftAccepted)
			}
		}
		// A longer draft: fewer steps for the same reply, which is still the plain one.
		for _, n := range []int{1, 8} {
			req := req
			req.Drafter, req.DraftLength = oracle, n
			spec, done := generateWith(t, e, SwitchSpeculative, true, req)
			st := done.Stats
			if !slices.Equal(plain, spec) || st.DraftAccepted != st.DraftProposed {
				t.Errorf("%s, draft length %d: %d/%d accepted, reply equal: %v", name, n, st.DraftAccepted, st.DraftProposed, slices.Equal(plain, spec))
			}
			// Each step guesses at most n and adds them and the bonus token.
			if steps := len(plain) - 1; st.DraftProposed > n*steps || st.DraftProposed < steps*n/(n+1)-n {
				t.Errorf("%s, draft length %d: %d guesses over a %d-token reply", name, n, st.DraftProposed, len(plain))
			}
			// Every guess kept: a verify yields its n guesses and the bonus,
			// but the last, cut short by the reply's end.
			if st.Verifies == 0 || st.TokensPerVerify() > float64(n+1) || st.TokensPerVerify() < float64(n+1)/2 || st.VerifyTime <= 0 {
				t.Errorf("%s, draft length %d: %d verifies, %.2f tokens each, %v verifying", name, n, st.Verifies, st.TokensPerVerify(), st.VerifyTime)
			}
		}
		e.Close()
	}
}

// everyThirdWrong passes its drafter's guesses with every third one changed.
type everyThirdWrong struct{ d drafter.Drafter }

func (w everyThirdWrong) Draft(history []int32, k int) []int32 {
	out := w.d.Draft(history, k)
	for i := range out {
		if (len(history)+i)%3 == 0 {
			out[i] = (out[i] + 1) % 1000
		}
	}
	return out
}

// alwaysWrong guesses token 0 four times, which the test models never pick.
type alwaysWrong struct{}

func (alwaysWrong) Draft(history []int32, k int) []int32 { return make([]int32, min(k, 4)) }

// TestDeviceFilteredMatchesHost samples with top-p or min-p and no top-k from
// the device's best candidates (the logits read only when the filters' cut
// falls past them) and from the host's logits: the same seed gives the same
// tokens, on both of the device path's branches.
func TestDeviceFilteredMatchesHost(t *testing.T) {
	e, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	defer switches.Reset(SwitchDeviceTopK)
	steps := 0
	for _, s := range []Sampling{
		{Temperature: 0.8, MinP: 0.9, Seed: 5},                                     // a cut among the best few
		{Temperature: 1.0, TopP: 0.9, Seed: 6},                                     // the random model's flat rows: past 256
		{Temperature: 0.7, TopP: 0.95, MinP: 0.5, RepetitionPenalty: 1.1, Seed: 8}, // both, penalized on the device
	} {
		req := Request{PromptIDs: []int32{9707, 11, 1246, 525, 3555}, MaxTokens: 16, IgnoreStop: true, Sampling: s}
		onDevice, doneDevice := generateWith(t, e, SwitchDeviceTopK, true, req)
		onHost, _ := generateWith(t, e, SwitchDeviceTopK, false, req)
		if !slices.Equal(onDevice, onHost) {
			t.Errorf("%+v:\ndevice candidates %v\nhost              %v", s, onDevice, onHost)
		}
		if !doneDevice.Stats.SampledOnDevice {
			t.Errorf("%+v: not sampled on the device", s)
		}
		steps += len(onDevice)
	}
	if e.filterFallbacks == 0 || e.filterFallbacks >= steps {
		t.Errorf("%d of %d steps read the logits: want both branches taken", e.filterFallbacks, steps)
	}
}

func TestCoversFilters(t *testing.T) {
	// Three candidates of a row of 100 with probabilities 0.5, 0.2, 0.1.
	c := candidates{ids: []int32{7, 3, 9}, logits: []float32{float32(math.Log(0.5)), float32(math.Log(0.2)), float32(math.Log(0.1))}}
	for _, k := range []struct {
		s    Sampling
		want bool
	}{
		{Sampling{TopP: 0.7}, true},            // 0.5 + 0.2 reaches it
		{Sampling{TopP: 0.9}, false},           // 0.8 among them: the cut is past them
		{Sampling{MinP: 0.3}, true},            // 0.1 < 0.3·0.5: cut inside
		{Sampling{MinP: 0.1}, false},           // all three pass: more may
		{Sampling{TopP: 0.9, MinP: 0.3}, true}, // one cut inside is enough
	} {
		if got := c.coversFilters(k.s, 100); got != k.want {
			t.Errorf("%+v: covers %v, want %v", k.s, got, k.want)
		}
	}
	if !c.coversFilters(Sampling{TopP: 0.99}, 3) {
		t.Error("candidates that are the whole row cover any filter")
	}
}

// TestGreedyStepsRunInBatches: greedy speculative steps run one after another
// on the device goroutine (speculator.steps), not each handed to it: a reply
// with no time limit on a batch takes a hand-over fewer a verify (but the
// first) than with a batch a step, and it is the plain greedy reply either way.
func TestGreedyStepsRunInBatches(t *testing.T) {
	defer switches.Reset(SwitchSpeculative)
	defer func(w time.Duration) { batchWall = w }(batchWall)
	e, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	req, plain, oracle := plainReply(t, e)
	req.Drafter, req.DraftLength = oracle, 2
	handovers := map[time.Duration]int64{}
	verifies := 0
	for _, wall := range []time.Duration{0, time.Hour} {
		batchWall = wall
		calls := e.loop.calls.Load()
		spec, done := generateWith(t, e, SwitchSpeculative, true, req)
		handovers[wall] = e.loop.calls.Load() - calls
		if !slices.Equal(plain, spec) {
			t.Fatalf("batches of %v: speculative %v\nplain %v", wall, spec, plain)
		}
		verifies = done.Stats.Verifies
	}
	if verifies < 10 || handovers[0]-handovers[time.Hour] < int64(verifies-1) {
		t.Errorf("%d verifies: %d hand-overs to the device goroutine with a batch a step, %d with one batch",
			verifies, handovers[0], handovers[time.Hour])
	}
}
