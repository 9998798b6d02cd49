package engine

import (
	"os"
	"testing"

	"bagel/internal/testmodel"
)

// TestScratchIsOneLayers: a forward's scratch holds one layer's tensors, not
// every layer's (each layer rewinds the arena to where the one before it
// started, ops.Arena.Rewind). A model of 2 and of 8 layers of the same shapes
// take the same scratch for a prompt chunk; before, the 8-layer model took
// about four times as much (the synthetic 35B-A3B, 40 layers, a chunk of
// 2048 tokens: 8.86 GB against 0.42 GB now).
func TestScratchIsOneLayers(t *testing.T) {
	spec := testmodel.Spec{ModelType: "qwen3_5_moe", Hidden: 128, Interval: 2, Heads: 4, KVHeads: 1, HeadDim: 64,
		Hk: 1, Hv: 4, Dk: 64, Dv: 64, ConvKernel: 4, Experts: 16, TopK: 3, MoEInter: 128, Share: 128, Vocab: 512,
		Bits: 4, GroupSize: 64}
	scratch := map[int]int64{}
	for _, layers := range []int{2, 8} {
		spec.Layers = layers
		dir := t.TempDir()
		testmodel.WriteRandom(t, dir, spec)
		e, err := Load(dir, Options{Backend: "cpu", ContextLength: 512, PrefillChunk: 256})
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]int32, 300) // a full chunk, then a short one
		for i := range ids {
			ids[i] = int32(i*37%500 + 1)
		}
		scoreFrom(t, e, ids, len(ids), false)
		_, scratch[layers] = e.scratch.Allocations()
		e.Close()
	}
	t.Logf("scratch after a 256-token chunk: 2 layers %d bytes, 8 layers %d", scratch[2], scratch[8])
	if scratch[8] != scratch[2] {
		t.Errorf("8 layers take %d bytes of scratch, 2 layers %d: want the same (one layer's)", scratch[8], scratch[2])
	}
}

// BenchmarkScratchOfAModel measures the scratch a prompt chunk of 512 and of
// 2048 tokens takes on the model folder in BAGEL_SCRATCH_MODEL (skipped
// without it), by a forward whose dispatches are dropped: the arena lays out
// its buffers (on the CPU backend, pages never touched) but nothing computes,
// so a 35B-A3B runs in seconds:
//
//	bagel synth --like qwen3.5-35b-a3b --experts 8 --tokenizer DIR --out /tmp/synth8
//	BAGEL_SCRATCH_MODEL=/tmp/synth8 go test ./engine -run '^$' -bench ScratchOfAModel -benchtime 1x
//
// (there: 0.12 GB at 512 tokens, 0.42 GB at 2048; 2.23 and 8.86 GB before the
// layers shared their scratch). The scratch grows with the chunk's tokens
// and no faster. TestScratchIsOneLayers guards the sharing itself.
func BenchmarkScratchOfAModel(b *testing.B) {
	dir := os.Getenv("BAGEL_SCRATCH_MODEL")
	if dir == "" {
		b.Skip("BAGEL_SCRATCH_MODEL names no model folder")
	}
	bytes := map[int]int64{}
	for b.Loop() {
		for _, chunk := range []int{512, 2048} {
			e, err := Load(dir, Options{Backend: "cpu", ContextLength: 4096, PrefillChunk: chunk})
			if err != nil {
				b.Fatal(err)
			}
			err = e.loop.do(func() error {
				real := e.ctx.Enc
				defer func() { e.ctx.Enc = real }()
				e.ctx.Enc = &countingEncoder{}
				_, err := e.model.Forward(e.ctx, e.cache, make([]int32, chunk), false)
				_, bytes[chunk] = e.scratch.Allocations()
				e.scratch.Reset()
				return err
			})
			e.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(bytes[512])/1e9, "GB-scratch-512")
	b.ReportMetric(float64(bytes[2048])/1e9, "GB-scratch-2048")
	if bytes[2048] > 5*bytes[512] {
		b.Errorf("scratch %d bytes at 2048 tokens, %d at 512: more than the tokens' growth", bytes[2048], bytes[512])
	}
}
