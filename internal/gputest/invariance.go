package gputest

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"bagel/backend"
)

// TokenInvariance checks, for each kernel of the qmatmul_bf16 family (its
// buffers and scalars: x, w, scales, biases, out | T, In, Out, bits, gs), that a
// launch of several tokens gives every token the bits of a launch of that
// token alone: what a speculative verify needs to agree with the decode steps
// it replaces. Each shape is T, In, Out, bits, gs.
func TokenInvariance(t *testing.T, dev backend.Device, kernel string, shapes [][5]int) {
	t.Helper()
	for _, s := range shapes {
		T, In, Out, bits, gs := s[0], s[1], s[2], s[3], s[4]
		g := gen{newRand(kernel, fmt.Sprint("invariance", s))}
		w, sc, bi := g.quant(Out, In, bits, gs)
		x := g.bf16(T*In, 1)
		outType, size := backend.BF16, 2
		if strings.HasSuffix(kernel, "_f32") {
			outType, size = backend.F32, 4
		}
		run := func(x []byte, tokens int) []byte {
			c := &Case{Kernel: kernel, Buffers: []Buffer{
				in("x", backend.BF16, x), in("w", backend.U32, w), in("scales", backend.BF16, sc),
				in("biases", backend.BF16, bi), out("out", outType, tokens*Out),
			}, Scalars: ints(tokens, In, Out, bits, gs)}
			outs, err := execute(dev, c)
			if err != nil {
				t.Fatalf("%s %v: %v", kernel, s, err)
			}
			return outs[4]
		}
		all := run(x, T)
		for tok := 0; tok < T; tok++ {
			alone := run(x[tok*In*2:(tok+1)*In*2], 1)
			row := all[tok*Out*size : (tok+1)*Out*size]
			if !bytes.Equal(alone, row) {
				diff := 0
				for i := 0; i < Out; i++ {
					if !bytes.Equal(alone[i*size:(i+1)*size], row[i*size:(i+1)*size]) {
						diff++
					}
				}
				t.Errorf("%s T=%d %d→%d bits=%d gs=%d: token %d's %d of %d outputs differ from a launch of it alone", kernel, T, In, Out, bits, gs, tok, diff, Out)
			}
		}
	}
}

// MoEUpInvariance is TokenInvariance for kernel of the moe_up_bf16 family
// (its buffers and scalars): a launch over T tokens gives every token's routed
// slots and shared expert the bits of a launch of that token alone. Each shape
// is T, K, E, In, Out, Is, bits, gs; few experts E make tokens share them.
func MoEUpInvariance(t *testing.T, dev backend.Device, kernel string, shapes [][8]int) {
	t.Helper()
	for _, s := range shapes {
		T, K, E, In, Out, Is, bits, gs := s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]
		g := gen{newRand(kernel, fmt.Sprint("invariance", s))}
		x, ids := g.bf16(T*In, 1), g.experts(T, K, E)
		weights := moeUpWeights(g, T, K, E, In, Out, Is, bits, gs)
		run := func(x, ids []byte, tokens int) (routed, shared []byte) {
			bufs := []Buffer{in("x", backend.BF16, x), in("ids", backend.I32, ids)}
			for _, b := range weights {
				switch b.Name { // the outputs, sized for these tokens
				case "out":
					b = out("out", backend.BF16, tokens*K*Out)
				case "hs":
					b = out("hs", backend.BF16, tokens*Is)
				}
				bufs = append(bufs, b)
			}
			outs, err := execute(dev, &Case{Kernel: kernel, Buffers: bufs, Scalars: ints(tokens, K, In, Out, Is, bits, gs)})
			if err != nil {
				t.Fatalf("%s %v: %v", kernel, s, err)
			}
			return outs[8], outs[15]
		}
		routed, shared := run(x, ids, T)
		for tok := 0; tok < T; tok++ {
			aloneRouted, aloneShared := run(x[tok*In*2:(tok+1)*In*2], ids[tok*K*4:(tok+1)*K*4], 1)
			if !bytes.Equal(aloneRouted, routed[tok*K*Out*2:(tok+1)*K*Out*2]) {
				t.Errorf("%s %v: token %d's routed experts differ from a launch of it alone", kernel, s, tok)
			}
			if !bytes.Equal(aloneShared, shared[tok*Is*2:(tok+1)*Is*2]) {
				t.Errorf("%s %v: token %d's shared expert differs from a launch of it alone", kernel, s, tok)
			}
		}
	}
}

// MoEDownMatches checks that kernel, of the moe_down_bf16 family, gives
// moe_down_bf16's bits at halves 1 and ids_early 0 and 1: each shape is T, K,
// E, H, I, Is, bits, gs, shared bits, shared gs.
func MoEDownMatches(t *testing.T, dev backend.Device, kernel string, shapes [][10]int) {
	t.Helper()
	for _, s := range shapes {
		T, K, E, H, I, Is, bits, gs, sbits, sgs := s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9]
		bufs := moeDownBuffers(gen{newRand(kernel, fmt.Sprint("matches", s))}, T, K, E, H, I, Is, bits, gs, sbits, sgs)
		for _, early := range []int{0, 1} {
			run := func(kernel string) []byte {
				outs, err := execute(dev, &Case{Kernel: kernel, Buffers: bufs, Scalars: ints(T, K, H, I, Is, bits, gs, sbits, sgs, early, 1)})
				if err != nil {
					t.Fatalf("%s %v: %v", kernel, s, err)
				}
				return outs[11]
			}
			if want, got := run("moe_down_bf16"), run(kernel); !bytes.Equal(got, want) {
				t.Errorf("%s %v ids_early %d: out differs from moe_down_bf16's", kernel, s, early)
			}
		}
	}
}

// MoEDownInvariance is TokenInvariance for kernel of the moe_down_bf16 family
// (its buffers and scalars, ids_early 1, halves 0): a launch over T tokens
// gives every token's output the bits of a launch of that token alone. Each
// shape is T, K, E, H, I, Is, gs, shared gs (4-bit codes).
func MoEDownInvariance(t *testing.T, dev backend.Device, kernel string, shapes [][8]int) {
	t.Helper()
	for _, s := range shapes {
		T, K, E, H, I, Is, gs, sgs := s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]
		bufs := moeDownBuffers(gen{newRand(kernel, fmt.Sprint("invariance", s))}, T, K, E, H, I, Is, 4, gs, 4, sgs)
		// Per token: h K·I, ids K, weights K, hs Is and gate 1 elements (buffers 0, 1, 2, 6, 10).
		per := map[int]int{0: K * I * 2, 1: K * 4, 2: K * 2, 6: Is * 2, 10: 2}
		// run launches all T tokens (tok < 0) or token tok alone.
		run := func(tok int) []byte {
			b, tokens := slices.Clone(bufs), T
			if tok >= 0 {
				tokens = 1
				for i, n := range per {
					b[i].Data = b[i].Data[tok*n : (tok+1)*n]
				}
			}
			b[11] = out("out", backend.BF16, tokens*H)
			outs, err := execute(dev, &Case{Kernel: kernel, Buffers: b, Scalars: ints(tokens, K, H, I, Is, 4, gs, 4, sgs, 1, 0)})
			if err != nil {
				t.Fatalf("%s %v: %v", kernel, s, err)
			}
			return outs[11]
		}
		all := run(-1)
		for tok := 0; tok < T; tok++ {
			if !bytes.Equal(run(tok), all[tok*H*2:(tok+1)*H*2]) {
				t.Errorf("%s %v: token %d's output differs from a launch of it alone", kernel, s, tok)
			}
		}
	}
}

// MultiConvInvariance checks qmatmul_mma_multi_conv_bf16 (its buffers and
// scalars) over T tokens against T launches of one token each, the conv
// window carried from each to the next: every projection, the raw ones and
// the conv's outputs and final window the same bits (a verify against the
// decode steps it replaces). Each shape is T, In, K, Out0, Out1, Out23 (the
// last two slots' rows), 4-bit codes in groups of 64.
func MultiConvInvariance(t *testing.T, dev backend.Device, shapes [][6]int) {
	t.Helper()
	const kernel = "qmatmul_mma_multi_conv_bf16"
	for _, s := range shapes {
		T, In, K := s[0], s[1], s[2]
		slots := [4]slot{{s[3], 4, 64}, {s[4], 4, 64}, {s[5], 4, 64}, {s[5], 4, 64}}
		g := gen{newRand(kernel, fmt.Sprint("invariance", s))}
		bufs, scalars := multiCase(g, T, In, slots)
		bufs = append(bufs, inout("conv_state", backend.BF16, g.bf16((K-1)*s[3], 1)), in("conv_w", backend.BF16, g.bf16(s[3]*K, 0.5)),
			out("raw0", backend.BF16, T*s[3]))
		// Buffers: x 0, slot i's w, scales, biases, out at 1+4i..4+4i, conv_state 17, conv_w 18, raw0 19.
		rows := map[int]int{4: s[3], 8: s[4], 12: s[5], 16: s[5], 19: s[3]} // output buffer: its rows a token
		run := func(b []Buffer, tokens int) [][]byte {
			sc := slices.Clone(scalars)
			sc[0] = tokens
			outs, err := execute(dev, &Case{Kernel: kernel, Buffers: b, Scalars: ints(append(sc, K)...)})
			if err != nil {
				t.Fatalf("%s %v: %v", kernel, s, err)
			}
			return outs
		}
		all := run(bufs, T)
		window := bufs[17].Data
		for tok := 0; tok < T; tok++ {
			b := slices.Clone(bufs)
			b[0].Data = bufs[0].Data[tok*In*2 : (tok+1)*In*2]
			for o, n := range rows {
				b[o] = out(bufs[o].Name, backend.BF16, n)
			}
			b[17] = inout("conv_state", backend.BF16, window)
			alone := run(b, 1)
			window = alone[17]
			for o, n := range rows {
				if !bytes.Equal(alone[o], all[o][tok*n*2:(tok+1)*n*2]) {
					t.Errorf("%s %v: token %d's %s differs from a launch of it alone", kernel, s, tok, bufs[o].Name)
				}
			}
		}
		if !bytes.Equal(window, all[17]) {
			t.Errorf("%s %v: the conv window after %d tokens differs from %d launches of one", kernel, s, T, T)
		}
	}
}

// SplitInvarianceShapes are SplitAttentionInvariance's shapes: a verify of 5
// past 128 keys (the 35B-A3B's heads, 4 ranges), one whose rows' ranges
// differ (at 130 keys the first three rows' ranges are 32 keys, the last
// two's 64), one of 8 at 300, one over a long cache, the plain fallback's
// head size (36) and a grouped-query ratio of 3.
var SplitInvarianceShapes = [][7]int{{5, 16, 2, 256, 256, 165, 4}, {5, 16, 2, 256, 256, 130, 4},
	{8, 16, 2, 256, 300, 300, 4}, {5, 16, 2, 256, 4096, 1000, 64}, {3, 4, 2, 36, 64, 60, 2}, {4, 6, 2, 80, 200, 150, 3}}

// SplitAttentionInvariance checks that split-KV attention (kernel, a first
// half of the attention_split_f32 family, then attention_merge_bf16) gives
// each of a launch's T queries the bits of a launch of that query alone at
// its own position: what a speculative verify past the split keys needs to
// agree with the decode steps it replaces. Each shape is T, Hq, Hkv, D, Cap,
// kvLen, S.
func SplitAttentionInvariance(t *testing.T, dev backend.Device, kernel string, shapes [][7]int) {
	t.Helper()
	for _, s := range shapes {
		T, Hq, Hkv, D, Cap, kvLen, S := s[0], s[1], s[2], s[3], s[4], s[5], s[6]
		g := gen{newRand(kernel, fmt.Sprint("invariance", s))}
		q, kc, vc := g.bf16(T*Hq*D, 1), g.bf16(Hkv*Cap*D, 1), g.bf16(Hkv*Cap*D, 1)
		scale := backend.Float(float32(1 / math.Sqrt(float64(D))))
		// run attends queries q (tokens of them) over the first n keys.
		run := func(q []byte, tokens, n int) []byte {
			split, err := execute(dev, &Case{Kernel: kernel, Buffers: []Buffer{
				in("q", backend.BF16, q), in("kcache", backend.BF16, kc), in("vcache", backend.BF16, vc),
				out("partial", backend.F32, tokens*Hq*S*(D+2)),
			}, Scalars: append(ints(tokens, Hq, Hkv, D, Cap, n, S), scale)})
			if err != nil {
				t.Fatalf("%s %v: %v", kernel, s, err)
			}
			merged, err := execute(dev, &Case{Kernel: "attention_merge_bf16", Buffers: []Buffer{
				in("partial", backend.F32, split[3]), out("out", backend.BF16, tokens*Hq*D),
			}, Scalars: ints(tokens, Hq, D, S)})
			if err != nil {
				t.Fatalf("attention_merge_bf16 %v: %v", s, err)
			}
			return merged[1]
		}
		all := run(q, T, kvLen)
		row := Hq * D * 2
		for tok := 0; tok < T; tok++ {
			alone := run(q[tok*row:(tok+1)*row], 1, kvLen-T+tok+1)
			if got := all[tok*row : (tok+1)*row]; !bytes.Equal(alone, got) {
				diff := 0
				for i := 0; i < Hq*D; i++ {
					if !bytes.Equal(alone[2*i:2*i+2], got[2*i:2*i+2]) {
						diff++
					}
				}
				t.Errorf("%s %v: query %d's %d of %d outputs differ from a launch of it alone at its position", kernel, s, tok, diff, Hq*D)
			}
		}
	}
}
