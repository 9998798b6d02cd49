package engine

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"bagel/backend"
	"bagel/drafter"
	"bagel/internal/testmodel"
	"bagel/switches"
	"bagel/tokenizer"
)

// mtpCase is a request to the demo model (the one test checkpoint with an
// MTP head): a question from its reference, greedy, thinking off.
func mtpCase(t *testing.T, i int) (string, Request) {
	dir, ref := loadDemo(t)
	p := ref.Prompts[i]
	return dir, Request{PromptIDs: p.PromptIDs, MaxTokens: 60}
}

// checkMTPEqualsPlain generates each reference question's reply on e plainly
// and with MTP drafts of each length, and requires the same tokens, guesses
// made and kept, and a rollback somewhere. Where the reply recites an entry
// of its books (questions 0, 3 and 4) the demo model's head guesses the next
// token right nine times in ten (CPU: 90–97%); where the reply strays from
// them (1 and 2) about one time in four, which is the model's own doubt.
func checkMTPEqualsPlain(t *testing.T, e *Engine) {
	t.Helper()
	defer switches.Reset(SwitchSpeculativeMTP)
	if why := e.MTPStatus(); why != "" {
		t.Fatalf("the demo model's MTP head: %s", why)
	}
	rollbacks := 0
	for i := range 5 {
		_, req := mtpCase(t, i)
		plain, _ := generateWith(t, e, SwitchSpeculativeMTP, false, req)
		for _, draft := range []int{1, 3} {
			req := req
			req.DraftLength = draft
			spec, done := generateWith(t, e, SwitchSpeculativeMTP, true, req)
			if !slices.Equal(plain, spec) {
				t.Errorf("question %d, drafts of %d: MTP %v\nplain %v", i, draft, spec, plain)
			}
			st := done.Stats
			if st.Verifies == 0 || st.DraftAccepted == 0 {
				t.Errorf("question %d, drafts of %d: %d verifies, %d of %d guesses kept", i, draft, st.Verifies, st.DraftAccepted, st.DraftProposed)
			}
			if recites := i == 0 || i >= 3; recites && draft == 1 && st.DraftAccepted*10 < st.DraftProposed*7 {
				t.Errorf("question %d: the head's first guesses kept %d of %d (want ≥ 70%%)", i, st.DraftAccepted, st.DraftProposed)
			}
			if st.DraftAccepted < st.DraftProposed {
				rollbacks++
			}
		}
	}
	if rollbacks == 0 {
		t.Error("every guess was kept: no rollback exercised")
	}
}

// TestMTPGreedyEqualsPlain: greedy replies drafted by the demo model's MTP
// head are its plain greedy replies token for token (CPU), with the head's
// state rolled back after partly kept drafts of 3.
func TestMTPGreedyEqualsPlain(t *testing.T) {
	dir, _ := mtpCase(t, 0)
	e, err := Load(dir, Options{Backend: "cpu", ContextLength: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	checkMTPEqualsPlain(t, e)
}

// TestGPUMTPVerifyEqualsPlain is TestMTPGreedyEqualsPlain on each GPU backend
// (the Metal simulator under make test), and the same for a random
// mixture-of-experts model's head (as bagel synth --mtp writes it).
func TestGPUMTPVerifyEqualsPlain(t *testing.T) {
	defer switches.Reset(SwitchSpeculativeMTP)
	moe := t.TempDir()
	testmodel.WriteRandom(t, moe, randomMTPSpec(true))
	for _, backendName := range gpuBackends() {
		t.Run(backendName, func(t *testing.T) {
			dir, _ := mtpCase(t, 0)
			checkMTPEqualsPlain(t, loadGPU(t, dir, backendName, 512))
			checkRandomMTPEqualsPlain(t, loadGPU(t, moe, backendName, 256), "random MoE head")
		})
	}
}

// randomMTPSpec is a small random checkpoint's shape, a mixture of experts
// or dense, with an MTP head in the checkpoint's own form (synth --mtp).
func randomMTPSpec(moe bool) testmodel.Spec {
	s := testmodel.Spec{ModelType: "qwen3_5", Hidden: 128, Layers: 4, Interval: 2, Heads: 2, KVHeads: 1, HeadDim: 256,
		Hk: 2, Hv: 4, Dk: 64, Dv: 64, ConvKernel: 4, Intermediate: 256, Vocab: 1024, Bits: 4, GroupSize: 64, MTP: true}
	if moe {
		s.ModelType, s.Intermediate, s.Experts, s.TopK, s.MoEInter, s.Share, s.RouterBits = "qwen3_5_moe", 0, 8, 2, 64, 64, 8
	}
	return s
}

// checkRandomMTPEqualsPlain requires e (a random checkpoint's, whose head can
// draft) to give its plain greedy reply with drafts of 2 from the head, and
// the head to have guessed (random weights: few guesses kept, every rollback
// path runs).
func checkRandomMTPEqualsPlain(t *testing.T, e *Engine, what string) {
	t.Helper()
	if why := e.MTPStatus(); why != "" {
		t.Fatalf("%s: MTPStatus() = %q", what, why)
	}
	req := Request{PromptIDs: []int32{5, 77, 301, 9, 640, 12, 88, 3}, MaxTokens: 30, IgnoreStop: true, DraftLength: 2}
	plain, _ := generateWith(t, e, SwitchSpeculativeMTP, false, req)
	if got, done := generateWith(t, e, SwitchSpeculativeMTP, true, req); !slices.Equal(plain, got) || done.Stats.DraftProposed == 0 {
		t.Errorf("%s: MTP %v (%d guesses)\nplain %v", what, got, done.Stats.DraftProposed, plain)
	}
}

// TestMTPAcrossTurns: a second turn that reuses the first's prompt from the
// prompt cache keeps drafting with the head (its keys and pending state
// travel in the snapshot), with the plain reply's tokens.
func TestMTPAcrossTurns(t *testing.T) {
	defer switches.Reset(SwitchSpeculativeMTP)
	dir, _ := mtpCase(t, 0)
	e, err := Load(dir, Options{Backend: "cpu", ContextLength: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	turn := func(mtp bool) ([]int32, Event) {
		_, first, _ := collect(t, e.Generate(t.Context(), Request{Messages: []tokenizer.Message{{Role: "user", Content: "What is a kludge?"}}, MaxTokens: 30}))
		msgs := []tokenizer.Message{
			{Role: "user", Content: "What is a kludge?"}, {Role: "assistant", Content: strings.TrimSpace(first)},
			{Role: "user", Content: "What is a bug?"},
		}
		return generateWith(t, e, SwitchSpeculativeMTP, mtp, Request{Messages: msgs, MaxTokens: 40, DraftLength: 1})
	}
	if err := switches.Set(SwitchSpeculativeMTP, true); err != nil {
		t.Fatal(err)
	}
	spec, done := turn(true)
	if done.Stats.ReusedPromptTokens == 0 {
		t.Fatalf("the second turn reused no prompt tokens: %+v", done.Stats)
	}
	if done.Stats.DraftAccepted == 0 {
		t.Errorf("the second turn, reusing the first, kept no MTP guess (%d proposed)", done.Stats.DraftProposed)
	}
	if err := switches.Set(SwitchSpeculativeMTP, false); err != nil {
		t.Fatal(err)
	}
	plain, _ := turn(false)
	if !slices.Equal(plain, spec) {
		t.Errorf("second turn: MTP %v\nplain %v", spec, plain)
	}
}

// TestMTPMissingIsSaid: a checkpoint without an MTP head says so where the
// switch is offered, and the switch then leaves replies to the plain path.
func TestMTPMissingIsSaid(t *testing.T) {
	defer switches.Reset(SwitchSpeculativeMTP)
	e, err := Load(testmodel.Weights(t, "tiny-dense"), Options{Backend: "cpu", ContextLength: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if why := e.MTPStatus(); !strings.Contains(why, "no MTP head") {
		t.Errorf("MTPStatus() = %q, want it to say there is no head", why)
	}
	req := Request{PromptIDs: []int32{9707, 11, 1246}, MaxTokens: 8, IgnoreStop: true}
	plain, _ := generateWith(t, e, SwitchSpeculativeMTP, false, req)
	got, done := generateWith(t, e, SwitchSpeculativeMTP, true, req)
	if !slices.Equal(plain, got) || done.Stats.DraftProposed != 0 {
		t.Errorf("with the switch on and no head: %v (%d drafts), plain %v", got, done.Stats.DraftProposed, plain)
	}
}

// TestMTPMixtureOfExperts: a mixture-of-experts model's MTP head (its layer's
// experts block under mtp.layers.0.mlp, as bagel synth --mtp writes it) loads
// and drafts, and greedy replies drafted by it are the plain ones (random
// weights: its guesses are rarely kept, every rollback path runs).
func TestMTPMixtureOfExperts(t *testing.T) {
	defer switches.Reset(SwitchSpeculativeMTP)
	dir := t.TempDir()
	testmodel.WriteRandom(t, dir, randomMTPSpec(true))
	e, err := Load(dir, Options{Backend: "cpu", ContextLength: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	checkRandomMTPEqualsPlain(t, e, "MoE head")
}

// TestSpeculativeFillsTheContextAsPlain: a greedy reply that runs to the end
// of the context gives the plain reply's tokens with any drafter. A
// speculative step's tokens used to stop at the first one sent after the
// step that filled the cache (its later tokens, already made, were dropped:
// 26 of 30 tokens with oracle drafts of 2, 29 with the MTP head).
func TestSpeculativeFillsTheContextAsPlain(t *testing.T) {
	defer switches.Reset(SwitchSpeculative, SwitchSpeculativeMTP)
	dir, req := mtpCase(t, 0)
	e, err := Load(dir, Options{Backend: "cpu", ContextLength: 48})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	req.MaxTokens = 0 // until the context is full
	plain, done := generateWith(t, e, SwitchSpeculative, false, req)
	if done.Reason != ReasonContext || len(plain) != 48-len(req.PromptIDs)+1 {
		t.Fatalf("plain: %d tokens, %s", len(plain), done.Reason)
	}
	for _, n := range []int{1, 2, 3} {
		r := req
		r.Drafter = drafter.OracleDrafter{Continuation: plain, PromptLen: len(req.PromptIDs)}
		r.DraftLength = n
		if got, _ := generateWith(t, e, SwitchSpeculative, true, r); !slices.Equal(got, plain) {
			t.Errorf("oracle drafts of %d: %d tokens %v\nplain %d %v", n, len(got), got, len(plain), plain)
		}
	}
	switches.Reset(SwitchSpeculative)
	for _, n := range []int{1, 3} {
		r := req
		r.DraftLength = n
		if got, _ := generateWith(t, e, SwitchSpeculativeMTP, true, r); !slices.Equal(got, plain) {
			t.Errorf("MTP drafts of %d: %d tokens, plain %d", n, len(got), len(plain))
		}
	}
}

// writeHFMTP writes, beside the checkpoint in dir, an MTP head in Qwen's
// release form (mtp.safetensors: bf16, transformers' names, zero-centred
// norms) for a model of the given shape, with random weights; moe writes the
// experts fused (experts.gate_up_proj, experts.down_proj).
func writeHFMTP(t *testing.T, dir string, hidden, heads, kvHeads, headDim, inter, experts, moeInter int) {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 8))
	tensors := map[string][]int{
		"mtp.fc.weight": {hidden, 2 * hidden}, "mtp.pre_fc_norm_embedding.weight": {hidden},
		"mtp.pre_fc_norm_hidden.weight": {hidden}, "mtp.norm.weight": {hidden},
		"mtp.layers.0.input_layernorm.weight": {hidden}, "mtp.layers.0.post_attention_layernorm.weight": {hidden},
		"mtp.layers.0.self_attn.q_proj.weight": {heads * headDim * 2, hidden},
		"mtp.layers.0.self_attn.k_proj.weight": {kvHeads * headDim, hidden},
		"mtp.layers.0.self_attn.v_proj.weight": {kvHeads * headDim, hidden},
		"mtp.layers.0.self_attn.o_proj.weight": {hidden, heads * headDim},
		"mtp.layers.0.self_attn.q_norm.weight": {headDim}, "mtp.layers.0.self_attn.k_norm.weight": {headDim},
	}
	m := "mtp.layers.0.mlp."
	if experts == 0 {
		tensors[m+"gate_proj.weight"], tensors[m+"up_proj.weight"] = []int{inter, hidden}, []int{inter, hidden}
		tensors[m+"down_proj.weight"] = []int{hidden, inter}
	} else {
		tensors[m+"gate.weight"] = []int{experts, hidden}
		tensors[m+"experts.gate_up_proj"] = []int{experts, 2 * moeInter, hidden}
		tensors[m+"experts.down_proj"] = []int{experts, hidden, moeInter}
		tensors[m+"shared_expert.gate_proj.weight"] = []int{moeInter, hidden}
		tensors[m+"shared_expert.up_proj.weight"] = []int{moeInter, hidden}
		tensors[m+"shared_expert.down_proj.weight"] = []int{hidden, moeInter}
		tensors[m+"shared_expert_gate.weight"] = []int{1, hidden}
	}
	names := slices.Sorted(maps.Keys(tensors))
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, name := range names {
		shape := tensors[name]
		n := 1
		for _, d := range shape {
			n *= d
		}
		std := 1 / math.Sqrt(float64(shape[len(shape)-1]))
		if len(shape) == 1 {
			std = 0.05 // a zero-centred norm: 1 + w ≈ 1
		}
		start := len(data)
		for range n {
			data = binary.LittleEndian.AppendUint16(data, backend.F32ToBF16(float32(r.NormFloat64()*std)))
		}
		header[name] = map[string]any{"dtype": "BF16", "shape": shape, "data_offsets": []int{start, len(data)}}
	}
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	file = append(append(file, h...), data...)
	if err := os.WriteFile(filepath.Join(dir, "mtp.safetensors"), file, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMTPReleaseForm: an MTP head in Qwen's release form beside a checkpoint
// (bf16, quantized to 8 bits at load, zero-centred norms; a dense model's and
// a MoE model's with its experts fused) loads and drafts, and greedy replies
// drafted by it are the plain ones.
func TestMTPReleaseForm(t *testing.T) {
	defer switches.Reset(SwitchSpeculativeMTP)
	for _, moe := range []bool{false, true} {
		dir := t.TempDir()
		spec := randomMTPSpec(moe)
		spec.MTP = false // the head comes beside the checkpoint instead
		testmodel.WriteRandom(t, dir, spec)
		writeHFMTP(t, dir, 128, 2, 1, 256, 256, spec.Experts, 64)
		e, err := Load(dir, Options{Backend: "cpu", ContextLength: 256})
		if err != nil {
			t.Fatalf("moe %v: %v", moe, err)
		}
		checkRandomMTPEqualsPlain(t, e, fmt.Sprintf("release form, moe %v", moe))
		e.Close()
	}
}

// TestMTPSampled: a sampled reply (a top-k on the device) drafted by the demo
// model's head keeps guesses by the rejection rule (TestRejectionRule* hold
// that rule to the plain distribution) and repeats itself for a seed; at a
// temperature low enough that each position's distribution is one token it is
// the plain sampled reply.
func TestMTPSampled(t *testing.T) {
	defer switches.Reset(SwitchSpeculativeMTP)
	dir, req := mtpCase(t, 4) // "What is a bug?": a recited entry
	e, err := Load(dir, Options{Backend: "cpu", ContextLength: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	req.MaxTokens, req.DraftLength = 40, 2
	req.Sampling = Sampling{Temperature: 0.01, TopK: 20, TopP: 0.95, RepetitionPenalty: 1, Seed: 7}
	plain, _ := generateWith(t, e, SwitchSpeculativeMTP, false, req)
	a, done := generateWith(t, e, SwitchSpeculativeMTP, true, req)
	b, _ := generateWith(t, e, SwitchSpeculativeMTP, true, req)
	if st := done.Stats; st.DraftAccepted == 0 || st.Verifies == 0 {
		t.Fatalf("sampled with MTP drafts: %d of %d guesses kept, %d verifies", st.DraftAccepted, st.DraftProposed, st.Verifies)
	}
	if !slices.Equal(a, b) {
		t.Error("the same seed gave two replies")
	}
	if !slices.Equal(a, plain) {
		t.Errorf("at temperature 0.01: MTP %v\nplain %v", a, plain)
	}
}

// TestBrokenMTPHeadIsSaid: an mtp.safetensors whose tensors do not fit the
// model (here the fc of another width) leaves the model loading and
// decoding, and MTPStatus names the tensor at fault.
func TestBrokenMTPHeadIsSaid(t *testing.T) {
	dir := t.TempDir()
	spec := randomMTPSpec(false)
	spec.MTP = false
	testmodel.WriteRandom(t, dir, spec)
	writeHFMTP(t, dir, 64, 2, 1, 256, 256, 0, 64) // a head for hidden 64, beside a model of 128
	e, err := Load(dir, Options{Backend: "cpu", ContextLength: 128})
	if err != nil {
		t.Fatalf("a broken MTP head stopped the load: %v", err)
	}
	defer e.Close()
	if why := e.MTPStatus(); !strings.Contains(why, "cannot be read") || !strings.Contains(why, "mtp.") {
		t.Errorf("MTPStatus() = %q, want it to name the broken tensor", why)
	}
	if ids, _, _ := collect(t, e.Generate(t.Context(), Request{PromptIDs: []int32{5, 6, 7}, MaxTokens: 4, IgnoreStop: true})); len(ids) != 4 {
		t.Errorf("the model decoded %d tokens", len(ids))
	}
}
