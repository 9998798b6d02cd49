package testmodel

import (
	"testing"

	"bagel/synth"
)

// Spec is the shape of a random MLX-layout checkpoint written by WriteRandom.
type Spec struct {
	ModelType                      string // qwen3_5 or qwen3_5_moe
	Hidden, Layers, Interval       int
	Heads, KVHeads, HeadDim        int
	Hk, Hv, Dk, Dv, ConvKernel     int
	Intermediate                   int // dense
	Experts, TopK, MoEInter, Share int // MoE
	Vocab                          int
	Bits, GroupSize                int // global quantization
	RouterBits                     int // per-layer override of mlp.gate / shared_expert_gate (MoE)
	Tied                           bool
	MTP                            bool // a multi-token-prediction head (synth.Shape.MTP)
}

// WriteRandom writes a random checkpoint of spec into dir with package synth (one
// shard, config.json): random codes, scales and biases, norms near 1. It
// exercises shapes and quantization settings the committed test models lack.
// RoPE is θ = 10⁶ over half of each head, unlike the 35B-A3B's quarter.
func WriteRandom(t testing.TB, dir string, s Spec) {
	t.Helper()
	shape := synth.Shape{
		ModelType: s.ModelType, Hidden: s.Hidden, Layers: s.Layers, Interval: s.Interval,
		Heads: s.Heads, KVHeads: s.KVHeads, HeadDim: s.HeadDim, Hk: s.Hk, Hv: s.Hv, Dk: s.Dk, Dv: s.Dv,
		ConvKernel: s.ConvKernel, Intermediate: s.Intermediate, Experts: s.Experts, TopK: s.TopK,
		MoEInter: s.MoEInter, SharedInter: s.Share, Vocab: s.Vocab, Tied: s.Tied,
		RopeTheta: 1e6, PartialRotary: 0.5, MTP: s.MTP,
	}
	quant := synth.Quant{Bits: s.Bits, GroupSize: s.GroupSize, RouterBits: s.RouterBits}
	if err := synth.Write(dir, synth.Options{Shape: shape, Quant: quant, Seed: uint64(s.Hidden)}); err != nil {
		t.Fatal(err)
	}
}
