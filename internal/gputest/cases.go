package gputest

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"bagel/backend"
	"bagel/cpu"
	"bagel/kernels"
)

// Spec makes one case; Large marks the shapes too big for a CPU-only run.
type Spec struct {
	Kernel string
	Label  string
	Large  bool
	Make   func(r *rand.Rand) *Case
}

// Tolerances on ‖gpu−cpu‖/‖cpu‖. A bf16 output differs from the reference only
// where an f32 ulp of difference (summation order, a GPU exp or rsqrt) crosses a
// bf16 rounding boundary, which moves that element by one bf16 ulp (2^−8
// relative); over a tensor that stays far below 1e-3. An output of a few
// elements, where one such flip can exceed the tolerance, passes when every
// element is within one bf16 step (withinOneBF16Step; not for tolExact). f32
// outputs differ by accumulation order only.
const (
	tolExact = 0    // copies
	tolBF16  = 4e-3 // bf16 outputs of f32 math
	tolF32   = 1e-4 // f32 outputs
	tolState = 1e-3 // the GDN state after several tokens
	// tolGEMM holds the exact prompt GEMMs to the GEMV's sums: each weight
	// rounded to bf16 before its products (exact 0) is 2.6e-3 away on such
	// inputs (measured on the CPU); the exact GEMMs on the H200, 1-2e-4.
	tolGEMM = 5e-4
)

// qwen names the real Qwen3.5-35B-A3B shapes used below.
const (
	hidden   = 2048
	qProjOut = 8192 // 16 heads × 256 × [q | gate]
	headDim  = 256
	qHeads   = 16
	kvHeads  = 2
	convDim  = 8192 // 2·Hk·Dk + Hv·Dv
	gdnHk    = 16
	gdnHv    = 32
	gdnD     = 128
	experts  = 256
	topK     = 8
	moeInt   = 512
	vocab    = 248320
	// The vision tower's width and MLP.
	visionWidth = 1152
	visionMLP   = 4304
)

// Specs lists every case, grouped by kernel in README order.
func Specs() []Spec {
	var s []Spec
	add := func(kernel string, large bool, label string, make func(g gen) *Case) {
		s = append(s, Spec{Kernel: kernel, Label: label, Large: large, Make: func(r *rand.Rand) *Case {
			c := make(gen{r})
			c.Kernel, c.Shape = kernel, label
			return c
		}})
	}

	// embed_dequant_bf16: ids, w, scales, biases, out | T, In, bits, gs
	for _, p := range []struct{ V, In, T, bits, gs int }{
		{vocab, hidden, 5, 4, 64}, {1000, 96, 3, 3, 32}, {500, 128, 4, 6, 64},
		{300, 256, 2, 8, 128}, {77, 160, 3, 5, 32}, {64, 64, 1, 2, 32},
	} {
		add("embed_dequant_bf16", p.V == vocab, fmt.Sprintf("V=%d In=%d T=%d bits=%d gs=%d", p.V, p.In, p.T, p.bits, p.gs), func(g gen) *Case {
			w, sc, bi := g.quant(p.V, p.In, p.bits, p.gs)
			ids := g.ids(p.T, p.V)
			if p.T > 2 {
				binary.LittleEndian.PutUint32(ids[4:], math.MaxUint32) // −1: a pick of logits not finite, read as row 0
			}
			return &Case{Tol: tolBF16, Buffers: []Buffer{
				in("ids", backend.I32, ids), in("w", backend.U32, w), in("scales", backend.BF16, sc),
				in("biases", backend.BF16, bi), out("out", backend.BF16, p.T*p.In),
			}, Scalars: ints(p.T, p.In, p.bits, p.gs)}
		})
	}

	// qmatmul_bf16 / qmatmul_bf16_f32: x, w, scales, biases, out | T, In, Out, bits, gs
	// wOff and xOff (bytes) put the weights or x off the 16-byte grid: the
	// kernels then take their word-by-word path instead of 16-byte pieces.
	type mm struct{ T, In, Out, bits, gs, wOff, xOff int }
	qmm := func(kernel string, outType backend.DType, tol float64, shapes []mm) {
		for _, p := range shapes {
			large := p.Out*p.In >= vocab*hidden
			label := fmt.Sprintf("T=%d %d→%d bits=%d gs=%d", p.T, p.In, p.Out, p.bits, p.gs)
			if p.wOff != 0 || p.xOff != 0 {
				label += fmt.Sprintf(" w+%d x+%d", p.wOff, p.xOff)
			}
			add(kernel, large, label, func(g gen) *Case {
				w, sc, bi := g.quant(p.Out, p.In, p.bits, p.gs)
				x, wb := in("x", backend.BF16, g.bf16(p.T*p.In, 1)), in("w", backend.U32, w)
				x.Off, wb.Off = p.xOff, p.wOff
				return &Case{Tol: tol, Buffers: []Buffer{
					x, wb, in("scales", backend.BF16, sc), in("biases", backend.BF16, bi), out("out", outType, p.T*p.Out),
				}, Scalars: ints(p.T, p.In, p.Out, p.bits, p.gs)}
			})
		}
	}
	qmm("qmatmul_bf16", backend.BF16, tolBF16, []mm{
		{1, hidden, qProjOut, 4, 64, 0, 0}, {1, hidden, experts, 8, 64, 0, 0}, {1, 4096, hidden, 4, 64, 0, 0},
		{1, moeInt, hidden, 4, 64, 0, 0}, {9, hidden, qProjOut, 4, 64, 0, 0}, {3, 160, 37, 3, 32, 0, 0},
		{3, 160, 37, 5, 32, 0, 0}, {2, 192, 41, 6, 64, 0, 0}, {2, 128, 33, 2, 128, 0, 0}, {2, 256, 40, 8, 128, 0, 0},
		{4, 512, 1, 8, 64, 0, 0}, {2, 96, 7, 4, 32, 0, 0}, {1, 64, 3, 8, 32, 0, 0}, {3, 4096, 9, 4, 128, 0, 0},
		{1, hidden, 1000, 4, 64, 4, 0}, {2, hidden, 300, 8, 64, 8, 0}, {1, hidden, 500, 4, 64, 0, 4},
	})
	// The matrix-unit GEMVs (4-bit, groups of 64 or 128): one token, a verify's
	// five, the two 8-token columns of a tile, more than a tile's 16 tokens,
	// rows not a multiple of the tile's 16, inputs under one SIMD-group's share,
	// x off the 16-byte grid (word loads).
	qmm("qmatmul_mma_bf16", backend.BF16, tolBF16, []mm{
		{1, hidden, qProjOut, 4, 64, 0, 0}, {5, 4096, hidden, 4, 64, 0, 0}, {1, moeInt, hidden, 4, 64, 0, 0},
		{9, hidden, 1000, 4, 64, 0, 0}, {16, 256, 40, 4, 128, 0, 0}, {20, 192, 37, 4, 64, 0, 0},
		{3, 64, 5, 4, 64, 0, 0}, {2, hidden, 500, 4, 64, 4, 4},
	})
	qmm("qmatmul_mma_bf16_f32", backend.F32, tolF32, []mm{
		{1, hidden, vocab, 4, 64, 0, 0}, {5, hidden, 1000, 4, 64, 0, 0}, {2, 128, 13, 4, 128, 0, 0},
	})
	qmm("qmatmul_bf16_f32", backend.F32, tolF32, []mm{
		{1, hidden, vocab, 4, 64, 0, 0}, {4, hidden, 1000, 8, 64, 0, 0}, {2, 192, 77, 6, 64, 0, 0}, {3, 96, 5, 3, 32, 0, 0}, {2, 128, 13, 4, 128, 0, 0},
	})

	// qmatmul_gather_bf16: x, ids, w, scales, biases, out | T, K, In, Out, bits, gs, xPerSlot
	for _, p := range []struct{ T, K, E, In, Out, bits, gs, xPerSlot int }{
		{1, topK, experts, hidden, moeInt, 4, 64, 0}, {1, topK, experts, moeInt, hidden, 4, 64, 1},
		{5, topK, experts, hidden, moeInt, 4, 64, 0}, {3, 2, 5, 96, 33, 3, 32, 1}, {2, 3, 4, 128, 17, 8, 128, 0},
		{2, 3, 6, 64, 13, 4, 32, 1},
	} {
		add("qmatmul_gather_bf16", false, fmt.Sprintf("T=%d K=%d E=%d %d→%d bits=%d gs=%d xPerSlot=%d", p.T, p.K, p.E, p.In, p.Out, p.bits, p.gs, p.xPerSlot), func(g gen) *Case {
			w, sc, bi := g.quant(p.E*p.Out, p.In, p.bits, p.gs)
			xRows := p.T
			if p.xPerSlot != 0 {
				xRows = p.T * p.K
			}
			return &Case{Tol: tolBF16, Buffers: []Buffer{
				in("x", backend.BF16, g.bf16(xRows*p.In, 1)), in("ids", backend.I32, g.experts(p.T, p.K, p.E)),
				in("w", backend.U32, w), in("scales", backend.BF16, sc), in("biases", backend.BF16, bi),
				out("out", backend.BF16, p.T*p.K*p.Out),
			}, Scalars: ints(p.T, p.K, p.In, p.Out, p.bits, p.gs, p.xPerSlot)}
		})
	}

	// qgemm_bf16: x, w, scales, biases, out | T, In, Out, bits, gs, exact. Token
	// counts around the tile's 128 rows and 64 outputs: partial tiles of both;
	// exact (every weight as the GEMV takes it, tolGEMM) and, for a few, the
	// weights rounded to bf16 (MLX's, tolBF16).
	type gemm struct {
		mm
		exact int
	}
	for _, p := range []gemm{
		{mm{512, hidden, qProjOut, 4, 64, 0, 0}, 1}, {mm{100, hidden, 1000, 8, 64, 0, 0}, 1}, {mm{70, 160, 37, 3, 32, 0, 0}, 1},
		{mm{65, 192, 41, 6, 64, 0, 0}, 1}, {mm{3, 128, 33, 2, 128, 0, 0}, 1}, {mm{64, 256, 64, 4, 128, 0, 0}, 1},
		{mm{130, 96, 70, 5, 32, 0, 0}, 1}, {mm{33, 4096, 9, 4, 128, 0, 0}, 1}, {mm{90, 160, 100, 4, 32, 0, 0}, 1},
		{mm{40, 96, 65, 8, 32, 0, 0}, 1}, {mm{200, 512, 130, 8, 64, 0, 0}, 1},
		{mm{512, hidden, qProjOut, 4, 64, 0, 0}, 0}, {mm{100, hidden, 1000, 8, 64, 0, 0}, 0}, {mm{70, 160, 37, 3, 32, 0, 0}, 0},
	} {
		tol := tolGEMM
		if p.exact == 0 {
			tol = tolBF16
		}
		add("qgemm_bf16", p.T*p.Out*p.In >= 512*hidden*qProjOut, fmt.Sprintf("T=%d %d→%d bits=%d gs=%d exact=%d", p.T, p.In, p.Out, p.bits, p.gs, p.exact), func(g gen) *Case {
			w, sc, bi := g.quant(p.Out, p.In, p.bits, p.gs)
			return &Case{Tol: tol, Buffers: []Buffer{
				in("x", backend.BF16, g.bf16(p.T*p.In, 1)), in("w", backend.U32, w), in("scales", backend.BF16, sc),
				in("biases", backend.BF16, bi), out("out", backend.BF16, p.T*p.Out),
			}, Scalars: ints(p.T, p.In, p.Out, p.bits, p.gs, p.exact)}
		})
	}

	// qgemm_multi_bf16: as qmatmul_multi_bf16's buffers and scalars, each matrix as qgemm_bf16.
	for _, p := range []struct {
		T, In int
		slots [4]slot
	}{
		{512, hidden, [4]slot{{moeInt, 4, 64}, {moeInt, 4, 64}, {}, {}}}, // the shared expert's gate and up
		{130, 96, [4]slot{{7, 4, 32}, {}, {5, 3, 32}, {70, 8, 32}}},
		{33, 256, [4]slot{{9, 8, 128}, {64, 2, 64}, {}, {}}},
	} {
		add("qgemm_multi_bf16", p.T >= 512, fmt.Sprintf("T=%d In=%d %d/%d/%d/%d rows", p.T, p.In, p.slots[0].Out, p.slots[1].Out, p.slots[2].Out, p.slots[3].Out), func(g gen) *Case {
			bufs, scalars := multiCase(g, p.T, p.In, p.slots)
			return &Case{Tol: tolGEMM, Buffers: bufs, Scalars: ints(append(scalars, 1)...)}
		})
	}

	// moe_sort_i32: ids, perm, tiles | T, K, E
	gemmTile := kernels.Defines()["QG_BM"]
	tileRows := func(T, K, E int) int { return (T*K+gemmTile-1)/gemmTile + E }
	for _, p := range []struct{ T, K, E int }{{512, topK, experts}, {5, topK, experts}, {300, 3, 16}, {1, 1, 1}, {200, 8, 64}, {600, 8, 64}, {40, 4, 1000},
		{512, 8, 256}, {2048, 8, 256}, {700, 2, 3}} { // 35B-A3B's 256 experts, one chunk and four; many slices an expert
		add("moe_sort_i32", false, fmt.Sprintf("T=%d K=%d E=%d", p.T, p.K, p.E), func(g gen) *Case {
			return &Case{Tol: tolExact, Buffers: []Buffer{
				in("ids", backend.I32, g.experts(p.T, p.K, p.E)), out("perm", backend.I32, p.T*p.K),
				out("tiles", backend.I32, 3*tileRows(p.T, p.K, p.E)),
			}, Scalars: ints(p.T, p.K, p.E)}
		})
	}

	// qgemm_gather_bf16: x, perm, tiles, w, scales, biases, out | T, K, E, In, Out, bits, gs, xPerSlot, exact.
	// perm and tiles are what moe_sort_i32 makes of router-like ids.
	for _, p := range []struct{ T, K, E, In, Out, bits, gs, xPerSlot, exact int }{
		{512, topK, 64, hidden, moeInt, 4, 64, 0, 1}, {512, topK, 64, moeInt, hidden, 4, 64, 1, 1},
		{100, topK, 16, 256, 70, 4, 64, 0, 1}, {70, 3, 5, 96, 33, 3, 32, 1, 1}, {40, 2, 4, 128, 17, 8, 128, 0, 1},
		{9, 2, 6, 64, 130, 6, 32, 1, 1}, {50, 4, 7, 160, 66, 4, 32, 1, 1}, {120, 8, 64, 96, 40, 8, 32, 0, 1},
		{512, topK, 64, hidden, moeInt, 4, 64, 0, 0}, {50, 4, 7, 160, 66, 4, 32, 1, 0},
	} {
		tol := tolGEMM
		if p.exact == 0 {
			tol = tolBF16
		}
		add("qgemm_gather_bf16", p.T >= 512, fmt.Sprintf("T=%d K=%d E=%d %d→%d bits=%d gs=%d xPerSlot=%d exact=%d", p.T, p.K, p.E, p.In, p.Out, p.bits, p.gs, p.xPerSlot, p.exact), func(g gen) *Case {
			w, sc, bi := g.quant(p.E*p.Out, p.In, p.bits, p.gs)
			xRows := p.T
			if p.xPerSlot != 0 {
				xRows = p.T * p.K
			}
			raw := g.experts(p.T, p.K, p.E)
			ids := make([]int32, p.T*p.K)
			for i := range ids {
				ids[i] = int32(binary.LittleEndian.Uint32(raw[4*i:]))
			}
			perm, tiles := cpu.SortByExpert(ids, p.E, gemmTile)
			return &Case{Tol: tol, Buffers: []Buffer{
				in("x", backend.BF16, g.bf16(xRows*p.In, 1)), in("perm", backend.I32, i32Bytes(perm)),
				in("tiles", backend.I32, i32Bytes(tiles)), in("w", backend.U32, w), in("scales", backend.BF16, sc),
				in("biases", backend.BF16, bi), out("out", backend.BF16, p.T*p.K*p.Out),
			}, Scalars: ints(p.T, p.K, p.E, p.In, p.Out, p.bits, p.gs, p.xPerSlot, p.exact)}
		})
	}

	// qmatmul_multi_bf16: x, then w, scales, biases, out for slots 0..3 | T, In, Out0..3, fmt0..3 (bits + 256·gs).
	for _, p := range []struct {
		T, In int
		slots [4]slot
	}{
		{1, hidden, [4]slot{{convDim, 4, 64}, {gdnHv * gdnD, 4, 64}, {gdnHv, 4, 64}, {gdnHv, 4, 64}}},       // GDN qkv, z, b, a
		{1, hidden, [4]slot{{experts, 8, 64}, {moeInt, 4, 64}, {moeInt, 4, 64}, {1, 8, 64}}},                // router, shared gate, up, gate scalar
		{4, hidden, [4]slot{{qProjOut, 4, 64}, {kvHeads * headDim, 4, 64}, {kvHeads * headDim, 4, 64}, {}}}, // attention q, k, v
		{3, 96, [4]slot{{7, 4, 32}, {}, {5, 3, 32}, {3, 6, 32}}},
		{2, 128, [4]slot{{9, 8, 128}, {2, 2, 64}, {}, {}}},
		// The matrix-unit kernel's own: a verify of 5 on the GDN shapes, more
		// than a tile's 16 tokens, 4-bit matrices beside 8-bit ones.
		{5, hidden, [4]slot{{convDim, 4, 64}, {gdnHv * gdnD, 4, 64}, {gdnHv, 4, 64}, {gdnHv, 4, 64}}},
		{17, 256, [4]slot{{40, 4, 128}, {3, 8, 64}, {}, {19, 4, 64}}},
	} {
		label := fmt.Sprintf("T=%d In=%d", p.T, p.In)
		for _, sl := range p.slots {
			label += fmt.Sprintf(" %d:%db", sl.Out, sl.bits)
		}
		for _, kernel := range []string{"qmatmul_multi_bf16", "qmatmul_mma_multi_bf16"} {
			add(kernel, false, label, func(g gen) *Case {
				bufs, scalars := multiCase(g, p.T, p.In, p.slots)
				return &Case{Tol: tolBF16, Buffers: bufs, Scalars: ints(scalars...)}
			})
		}
	}

	// qmatmul_multi_conv_bf16: as qmatmul_multi_bf16 (T = 1), then conv_state (in/out), conv_w | ..., K
	for _, p := range []struct {
		In, K int
		slots [4]slot
	}{
		{hidden, 4, [4]slot{{convDim, 4, 64}, {gdnHv * gdnD, 4, 64}, {gdnHv, 4, 64}, {gdnHv, 4, 64}}}, // GDN qkv, z, b, a
		{96, 3, [4]slot{{7, 4, 32}, {}, {5, 3, 32}, {3, 6, 32}}},
		{128, 1, [4]slot{{9, 8, 128}, {2, 2, 64}, {}, {}}},
	} {
		add("qmatmul_multi_conv_bf16", false, fmt.Sprintf("In=%d K=%d channels=%d", p.In, p.K, p.slots[0].Out), func(g gen) *Case {
			bufs, scalars := multiCase(g, 1, p.In, p.slots)
			ch := p.slots[0].Out
			bufs = append(bufs, inout("conv_state", backend.BF16, g.bf16((p.K-1)*ch, 1)), in("conv_w", backend.BF16, g.bf16(ch*p.K, 0.5)))
			return &Case{Tol: tolBF16, Buffers: bufs, Scalars: ints(append(scalars, p.K)...)}
		})
		// The matrix units' twin takes a verify's tokens (up to 16) and keeps
		// matrix 0's projections in raw0.
		for _, t := range []int{1, 5, 16} {
			add("qmatmul_mma_multi_conv_bf16", false, fmt.Sprintf("T=%d In=%d K=%d channels=%d", t, p.In, p.K, p.slots[0].Out), func(g gen) *Case {
				bufs, scalars := multiCase(g, t, p.In, p.slots)
				ch := p.slots[0].Out
				bufs = append(bufs, inout("conv_state", backend.BF16, g.bf16((p.K-1)*ch, 1)), in("conv_w", backend.BF16, g.bf16(ch*p.K, 0.5)),
					out("raw0", backend.BF16, t*ch))
				return &Case{Tol: tolBF16, Buffers: bufs, Scalars: ints(append(scalars, p.K)...)}
			})
		}
	}

	// qmatmul_gather_swiglu_bf16: x, ids, gate_w, gate_scales, gate_biases, up_w, up_scales, up_biases, out | T, K, In, Out, bits, gs
	for _, p := range []struct{ T, K, E, In, Out, bits, gs int }{
		{1, topK, experts, hidden, moeInt, 4, 64}, {5, topK, experts, hidden, moeInt, 4, 64},
		{2, 3, 5, 96, 13, 4, 32}, {1, 2, 4, 128, 7, 8, 128}, {3, 2, 3, 64, 5, 3, 32},
	} {
		add("qmatmul_gather_swiglu_bf16", false, fmt.Sprintf("T=%d K=%d E=%d %d→%d bits=%d gs=%d", p.T, p.K, p.E, p.In, p.Out, p.bits, p.gs), func(g gen) *Case {
			gw, gsc, gbi := g.quant(p.E*p.Out, p.In, p.bits, p.gs)
			uw, usc, ubi := g.quant(p.E*p.Out, p.In, p.bits, p.gs)
			return &Case{Tol: tolBF16, Buffers: []Buffer{
				in("x", backend.BF16, g.bf16(p.T*p.In, 1)), in("ids", backend.I32, g.experts(p.T, p.K, p.E)),
				in("gate_w", backend.U32, gw), in("gate_scales", backend.BF16, gsc), in("gate_biases", backend.BF16, gbi),
				in("up_w", backend.U32, uw), in("up_scales", backend.BF16, usc), in("up_biases", backend.BF16, ubi),
				out("out", backend.BF16, p.T*p.K*p.Out),
			}, Scalars: ints(p.T, p.K, p.In, p.Out, p.bits, p.gs)}
		})
	}

	// moe_up_bf16: x, ids, gate_w/scales/biases, up_w/scales/biases, out, shared_gate_w/scales/biases,
	//   shared_up_w/scales/biases, hs | T, K, In, Out, Is, bits, gs
	for _, p := range []struct{ T, K, E, In, Out, Is, bits, gs int }{
		{1, topK, experts, hidden, moeInt, moeInt, 4, 64}, {5, topK, experts, hidden, moeInt, moeInt, 4, 64},
		{2, 3, 4, 128, 17, 40, 8, 128}, {2, 3, 6, 96, 13, 7, 3, 32},
		// 4-bit rows of one piece a lane and of several, ragged.
		{8, topK, experts, hidden, moeInt, moeInt, 4, 64}, {3, 3, 5, 96, 13, 7, 4, 32}, {2, 3, 5, 4096, 40, 24, 4, 128},
		{4, 2, 3, 320, 9, 12, 4, 64},
	} {
		add("moe_up_bf16", false, fmt.Sprintf("T=%d K=%d E=%d %d→%d Is=%d bits=%d gs=%d", p.T, p.K, p.E, p.In, p.Out, p.Is, p.bits, p.gs), func(g gen) *Case {
			bufs := []Buffer{in("x", backend.BF16, g.bf16(p.T*p.In, 1)), in("ids", backend.I32, g.experts(p.T, p.K, p.E))}
			return &Case{Tol: tolBF16, Buffers: append(bufs, moeUpWeights(g, p.T, p.K, p.E, p.In, p.Out, p.Is, p.bits, p.gs)...),
				Scalars: ints(p.T, p.K, p.In, p.Out, p.Is, p.bits, p.gs)}
		})
	}

	// moe_up_mma_bf16: as moe_up_bf16, 4-bit in groups of 64 or 128; few
	// experts so that tokens share them (T = 17, K = 2, E = 2: 17 slots an
	// expert, more than a tile's 16 columns), ragged rows.
	for _, p := range []struct{ T, K, E, In, Out, Is, bits, gs int }{
		{1, topK, experts, hidden, moeInt, moeInt, 4, 64}, {5, topK, experts, hidden, moeInt, moeInt, 4, 64},
		{5, topK, 12, hidden, moeInt, moeInt, 4, 64}, {17, 2, 2, 128, 17, 40, 4, 64}, {17, 3, 5, 256, 9, 20, 4, 128},
		{2, 3, 6, 192, 13, 7, 4, 64},
	} {
		add("moe_up_mma_bf16", false, fmt.Sprintf("T=%d K=%d E=%d %d→%d Is=%d bits=%d gs=%d", p.T, p.K, p.E, p.In, p.Out, p.Is, p.bits, p.gs), func(g gen) *Case {
			bufs := []Buffer{in("x", backend.BF16, g.bf16(p.T*p.In, 1)), in("ids", backend.I32, g.experts(p.T, p.K, p.E))}
			return &Case{Tol: tolBF16, Buffers: append(bufs, moeUpWeights(g, p.T, p.K, p.E, p.In, p.Out, p.Is, p.bits, p.gs)...),
				Scalars: ints(p.T, p.K, p.In, p.Out, p.Is, p.bits, p.gs)}
		})
	}

	// moe_down_warp_bf16: as moe_down_bf16 at halves 1; ragged rows (a half
	// of none), rows of several pieces a lane, 8-bit codes.
	for _, p := range []struct{ T, K, E, H, I, Is, bits, gs, sbits, sgs int }{
		{1, topK, experts, hidden, moeInt, moeInt, 4, 64, 4, 64}, {8, topK, experts, hidden, moeInt, moeInt, 4, 64, 4, 64},
		{3, 3, 5, 13, 64, 96, 4, 32, 8, 32}, {2, 3, 5, 11, 1024, 96, 4, 128, 4, 32}, {2, 2, 3, 9, 96, 64, 8, 32, 4, 32},
	} {
		add("moe_down_warp_bf16", false, fmt.Sprintf("T=%d K=%d E=%d H=%d I=%d Is=%d bits=%d/%d gs=%d/%d", p.T, p.K, p.E, p.H, p.I, p.Is, p.bits, p.sbits, p.gs, p.sgs), func(g gen) *Case {
			return &Case{Tol: tolBF16, Buffers: moeDownBuffers(g, p.T, p.K, p.E, p.H, p.I, p.Is, p.bits, p.gs, p.sbits, p.sgs),
				Scalars: ints(p.T, p.K, p.H, p.I, p.Is, p.bits, p.gs, p.sbits, p.sgs, 1, 1)}
		})
	}

	// moe_down_bf16: h, ids, weights, w, scales, biases, hs, shared_w, shared_scales, shared_biases, gate, out
	//   | T, K, H, I, Is, bits, gs, shared_bits, shared_gs, ids_early, halves
	for _, p := range []struct{ T, K, E, H, I, Is, bits, gs, sbits, sgs, early, halves int }{
		{1, topK, experts, hidden, moeInt, moeInt, 4, 64, 4, 64, 1, 1}, {3, topK, experts, hidden, moeInt, moeInt, 4, 64, 4, 64, 0, 1},
		{1, topK, experts, hidden, moeInt, moeInt, 4, 64, 4, 64, 1, 0},
		{2, 3, 5, 13, 64, 96, 4, 32, 8, 32, 1, 1}, {2, 3, 5, 13, 1024, 96, 4, 32, 8, 32, 1, 1}, {1, 2, 3, 7, 96, 64, 3, 32, 4, 64, 0, 0},
	} {
		add("moe_down_bf16", false, fmt.Sprintf("T=%d K=%d E=%d H=%d I=%d Is=%d bits=%d/%d halves=%d", p.T, p.K, p.E, p.H, p.I, p.Is, p.bits, p.sbits, p.halves), func(g gen) *Case {
			return &Case{Tol: tolBF16, Buffers: moeDownBuffers(g, p.T, p.K, p.E, p.H, p.I, p.Is, p.bits, p.gs, p.sbits, p.sgs),
				Scalars: ints(p.T, p.K, p.H, p.I, p.Is, p.bits, p.gs, p.sbits, p.sgs, p.early, p.halves)}
		})
	}

	// moe_down_mma_bf16: as moe_down_bf16 (halves unused), 4-bit in groups of
	// 64 or 128; few experts so that tokens share them, 16 tokens of 8 (the
	// most slots), ragged rows.
	for _, p := range []struct{ T, K, E, H, I, Is, gs, sgs, early int }{
		{1, topK, experts, hidden, moeInt, moeInt, 64, 64, 1}, {5, topK, experts, hidden, moeInt, moeInt, 64, 64, 0},
		{5, topK, 12, hidden, moeInt, moeInt, 64, 64, 1}, {16, topK, 9, hidden, moeInt, moeInt, 64, 64, 1},
		{3, 2, 3, 40, 128, 192, 128, 64, 0}, {16, 3, 3, 24, 64, 128, 64, 128, 1},
	} {
		add("moe_down_mma_bf16", false, fmt.Sprintf("T=%d K=%d E=%d H=%d I=%d Is=%d gs=%d/%d", p.T, p.K, p.E, p.H, p.I, p.Is, p.gs, p.sgs), func(g gen) *Case {
			return &Case{Tol: tolBF16, Buffers: moeDownBuffers(g, p.T, p.K, p.E, p.H, p.I, p.Is, 4, p.gs, 4, p.sgs),
				Scalars: ints(p.T, p.K, p.H, p.I, p.Is, 4, p.gs, 4, p.sgs, p.early, 0)}
		})
	}

	// rms_norm_bf16: x, w, out | R, N, eps;  rms_norm_gated_bf16: x, z, w, out | R, N, eps
	for _, p := range []struct {
		R, N    int
		inPlace bool
	}{{1, hidden, false}, {7, hidden, false}, {5 * qHeads, headDim, false}, {3, 100, false}, {2, 5000, false}, {4, hidden, true}, {2, 7, false}} {
		label := fmt.Sprintf("R=%d N=%d", p.R, p.N)
		if p.inPlace {
			label += " in place"
		}
		add("rms_norm_bf16", false, label, func(g gen) *Case {
			x := g.bf16(p.R*p.N, 2)
			bufs := []Buffer{in("x", backend.BF16, x), in("w", backend.BF16, g.bf16Uniform(p.N, 0.5, 1.5)), out("out", backend.BF16, p.R*p.N)}
			if p.inPlace {
				bufs[0] = inout("x", backend.BF16, x)
				bufs[2] = alias("out", "x", backend.BF16)
			}
			return &Case{Tol: tolBF16, Buffers: bufs, Scalars: append(ints(p.R, p.N), backend.Float(1e-6))}
		})
	}
	for _, p := range []struct{ R, N int }{{gdnHv, gdnD}, {5 * gdnHv, gdnD}, {3, 77}, {1, 1000}} {
		add("rms_norm_gated_bf16", false, fmt.Sprintf("R=%d N=%d", p.R, p.N), func(g gen) *Case {
			return &Case{Tol: tolBF16, Buffers: []Buffer{
				in("x", backend.BF16, g.bf16(p.R*p.N, 1)), in("z", backend.BF16, g.bf16(p.R*p.N, 2)),
				in("w", backend.BF16, g.bf16Uniform(p.N, 0.5, 1.5)), out("out", backend.BF16, p.R*p.N),
			}, Scalars: append(ints(p.R, p.N), backend.Float(1e-6))}
		})
	}

	// add_rms_norm_bf16: a, b, w, sum, out | R, N, eps (the sum in place over a, as the decode path runs it)
	for _, p := range []struct {
		R, N    int
		inPlace bool
	}{{1, hidden, true}, {1, hidden, false}, {6, hidden, true}, {3, 100, false}, {2, 5000, true}, {2, 9000, false}, {2, 6, false},
		{1, 24576, true}, // three 16-byte pieces a thread: the third re-read from sum
	} {
		label := fmt.Sprintf("R=%d N=%d", p.R, p.N)
		if p.inPlace {
			label += " in place"
		}
		add("add_rms_norm_bf16", false, label, func(g gen) *Case {
			a := g.bf16(p.R*p.N, 2)
			bufs := []Buffer{
				in("a", backend.BF16, a), in("b", backend.BF16, g.bf16(p.R*p.N, 1)),
				in("w", backend.BF16, g.bf16Uniform(p.N, 0.5, 1.5)), out("sum", backend.BF16, p.R*p.N), out("out", backend.BF16, p.R*p.N),
			}
			if p.inPlace {
				bufs[0] = inout("a", backend.BF16, a)
				bufs[3] = alias("sum", "a", backend.BF16)
			}
			return &Case{Tol: tolBF16, Buffers: bufs, Scalars: append(ints(p.R, p.N), backend.Float(1e-6))}
		})
	}

	// split_qgate_bf16: src, q, gate | T, H, D
	for _, p := range []struct{ T, H, D int }{{1, qHeads, headDim}, {5, qHeads, headDim}, {2, 3, 7}} {
		add("split_qgate_bf16", false, fmt.Sprintf("T=%d H=%d D=%d", p.T, p.H, p.D), func(g gen) *Case {
			n := p.T * p.H * p.D
			return &Case{Tol: tolExact, Buffers: []Buffer{
				in("src", backend.BF16, g.bf16(2*n, 1)), out("q", backend.BF16, n), out("gate", backend.BF16, n),
			}, Scalars: ints(p.T, p.H, p.D)}
		})
	}

	// rope_neox_bf16: x (in place) | T, H, D, rotDims, pos0, theta
	for _, p := range []struct {
		T, H, D, rot, pos0 int
		theta              float32
	}{
		{1, qHeads, headDim, 64, 0, 1e7}, {1, kvHeads, headDim, 64, 4095, 1e7}, {7, qHeads, headDim, 64, 100, 1e7},
		{3, 3, 10, 6, 17, 10000}, {1, qHeads, 128, 128, 30000, 1e6},
	} {
		add("rope_neox_bf16", false, fmt.Sprintf("T=%d H=%d D=%d rot=%d pos0=%d θ=%g", p.T, p.H, p.D, p.rot, p.pos0, p.theta), func(g gen) *Case {
			return &Case{Tol: tolBF16, Buffers: []Buffer{inout("x", backend.BF16, g.bf16(p.T*p.H*p.D, 1))},
				Scalars: append(ints(p.T, p.H, p.D, p.rot, p.pos0), backend.Float(p.theta))}
		})
	}

	// kv_append_bf16: k, v, kcache, vcache | T, Hkv, D, Cap, pos0
	for _, p := range []struct{ T, H, D, Cap, pos0 int }{{1, kvHeads, headDim, 4096, 4095}, {7, kvHeads, headDim, 64, 10}, {3, 3, 7, 5, 2}} {
		add("kv_append_bf16", false, fmt.Sprintf("T=%d Hkv=%d D=%d Cap=%d pos0=%d", p.T, p.H, p.D, p.Cap, p.pos0), func(g gen) *Case {
			n, c := p.T*p.H*p.D, p.H*p.Cap*p.D
			return &Case{Tol: tolExact, Buffers: []Buffer{
				in("k", backend.BF16, g.bf16(n, 1)), in("v", backend.BF16, g.bf16(n, 1)),
				inout("kcache", backend.BF16, g.bf16(c, 1)), inout("vcache", backend.BF16, g.bf16(c, 1)),
			}, Scalars: ints(p.T, p.H, p.D, p.Cap, p.pos0)}
		})
	}

	// attn_prep_bf16: qp, k, v, q_norm, k_norm, q, gate, kcache, vcache | T, Hq, Hkv, D, rotDims, pos0, Cap, theta, eps, shift
	// (a negative shift: a cache's positions after an image run behind its rows)
	for _, p := range []struct{ T, Hq, Hkv, D, rot, Cap, pos0, shift int }{
		{1, qHeads, kvHeads, headDim, 64, 4096, 4095, 0}, {7, qHeads, kvHeads, headDim, 64, 64, 10, 0}, {3, 6, 2, 80, 80, 5, 2, 0},
		{2, 4, 4, 128, 32, 40, 0, 0}, {1, qHeads, kvHeads, headDim, 64, 4096, 1500, -992},
	} {
		add("attn_prep_bf16", false, fmt.Sprintf("T=%d Hq=%d Hkv=%d D=%d rot=%d Cap=%d pos0=%d shift=%d", p.T, p.Hq, p.Hkv, p.D, p.rot, p.Cap, p.pos0, p.shift), func(g gen) *Case {
			n, c := p.T*p.Hkv*p.D, p.Hkv*p.Cap*p.D
			return &Case{Tol: tolBF16, Buffers: []Buffer{
				in("qp", backend.BF16, g.bf16(p.T*p.Hq*2*p.D, 1)), in("k", backend.BF16, g.bf16(n, 1)), in("v", backend.BF16, g.bf16(n, 1)),
				in("q_norm", backend.BF16, g.bf16(p.D, 1)), in("k_norm", backend.BF16, g.bf16(p.D, 1)),
				out("q", backend.BF16, p.T*p.Hq*p.D), out("gate", backend.BF16, p.T*p.Hq*p.D),
				inout("kcache", backend.BF16, g.bf16(c, 1)), inout("vcache", backend.BF16, g.bf16(c, 1)),
			}, Scalars: append(ints(p.T, p.Hq, p.Hkv, p.D, p.rot, p.pos0, p.Cap), backend.Float(1e7), backend.Float(1e-6), backend.Int(p.shift))}
		})
	}

	// attn_prep_batch_bf16: qp, k, v, q_norm, k_norm, q, gate, kcache, vcache (pools of S slots), seqs | B, Hq, Hkv, D, rotDims, Cap, theta, eps, stride
	// (verify: the first rows one sequence's, its slot's next cache rows)
	for _, p := range []struct{ B, Hq, Hkv, D, rot, Cap, S, verify int }{
		{4, qHeads, kvHeads, headDim, 64, 64, 5, 1}, {3, 6, 2, 80, 80, 9, 3, 1}, {16, 4, 2, 32, 16, 7, 16, 1},
		{6, qHeads, kvHeads, headDim, 64, 64, 5, 4}, {16, 4, 2, 32, 16, 20, 16, 5},
	} {
		add("attn_prep_batch_bf16", false, fmt.Sprintf("B=%d Hq=%d Hkv=%d D=%d rot=%d Cap=%d slots=%d verify=%d", p.B, p.Hq, p.Hkv, p.D, p.rot, p.Cap, p.S, p.verify), func(g gen) *Case {
			n, stride := p.B*p.Hkv*p.D, p.Hkv*p.Cap*p.D
			slots := g.slotIDs(p.B-p.verify+1, p.S)
			seqs := make([]int32, 3*p.B)
			for r := range p.B { // a row anywhere in its cache, its rotary position shifted (an image's) or not
				row := int32(g.r.IntN(p.Cap))
				seqs[3*r], seqs[3*r+1], seqs[3*r+2] = slots[max(0, r-p.verify+1)], row, row+int32(g.r.IntN(3)*g.r.IntN(1000))
			}
			first := int32(g.r.IntN(p.Cap - p.verify + 1))
			for r := range p.verify { // a verify's rows: one slot's next cache rows
				seqs[3*r+1], seqs[3*r+2] = first+int32(r), first+int32(r)
			}
			return &Case{Tol: tolBF16, Buffers: []Buffer{
				in("qp", backend.BF16, g.bf16(p.B*p.Hq*2*p.D, 1)), in("k", backend.BF16, g.bf16(n, 1)), in("v", backend.BF16, g.bf16(n, 1)),
				in("q_norm", backend.BF16, g.bf16(p.D, 1)), in("k_norm", backend.BF16, g.bf16(p.D, 1)),
				out("q", backend.BF16, p.B*p.Hq*p.D), out("gate", backend.BF16, p.B*p.Hq*p.D),
				inout("kcache", backend.BF16, g.bf16(p.S*stride, 1)), inout("vcache", backend.BF16, g.bf16(p.S*stride, 1)),
				in("seqs", backend.I32, i32Bytes(seqs)),
			}, Scalars: append(ints(p.B, p.Hq, p.Hkv, p.D, p.rot, p.Cap), backend.Float(1e7), backend.Float(1e-6), backend.Int(stride))}
		})
	}

	// attention_bf16: q, kcache, vcache, out | T, Hq, Hkv, D, Cap, kvLen, scale
	for _, p := range []struct{ T, Hq, Hkv, D, Cap, kvLen int }{
		{1, qHeads, kvHeads, headDim, 4096, 1}, {1, qHeads, kvHeads, headDim, 4096, 4096},
		{1, qHeads, kvHeads, headDim, 3001, 3000}, {16, qHeads, kvHeads, headDim, 16, 16},
		{9, qHeads, kvHeads, headDim, 1000, 700}, {2, 4, 4, 128, 40, 33}, {3, 6, 2, 80, 5, 5},
		{1, 8, 1, 64, 2, 2},
	} {
		add("attention_bf16", false, fmt.Sprintf("T=%d Hq=%d Hkv=%d D=%d Cap=%d kvLen=%d", p.T, p.Hq, p.Hkv, p.D, p.Cap, p.kvLen), func(g gen) *Case {
			c := p.Hkv * p.Cap * p.D
			return &Case{Tol: tolBF16, Buffers: []Buffer{
				in("q", backend.BF16, g.bf16(p.T*p.Hq*p.D, 1)), in("kcache", backend.BF16, g.bf16(c, 1)),
				in("vcache", backend.BF16, g.bf16(c, 1)), out("out", backend.BF16, p.T*p.Hq*p.D),
			}, Scalars: append(ints(p.T, p.Hq, p.Hkv, p.D, p.Cap, p.kvLen), backend.Float(float32(1/math.Sqrt(float64(p.D)))))}
		})
	}

	// attention_flash_bf16: as attention_bf16 (and against its reference). A
	// chunk of a prompt after a prefix, a chunk alone, ragged tiles (T not a
	// multiple of FA_BQ = 64, a last tile with idle SIMD-groups), one query,
	// D = 80 (tiled, five 16-wide blocks), D = 36 (the plain fallback) and a
	// chunk at the end of a 32K context.
	for _, p := range []struct{ T, Hq, Hkv, D, Cap, kvLen int }{
		{512, qHeads, kvHeads, headDim, 2048, 1536}, {128, qHeads, kvHeads, headDim, 128, 128},
		{64, qHeads, kvHeads, headDim, 32768, 32768},
		{100, qHeads, kvHeads, headDim, 300, 233}, {1, qHeads, kvHeads, headDim, 64, 40},
		{70, 6, 2, 80, 90, 90}, {33, 4, 4, 128, 40, 33}, {5, 6, 2, 36, 9, 8},
	} {
		add("attention_flash_bf16", p.T*p.kvLen > 1<<18, fmt.Sprintf("T=%d Hq=%d Hkv=%d D=%d Cap=%d kvLen=%d", p.T, p.Hq, p.Hkv, p.D, p.Cap, p.kvLen), func(g gen) *Case {
			c := p.Hkv * p.Cap * p.D
			return &Case{Tol: tolBF16, Buffers: []Buffer{
				in("q", backend.BF16, g.bf16(p.T*p.Hq*p.D, 1)), in("kcache", backend.BF16, g.bf16(c, 1)),
				in("vcache", backend.BF16, g.bf16(c, 1)), out("out", backend.BF16, p.T*p.Hq*p.D),
			}, Scalars: append(ints(p.T, p.Hq, p.Hkv, p.D, p.Cap, p.kvLen), backend.Float(float32(1/math.Sqrt(float64(p.D)))))}
		})
	}

	// attn_prep_tree_bf16: as attn_prep_bf16, then pos (a tree's) | as attn_prep_bf16.
	for _, p := range []struct{ T, Hq, Hkv, D, rot, Cap, pos0 int }{
		{12, qHeads, kvHeads, headDim, 64, 4096, 4000}, {5, 6, 2, 80, 80, 9, 2},
	} {
		add("attn_prep_tree_bf16", false, fmt.Sprintf("T=%d Hq=%d Hkv=%d D=%d rot=%d Cap=%d pos0=%d", p.T, p.Hq, p.Hkv, p.D, p.rot, p.Cap, p.pos0), func(g gen) *Case {
			n, c := p.T*p.Hkv*p.D, p.Hkv*p.Cap*p.D
			pos, _ := treeLayout(g.treeParents(p.T), p.pos0)
			return &Case{Tol: tolBF16, Buffers: []Buffer{
				in("qp", backend.BF16, g.bf16(p.T*p.Hq*2*p.D, 1)), in("k", backend.BF16, g.bf16(n, 1)), in("v", backend.BF16, g.bf16(n, 1)),
				in("q_norm", backend.BF16, g.bf16(p.D, 1)), in("k_norm", backend.BF16, g.bf16(p.D, 1)),
				out("q", backend.BF16, p.T*p.Hq*p.D), out("gate", backend.BF16, p.T*p.Hq*p.D),
				inout("kcache", backend.BF16, g.bf16(c, 1)), inout("vcache", backend.BF16, g.bf16(c, 1)), in("pos", backend.I32, pos),
			}, Scalars: append(ints(p.T, p.Hq, p.Hkv, p.D, p.rot, p.pos0, p.Cap), backend.Float(1e7), backend.Float(1e-6))}
		})
	}

	// attn_prep_mrope_bf16: as attn_prep_tree_bf16 with pos i32 [T, 3] | ..., Cap, sh, sw, theta, eps.
	// An image's rows (time fixed, rows and columns) after text, Qwen3.5's
	// sections [11, 11, 10] over 64 rotary dims; odd sections on a small head.
	for _, p := range []struct{ T, Hq, Hkv, D, rot, Cap, pos0, sh, sw int }{
		{40, qHeads, kvHeads, headDim, 64, 4096, 1000, 11, 10}, {7, 6, 2, 80, 80, 20, 3, 5, 3},
	} {
		add("attn_prep_mrope_bf16", false, fmt.Sprintf("T=%d Hq=%d Hkv=%d D=%d rot=%d Cap=%d pos0=%d sections=%d,%d", p.T, p.Hq, p.Hkv, p.D, p.rot, p.Cap, p.pos0, p.sh, p.sw), func(g gen) *Case {
			n, c := p.T*p.Hkv*p.D, p.Hkv*p.Cap*p.D
			pos := make([]int32, 3*p.T)
			for t := range p.T {
				pos[3*t], pos[3*t+1], pos[3*t+2] = int32(p.pos0), int32(p.pos0+t/4), int32(p.pos0+t%4)
			}
			return &Case{Tol: tolBF16, Buffers: []Buffer{
				in("qp", backend.BF16, g.bf16(p.T*p.Hq*2*p.D, 1)), in("k", backend.BF16, g.bf16(n, 1)), in("v", backend.BF16, g.bf16(n, 1)),
				in("q_norm", backend.BF16, g.bf16(p.D, 1)), in("k_norm", backend.BF16, g.bf16(p.D, 1)),
				out("q", backend.BF16, p.T*p.Hq*p.D), out("gate", backend.BF16, p.T*p.Hq*p.D),
				inout("kcache", backend.BF16, g.bf16(c, 1)), inout("vcache", backend.BF16, g.bf16(c, 1)), in("pos", backend.I32, i32Bytes(pos)),
			}, Scalars: append(ints(p.T, p.Hq, p.Hkv, p.D, p.rot, p.pos0, p.Cap, p.sh, p.sw), backend.Float(1e7), backend.Float(1e-6))}
		})
	}

	// attention_tree_bf16: q, kcache, vcache, mask (a tree's), out | T, Hq, Hkv, D, Cap, kvLen, scale
	for _, p := range []struct{ T, Hq, Hkv, D, Cap, kvLen int }{
		{12, qHeads, kvHeads, headDim, 4096, 3000}, {1, qHeads, kvHeads, headDim, 64, 1}, {32, 4, 2, 128, 40, 40}, {6, 6, 2, 80, 9, 8},
	} {
		add("attention_tree_bf16", false, fmt.Sprintf("T=%d Hq=%d Hkv=%d D=%d Cap=%d kvLen=%d", p.T, p.Hq, p.Hkv, p.D, p.Cap, p.kvLen), func(g gen) *Case {
			c := p.Hkv * p.Cap * p.D
			_, mask := treeLayout(g.treeParents(p.T), p.kvLen-p.T)
			return &Case{Tol: tolBF16, Buffers: []Buffer{
				in("q", backend.BF16, g.bf16(p.T*p.Hq*p.D, 1)), in("kcache", backend.BF16, g.bf16(c, 1)),
				in("vcache", backend.BF16, g.bf16(c, 1)), in("mask", backend.I32, mask), out("out", backend.BF16, p.T*p.Hq*p.D),
			}, Scalars: append(ints(p.T, p.Hq, p.Hkv, p.D, p.Cap, p.kvLen), backend.Float(float32(1/math.Sqrt(float64(p.D)))))}
		})
	}

	// attention_split_f32: q, kcache, vcache, partial | T, Hq, Hkv, D, Cap, kvLen, S, scale.
	// Every range non-empty here (an empty one writes −3e38, which would swamp
	// the relative error); attention_merge_bf16's cases have empty ones.
	for _, p := range []struct{ T, Hq, Hkv, D, Cap, kvLen, S int }{
		{1, qHeads, kvHeads, headDim, 8192, 8000, 32}, {1, qHeads, kvHeads, headDim, 1100, 1024, 8},
		{3, 6, 2, 80, 50, 40, 4}, {2, 4, 4, 128, 300, 300, 7}, {1, 32, 2, 128, 700, 650, 5}, {2, 4, 2, 36, 64, 60, 3},
	} {
		add("attention_split_f32", p.kvLen > 4096, fmt.Sprintf("T=%d Hq=%d Hkv=%d D=%d Cap=%d kvLen=%d S=%d", p.T, p.Hq, p.Hkv, p.D, p.Cap, p.kvLen, p.S), func(g gen) *Case {
			c := p.Hkv * p.Cap * p.D
			return &Case{Tol: tolF32 * 10, Buffers: []Buffer{
				in("q", backend.BF16, g.bf16(p.T*p.Hq*p.D, 1)), in("kcache", backend.BF16, g.bf16(c, 1)),
				in("vcache", backend.BF16, g.bf16(c, 1)), out("partial", backend.F32, p.T*p.Hq*p.S*(p.D+2)),
			}, Scalars: append(ints(p.T, p.Hq, p.Hkv, p.D, p.Cap, p.kvLen, p.S), backend.Float(float32(1/math.Sqrt(float64(p.D)))))}
		})
	}
	// attention_split_mma_f32: as attention_split_f32, each range whole blocks
	// of FA_BK keys. Every row sees some of every range (an empty one's −3e38
	// would swamp the relative error; SplitAttentionInvariance has rows whose
	// ranges differ): decode at 32K and 1K, a verify of 5 and of 8 (64 rows),
	// D = 80, the plain fallback.
	for _, p := range []struct{ T, Hq, Hkv, D, Cap, kvLen, S int }{
		{1, qHeads, kvHeads, headDim, 32768, 32768, 128}, {1, qHeads, kvHeads, headDim, 1100, 1024, 16},
		{5, qHeads, kvHeads, headDim, 4096, 4064, 64}, {8, qHeads, kvHeads, headDim, 300, 300, 4},
		{3, 6, 2, 80, 50, 48, 2}, {2, 4, 2, 36, 64, 60, 2},
	} {
		add("attention_split_mma_f32", p.kvLen > 4096, fmt.Sprintf("T=%d Hq=%d Hkv=%d D=%d Cap=%d kvLen=%d S=%d", p.T, p.Hq, p.Hkv, p.D, p.Cap, p.kvLen, p.S), func(g gen) *Case {
			c := p.Hkv * p.Cap * p.D
			return &Case{Tol: tolBF16, Buffers: []Buffer{
				in("q", backend.BF16, g.bf16(p.T*p.Hq*p.D, 1)), in("kcache", backend.BF16, g.bf16(c, 1)),
				in("vcache", backend.BF16, g.bf16(c, 1)), out("partial", backend.F32, p.T*p.Hq*p.S*(p.D+2)),
			}, Scalars: append(ints(p.T, p.Hq, p.Hkv, p.D, p.Cap, p.kvLen, p.S), backend.Float(float32(1/math.Sqrt(float64(p.D)))))}
		})
	}
	// attention_merge_bf16: partial, out | T, Hq, D, S. Partials as the split
	// writes them (maxima around 0, sums of up to a few hundred), every third empty.
	for _, p := range []struct{ T, Hq, D, S int }{{1, qHeads, headDim, 32}, {3, 6, 80, 4}, {2, 4, 128, 1}} {
		add("attention_merge_bf16", false, fmt.Sprintf("T=%d Hq=%d D=%d S=%d", p.T, p.Hq, p.D, p.S), func(g gen) *Case {
			n := p.T * p.Hq * p.S
			part := make([]byte, 4*n*(p.D+2))
			put := func(i int, v float32) { binary.LittleEndian.PutUint32(part[4*i:], math.Float32bits(v)) }
			for j := range n {
				base := j * (p.D + 2)
				if j%3 == 2 && p.S > 1 {
					put(base+p.D, -3e38) // an empty range: o = 0, l = 0
					continue
				}
				l := 1 + 100*g.r.Float32()
				for d := range p.D {
					put(base+d, l*float32(g.r.NormFloat64()))
				}
				put(base+p.D, float32(g.r.NormFloat64()))
				put(base+p.D+1, l)
			}
			return &Case{Tol: tolBF16, Buffers: []Buffer{in("partial", backend.F32, part), out("out", backend.BF16, p.T*p.Hq*p.D)},
				Scalars: ints(p.T, p.Hq, p.D, p.S)}
		})
	}

	// The batched step's attention (attention_batch_bf16, attention_split_batch_f32,
	// attention_split_mma_batch_f32, attention_merge_batch_bf16): one query a
	// row over its slot's keys, the rows of fewer than split keys the plain
	// kernel's, the others the split kernels'; slots in a random order, rows
	// short and long. The outputs start as zeros: a kernel leaves the other
	// path's rows as they are.
	// With shared, pairs of rows take one slot (a verify's rows).
	for _, p := range []struct {
		B, Hq, Hkv, D, Cap, S, split, slots int
		shared                              bool
	}{
		{4, qHeads, kvHeads, headDim, 300, 8, 128, 5, false}, {3, 6, 2, 80, 50, 4, 1 << 30, 3, false}, {16, 4, 2, 32, 40, 2, 10, 16, false},
		{8, qHeads, kvHeads, headDim, 4096, 64, 128, 8, false}, {5, 4, 2, 36, 64, 3, 1, 6, false},
		{6, qHeads, kvHeads, headDim, 300, 8, 128, 6, true}, {16, 4, 2, 32, 40, 2, 10, 16, true},
	} {
		label := fmt.Sprintf("B=%d Hq=%d Hkv=%d D=%d Cap=%d S=%d split=%d slots=%d shared=%v", p.B, p.Hq, p.Hkv, p.D, p.Cap, p.S, p.split, p.slots, p.shared)
		seqsOf := func(g gen) []int32 {
			if p.shared {
				return g.sharedSeqs(p.B, p.slots, p.Cap, p.S, p.split)
			}
			return g.batchSeqs(p.B, p.slots, p.Cap, p.S, p.split)
		}
		stride := p.Hkv * p.Cap * p.D
		scale := backend.Float(float32(1 / math.Sqrt(float64(p.D))))
		caches := func(g gen) []Buffer {
			return []Buffer{in("q", backend.BF16, g.bf16(p.B*p.Hq*p.D, 1)), in("kcache", backend.BF16, g.bf16(p.slots*stride, 1)),
				in("vcache", backend.BF16, g.bf16(p.slots*stride, 1)), in("seqs", backend.I32, i32Bytes(seqsOf(g)))}
		}
		zeros := func(dt backend.DType, n int) []byte { return make([]byte, n*dt.Size()) }
		add("attention_batch_bf16", false, label, func(g gen) *Case {
			return &Case{Tol: tolBF16, Buffers: append(caches(g), inout("out", backend.BF16, zeros(backend.BF16, p.B*p.Hq*p.D))),
				Scalars: append(ints(p.B, p.Hq, p.Hkv, p.D, p.Cap, p.split, stride), scale)}
		})
		for _, kernel := range []string{"attention_split_batch_f32", "attention_split_mma_batch_f32"} {
			tol := tolF32 * 10
			if kernel == "attention_split_mma_batch_f32" {
				tol = tolBF16
			}
			add(kernel, false, label, func(g gen) *Case {
				return &Case{Tol: tol, Buffers: append(caches(g), inout("partial", backend.F32, zeros(backend.F32, p.B*p.Hq*p.S*(p.D+2)))),
					Scalars: append(ints(p.B, p.Hq, p.Hkv, p.D, p.Cap, p.S, p.split, stride), scale)}
			})
		}
		add("attention_merge_batch_bf16", false, label, func(g gen) *Case {
			part := make([]byte, 4*p.B*p.Hq*p.S*(p.D+2))
			put := func(i int, v float32) { binary.LittleEndian.PutUint32(part[4*i:], math.Float32bits(v)) }
			for j := range p.B * p.Hq * p.S {
				l := 1 + 100*g.r.Float32()
				for d := range p.D {
					put(j*(p.D+2)+d, l*float32(g.r.NormFloat64()))
				}
				put(j*(p.D+2)+p.D, float32(g.r.NormFloat64()))
				put(j*(p.D+2)+p.D+1, l)
			}
			return &Case{Tol: tolBF16, Buffers: []Buffer{in("partial", backend.F32, part), in("seqs", backend.I32, i32Bytes(seqsOf(g))),
				inout("out", backend.BF16, zeros(backend.BF16, p.B*p.Hq*p.D))}, Scalars: ints(p.B, p.Hq, p.D, p.S, p.split)}
		})
	}

	// The vision tower's (Qwen3.5's ViT: width 1152, 16 heads of 72, MLP 4304,
	// merger 4608): linear_bf16: x, w, bias, out | T, In, Out, act. Ragged
	// tiles (T, Out not multiples of 64; In not one of the step), each
	// activation, one token, and the real widths; In a multiple of 8 (the
	// 16-byte copies on CUDA sm_80+) and not (300, 13: staged element by
	// element).
	for _, p := range []struct{ T, In, Out, act int }{
		{1, 64, 64, 0}, {5, 72, 100, 1}, {70, 300, 77, 2}, {3, 13, 9, 0}, {129, 1152, 200, 1}, {64, 4304, 96, 0},
		{1024, visionWidth, 3 * visionWidth, 0}, {1024, visionWidth, visionMLP, 1}, {256, 4 * visionWidth, 4 * visionWidth, 2},
	} {
		add("linear_bf16", p.T*p.Out >= 1<<20, fmt.Sprintf("T=%d In=%d Out=%d act=%d", p.T, p.In, p.Out, p.act), func(g gen) *Case {
			return &Case{Tol: tolBF16, Buffers: []Buffer{
				in("x", backend.BF16, g.bf16(p.T*p.In, 1)), in("w", backend.BF16, g.bf16(p.Out*p.In, 1/math.Sqrt(float64(p.In)))),
				in("bias", backend.BF16, g.bf16(p.Out, 0.5)), out("out", backend.BF16, p.T*p.Out),
			}, Scalars: ints(p.T, p.In, p.Out, p.act)}
		})
	}
	// layer_norm_bf16: x, w, b, out | R, N, eps
	for _, p := range []struct {
		R, N    int
		inPlace bool
	}{{1, visionWidth, false}, {7, 100, false}, {3, 4 * visionWidth, false}, {4, visionWidth, true}, {2, 7, false}} {
		label := fmt.Sprintf("R=%d N=%d", p.R, p.N)
		if p.inPlace {
			label += " in place"
		}
		add("layer_norm_bf16", false, label, func(g gen) *Case {
			x := g.bf16(p.R*p.N, 2)
			bufs := []Buffer{in("x", backend.BF16, x), in("w", backend.BF16, g.bf16Uniform(p.N, 0.5, 1.5)),
				in("b", backend.BF16, g.bf16(p.N, 0.1)), out("out", backend.BF16, p.R*p.N)}
			if p.inPlace {
				bufs[0] = inout("x", backend.BF16, x)
				bufs[3] = alias("out", "x", backend.BF16)
			}
			return &Case{Tol: tolBF16, Buffers: bufs, Scalars: append(ints(p.R, p.N), backend.Float(1e-6))}
		})
	}
	// vision_attn_prep_bf16: qkv, pos, q, k, v | T, H, D, Dp, theta (heads
	// padded to 16 as ImageAttention pads them; D = 4 pads to 16)
	for _, p := range []struct{ T, H, D int }{{20, 3, 72}, {5, 16, 64}, {1, 1, 4}, {1024, 16, 72}} {
		dp := (p.D + 15) / 16 * 16
		add("vision_attn_prep_bf16", false, fmt.Sprintf("T=%d H=%d D=%d Dp=%d", p.T, p.H, p.D, dp), func(g gen) *Case {
			pos := make([]int32, 2*p.T)
			for i := range pos {
				pos[i] = int32(g.r.IntN(64))
			}
			n, np := p.T*p.H*p.D, p.T*p.H*dp
			return &Case{Tol: tolBF16, Buffers: []Buffer{
				in("qkv", backend.BF16, g.bf16(3*n, 1)), in("pos", backend.I32, i32Bytes(pos)),
				out("q", backend.BF16, np), out("k", backend.BF16, np), out("v", backend.BF16, np),
			}, Scalars: append(ints(p.T, p.H, p.D, dp), backend.Float(10000))}
		})
	}
	// attention_full_bf16: q, k, v, out | T, H, D, Dp, scale. Inputs padded
	// with zeros from D to Dp, as vision_attn_prep_bf16 writes them: the
	// released tower's 72 in 80 (the matrix units' tiles, ragged last tiles
	// at T = 50 and 1000), 64 unpadded, D = 8 in 16 (one query; and 200
	// over four key blocks, the last ragged), 128 (the widest tiles), and
	// Dp = 40 (not a multiple of 16: the plain walk on every backend).
	for _, p := range []struct{ T, H, D, Dp int }{
		{1, 1, 8, 16}, {200, 4, 16, 16}, {50, 2, 72, 80}, {300, 3, 64, 64}, {1000, 16, 72, 80}, {130, 2, 128, 128}, {70, 2, 36, 40},
	} {
		add("attention_full_bf16", p.T >= 1000, fmt.Sprintf("T=%d H=%d D=%d Dp=%d", p.T, p.H, p.D, p.Dp), func(g gen) *Case {
			padded := func() []byte {
				b := g.bf16(p.T*p.H*p.Dp, 1)
				for r := range p.T * p.H {
					clear(b[2*(r*p.Dp+p.D) : 2*(r+1)*p.Dp])
				}
				return b
			}
			return &Case{Tol: tolBF16, Buffers: []Buffer{
				in("q", backend.BF16, padded()), in("k", backend.BF16, padded()),
				in("v", backend.BF16, padded()), out("out", backend.BF16, p.T*p.H*p.D),
			}, Scalars: append(ints(p.T, p.H, p.D, p.Dp), backend.Float(float32(1/math.Sqrt(float64(p.D)))))}
		})
	}

	// Elementwise: x|a|gate, ..., out | N  (or T, H)
	for _, n := range []int{qHeads * headDim, 1, 12345} {
		add("sigmoid_mul_bf16", false, fmt.Sprintf("N=%d", n), func(g gen) *Case {
			return &Case{Tol: tolBF16, Buffers: []Buffer{in("x", backend.BF16, g.bf16(n, 1)), in("gate", backend.BF16, g.bf16(n, 3)), out("out", backend.BF16, n)}, Scalars: ints(n)}
		})
	}
	for _, p := range []struct {
		n       int
		inPlace bool
	}{{hidden, false}, {8*hidden + 5, false}, {hidden, true}} {
		label := fmt.Sprintf("N=%d", p.n)
		if p.inPlace {
			label += " in place"
		}
		add("add_bf16", false, label, func(g gen) *Case {
			a := g.bf16(p.n, 1)
			bufs := []Buffer{in("a", backend.BF16, a), in("b", backend.BF16, g.bf16(p.n, 1)), out("out", backend.BF16, p.n)}
			if p.inPlace {
				bufs[0] = inout("a", backend.BF16, a)
				bufs[2] = alias("out", "a", backend.BF16)
			}
			return &Case{Tol: tolBF16, Buffers: bufs, Scalars: ints(p.n)}
		})
	}
	for _, n := range []int{moeInt, topK * moeInt, 777} {
		add("swiglu_bf16", false, fmt.Sprintf("N=%d", n), func(g gen) *Case {
			return &Case{Tol: tolBF16, Buffers: []Buffer{in("gate", backend.BF16, g.bf16(n, 2)), in("up", backend.BF16, g.bf16(n, 1)), out("out", backend.BF16, n)}, Scalars: ints(n)}
		})
	}
	for _, p := range []struct{ T, H int }{{1, hidden}, {5, hidden}, {3, 33}} {
		add("add_sigmoid_scaled_bf16", false, fmt.Sprintf("T=%d H=%d", p.T, p.H), func(g gen) *Case {
			return &Case{Tol: tolBF16, Buffers: []Buffer{
				in("x", backend.BF16, g.bf16(p.T*p.H, 1)), in("y", backend.BF16, g.bf16(p.T*p.H, 1)),
				in("gate", backend.BF16, g.bf16(p.T, 2)), out("out", backend.BF16, p.T*p.H),
			}, Scalars: ints(p.T, p.H)}
		})
	}

	// copy_u32 and copy_u32x4: src, dst | N; fill_u32: dst | N, value
	for _, n := range []int{1, 1000, 2 * 1024 * 1024} {
		add("copy_u32", n > 1<<20, fmt.Sprintf("N=%d", n), func(g gen) *Case {
			return &Case{Tol: tolExact, Buffers: []Buffer{in("src", backend.U32, g.words(n)), out("dst", backend.U32, n)}, Scalars: ints(n)}
		})
		for _, tail := range []int{0, 3} { // the 16-byte copy's last thread takes any tail
			add("copy_u32x4", n > 1<<20, fmt.Sprintf("N=%d", n+tail), func(g gen) *Case {
				return &Case{Tol: tolExact, Buffers: []Buffer{in("src", backend.U32, g.words(n+tail)), out("dst", backend.U32, n+tail)}, Scalars: ints(n + tail)}
			})
		}
		add("fill_u32", false, fmt.Sprintf("N=%d", n), func(g gen) *Case {
			return &Case{Tol: tolExact, Buffers: []Buffer{out("dst", backend.U32, n)}, Scalars: ints(n, 12345)}
		})
	}

	// conv1d_silu_bf16: x, state (in/out), w, out | T, C, K
	for _, p := range []struct{ T, C, K int }{{1, convDim, 4}, {9, convDim, 4}, {2, 100, 4}, {1, 33, 2}, {5, 70, 1}, {3, 64, 8},
		{512, convDim, 4}, {40, 300, 4}, {17, 70, 8}, {33, 64, 3}} {
		add("conv1d_silu_bf16", false, fmt.Sprintf("T=%d C=%d K=%d", p.T, p.C, p.K), func(g gen) *Case {
			return &Case{Tol: tolBF16, Buffers: []Buffer{
				in("x", backend.BF16, g.bf16(p.T*p.C, 1)), inout("state", backend.BF16, g.bf16((p.K-1)*p.C, 1)),
				in("w", backend.BF16, g.bf16(p.C*p.K, 0.5)), out("out", backend.BF16, p.T*p.C),
			}, Scalars: ints(p.T, p.C, p.K)}
		})
	}

	// conv1d_silu_batch_bf16: x, states (a pool of P slots, in/out), runs, w, out | S, C, K, stride
	// (sequences of one row, a decode step's, and of several, a verify's)
	for _, p := range []struct {
		rows         []int
		C, K, P, pad int
	}{{[]int{1, 1, 1, 1, 1}, convDim, 4, 7, 37}, {[]int{1}, 33, 2, 1, 0}, {ones(16), 100, 8, 16, 3}, {[]int{1, 1, 1}, 70, 1, 4, 5},
		{[]int{1, 5, 1, 3}, convDim, 4, 6, 11}, {[]int{16}, 70, 4, 2, 0}, {[]int{2, 7, 1}, 33, 8, 5, 1}} {
		add("conv1d_silu_batch_bf16", false, fmt.Sprintf("rows=%v C=%d K=%d slots=%d", p.rows, p.C, p.K, p.P), func(g gen) *Case {
			stride, r := (p.K-1)*p.C+p.pad, sum(p.rows)
			return &Case{Tol: tolBF16, Buffers: []Buffer{
				in("x", backend.BF16, g.bf16(r*p.C, 1)), inout("states", backend.BF16, g.bf16(p.P*stride, 1)),
				in("runs", backend.I32, g.runs(p.rows, p.P)), in("w", backend.BF16, g.bf16(p.C*p.K, 0.5)), out("out", backend.BF16, r*p.C),
			}, Scalars: ints(len(p.rows), p.C, p.K, stride)}
		})
	}

	// qmatmul_mma_multi_conv_batch_bf16: as qmatmul_multi_bf16 over a batched
	// step's rows, then windows (a pool of P slots, in/out), conv_w, raw0, runs
	// (in row order) | T, In, Out0..3, fmt01, fmt23, K, stride
	for _, p := range []struct {
		rows          []int
		In, K, P, pad int
		slots         [4]slot
	}{
		{[]int{1, 1, 1, 1, 1, 1, 1, 1}, hidden, 4, 9, 37, [4]slot{{convDim, 4, 64}, {gdnHv * gdnD, 4, 64}, {gdnHv, 4, 64}, {gdnHv, 4, 64}}}, // 8 replies' step
		{[]int{1, 5, 1, 3}, hidden, 4, 6, 11, [4]slot{{convDim, 4, 64}, {gdnHv * gdnD, 4, 64}, {gdnHv, 4, 64}, {gdnHv, 4, 64}}},             // verifies beside steps
		{[]int{1}, 96, 3, 2, 0, [4]slot{{7, 4, 32}, {}, {5, 3, 32}, {3, 6, 32}}},
		{[]int{16}, 128, 1, 1, 0, [4]slot{{9, 8, 128}, {2, 2, 64}, {}, {}}},
		{[]int{2, 7, 1}, 128, 8, 5, 1, [4]slot{{40, 4, 128}, {3, 8, 64}, {}, {19, 4, 64}}},
	} {
		add("qmatmul_mma_multi_conv_batch_bf16", false, fmt.Sprintf("rows=%v In=%d K=%d channels=%d slots=%d", p.rows, p.In, p.K, p.slots[0].Out, p.P), func(g gen) *Case {
			t := sum(p.rows)
			bufs, scalars := multiCase(g, t, p.In, p.slots)
			ch := p.slots[0].Out
			stride := (p.K-1)*ch + p.pad
			bufs = append(bufs, inout("windows", backend.BF16, g.bf16(p.P*stride, 1)), in("conv_w", backend.BF16, g.bf16(ch*p.K, 0.5)),
				out("raw0", backend.BF16, t*ch), in("runs", backend.I32, g.runsInOrder(p.rows, p.P)))
			// scalars: T, In, Out0..3, fmt0..3 → the formats two a scalar, then K and stride.
			packed := append(scalars[:6:6], scalars[6]|scalars[7]<<16, scalars[8]|scalars[9]<<16, p.K, stride)
			return &Case{Tol: tolBF16, Buffers: bufs, Scalars: ints(packed...)}
		})
	}

	// conv1d_silu_tree_bf16: x, state, w, parent, out | T, C, K
	for _, p := range []struct{ T, C, K int }{{1, convDim, 4}, {12, convDim, 4}, {7, 33, 3}, {9, 20, 1}, {5, 16, 8}} {
		add("conv1d_silu_tree_bf16", false, fmt.Sprintf("T=%d C=%d K=%d", p.T, p.C, p.K), func(g gen) *Case {
			return &Case{Tol: tolBF16, Buffers: []Buffer{
				in("x", backend.BF16, g.bf16(p.T*p.C, 1)), in("state", backend.BF16, g.bf16((p.K-1)*p.C, 1)),
				in("w", backend.BF16, g.bf16(p.C*p.K, 0.5)), in("parent", backend.I32, g.tree(p.T)), out("out", backend.BF16, p.T*p.C),
			}, Scalars: ints(p.T, p.C, p.K)}
		})
	}

	// gdn_gates_bf16: a, b, aLog, dtBias, g, beta | T, Hv
	for _, p := range []struct{ T, Hv int }{{1, gdnHv}, {9, gdnHv}, {3, 5}} {
		add("gdn_gates_bf16", false, fmt.Sprintf("T=%d Hv=%d", p.T, p.Hv), func(g gen) *Case {
			return &Case{Tol: tolState, Buffers: []Buffer{
				in("a", backend.BF16, g.bf16(p.T*p.Hv, 2)), in("b", backend.BF16, g.bf16(p.T*p.Hv, 2)),
				in("aLog", backend.F32, g.f32Uniform(p.Hv, 0, 2.8, false)), in("dtBias", backend.BF16, g.bf16(p.Hv, 1)),
				out("g", backend.F32, p.T*p.Hv), out("beta", backend.F32, p.T*p.Hv),
			}, Scalars: ints(p.T, p.Hv)}
		})
	}

	// gdn_qk_norm_bf16: conv (in place) | T, Hk, Hv, Dk, Dv
	for _, p := range []struct{ T, Hk, Hv, Dk, Dv int }{
		{1, gdnHk, gdnHv, gdnD, gdnD}, {512, gdnHk, gdnHv, gdnD, gdnD}, {3, 2, 6, 64, 48}, {2, 1, 1, 40, 24}, {2, 2, 2, 256, 32},
	} {
		add("gdn_qk_norm_bf16", false, fmt.Sprintf("T=%d Hk=%d Hv=%d Dk=%d Dv=%d", p.T, p.Hk, p.Hv, p.Dk, p.Dv), func(g gen) *Case {
			width := 2*p.Hk*p.Dk + p.Hv*p.Dv
			return &Case{Tol: tolBF16, Buffers: []Buffer{inout("conv", backend.BF16, g.bf16(p.T*width, 1))},
				Scalars: ints(p.T, p.Hk, p.Hv, p.Dk, p.Dv)}
		})
	}

	// gdn_recurrence_bf16: conv, a, b, aLog, dtBias, state (in/out), out | T, Hk, Hv, Dk, Dv, normed
	// (normed: q and k taken as they are; random values do for the kernel test)
	for _, p := range []struct{ T, Hk, Hv, Dk, Dv, normed int }{
		{1, gdnHk, gdnHv, gdnD, gdnD, 0}, {9, gdnHk, gdnHv, gdnD, gdnD, 0}, {64, gdnHk, gdnHv, gdnD, gdnD, 0},
		{3, 2, 6, 64, 48, 0}, {2, 1, 1, 40, 24, 0}, {2, 2, 2, 256, 32, 0}, {2, 1, 3, 40, 13, 0},
		{64, gdnHk, gdnHv, gdnD, gdnD, 1}, {3, 2, 6, 64, 48, 1}, {2, 1, 1, 40, 24, 1},
	} {
		add("gdn_recurrence_bf16", false, fmt.Sprintf("T=%d Hk=%d Hv=%d Dk=%d Dv=%d normed=%d", p.T, p.Hk, p.Hv, p.Dk, p.Dv, p.normed), func(g gen) *Case {
			bufs := append(gdnRuleInputs(g, p.T, p.Hk, p.Hv, p.Dk, p.Dv),
				inout("state", backend.F32, g.f32(p.Hv*p.Dv*p.Dk, 0.1)), out("out", backend.BF16, p.T*p.Hv*p.Dv))
			return &Case{Tol: tolBF16, Buffers: bufs, Scalars: ints(p.T, p.Hk, p.Hv, p.Dk, p.Dv, p.normed)}
		})
	}

	// gdn_recurrence_batch_bf16: conv, a, b, aLog, dtBias, states (a pool of P slots, in/out), runs, out | S, Hk, Hv, Dk, Dv, stride
	// (sequences of one row, a decode step's, and of several, a verify's)
	for _, p := range []struct {
		rows                   []int
		Hk, Hv, Dk, Dv, P, pad int
	}{
		{[]int{1, 1, 1, 1}, gdnHk, gdnHv, gdnD, gdnD, 6, 64}, {[]int{1, 1, 1}, 2, 6, 64, 48, 3, 0}, {ones(16), 1, 1, 40, 24, 20, 8},
		{[]int{1}, 1, 3, 40, 13, 2, 1}, {[]int{1, 4, 1, 2}, gdnHk, gdnHv, gdnD, gdnD, 5, 0}, {[]int{16}, 2, 6, 64, 48, 1, 0},
		{[]int{9, 1, 3}, 1, 3, 40, 13, 4, 3},
	} {
		add("gdn_recurrence_batch_bf16", false, fmt.Sprintf("rows=%v Hk=%d Hv=%d Dk=%d Dv=%d slots=%d", p.rows, p.Hk, p.Hv, p.Dk, p.Dv, p.P), func(g gen) *Case {
			stride, r := p.Hv*p.Dv*p.Dk+p.pad, sum(p.rows)
			bufs := append(gdnRuleInputs(g, r, p.Hk, p.Hv, p.Dk, p.Dv),
				inout("states", backend.F32, g.f32(p.P*stride, 0.1)), in("runs", backend.I32, g.runs(p.rows, p.P)),
				out("out", backend.BF16, r*p.Hv*p.Dv))
			return &Case{Tol: tolBF16, Buffers: bufs, Scalars: ints(len(p.rows), p.Hk, p.Hv, p.Dk, p.Dv, stride)}
		})
	}

	// gdn_recurrence_tree_bf16: conv, a, b, aLog, dtBias, state, parent, out | T, Hk, Hv, Dk, Dv
	for _, p := range []struct{ T, Hk, Hv, Dk, Dv int }{
		{1, gdnHk, gdnHv, gdnD, gdnD}, {12, gdnHk, gdnHv, gdnD, gdnD}, {32, 1, 2, 64, 24}, {5, 2, 6, 40, 48},
	} {
		add("gdn_recurrence_tree_bf16", false, fmt.Sprintf("T=%d Hk=%d Hv=%d Dk=%d Dv=%d", p.T, p.Hk, p.Hv, p.Dk, p.Dv), func(g gen) *Case {
			bufs := append(gdnRuleInputs(g, p.T, p.Hk, p.Hv, p.Dk, p.Dv),
				in("state", backend.F32, g.f32(p.Hv*p.Dv*p.Dk, 0.1)), in("parent", backend.I32, g.tree(p.T)),
				out("out", backend.BF16, p.T*p.Hv*p.Dv))
			return &Case{Tol: tolBF16, Buffers: bufs, Scalars: ints(p.T, p.Hk, p.Hv, p.Dk, p.Dv)}
		})
	}

	// gdn_chunk_prep_f32: conv (q, k normalised), g, beta, prep | T, Hk, Hv, Dk, Dv;
	// gdn_chunk_bf16: conv, beta, prep (from the CPU's GDNChunkPrep), state (in/out), out | same.
	// q and k are normalised rows, as gdn_qk_norm_bf16 leaves them: the chunked
	// form's sums are only as well conditioned as the rule's inputs are.
	for _, p := range []struct{ T, Hk, Hv, Dk, Dv int }{
		{512, gdnHk, gdnHv, gdnD, gdnD}, {70, gdnHk, gdnHv, gdnD, gdnD}, {33, 2, 6, 64, 48}, {5, 1, 1, 40, 24}, {40, 2, 2, 128, 20},
	} {
		label := fmt.Sprintf("T=%d Hk=%d Hv=%d Dk=%d Dv=%d", p.T, p.Hk, p.Hv, p.Dk, p.Dv)
		chunk := kernels.Defines()["GDN_CHUNK"]
		prepLen := (p.T + chunk - 1) / chunk * p.Hv * (2*chunk*chunk + chunk)
		inputs := func(g gen) (conv, gs, beta []byte) {
			return g.gdnConv(p.T, p.Hk, p.Hv, p.Dk, p.Dv), g.f32Uniform(p.T*p.Hv, 0.5, 1, false), g.f32Uniform(p.T*p.Hv, 0, 1, true)
		}
		add("gdn_chunk_prep_f32", false, label, func(g gen) *Case {
			conv, gs, beta := inputs(g)
			return &Case{Tol: tolF32 * 10, Buffers: []Buffer{
				in("conv", backend.BF16, conv), in("g", backend.F32, gs), in("beta", backend.F32, beta), out("prep", backend.F32, prepLen),
			}, Scalars: ints(p.T, p.Hk, p.Hv, p.Dk, p.Dv)}
		})
		add("gdn_chunk_bf16", p.T >= 512, label, func(g gen) *Case {
			conv, gs, beta := inputs(g)
			prep := cpu.GDNChunkPrep(bf16Values(conv), f32Values(gs), f32Values(beta), p.T, p.Hk, p.Hv, p.Dk, p.Dv)
			return &Case{Tol: tolBF16, Buffers: []Buffer{
				in("conv", backend.BF16, conv), in("beta", backend.F32, beta), in("prep", backend.F32, f32Bytes(prep)),
				inout("state", backend.F32, g.f32(p.Hv*p.Dv*p.Dk, 0.1)),
				out("out", backend.BF16, p.T*p.Hv*p.Dv),
			}, Scalars: ints(p.T, p.Hk, p.Hv, p.Dk, p.Dv)}
		})
	}

	// router_topk_bf16: logits, ids, weights | T, E, K, norm
	for _, p := range []struct{ T, E, K, norm int }{
		{1, experts, topK, 1}, {9, experts, topK, 1}, {4, experts, topK, 0}, {3, 60, 4, 1}, {2, 512, 10, 1}, {2, 8, 8, 1},
		{2, 100, 40, 1}, {1, 64, 33, 0}, // more slots than lanes
	} {
		add("router_topk_bf16", false, fmt.Sprintf("T=%d E=%d K=%d norm=%d", p.T, p.E, p.K, p.norm), func(g gen) *Case {
			// IDTol 0: ids must match exactly. A GPU softmax one f32 ulp off the
			// CPU's could in principle round a p to the other side of a bf16
			// boundary and reorder a near-tie; with random logits that is far
			// rarer than one in 10⁴ runs, and a failure names the ids.
			return &Case{Tol: tolBF16, IDTol: 0, Buffers: []Buffer{
				in("logits", backend.BF16, g.bf16(p.T*p.E, 2)), out("ids", backend.I32, p.T*p.K), out("weights", backend.BF16, p.T*p.K),
			}, Scalars: ints(p.T, p.E, p.K, p.norm)}
		})
	}

	// moe_combine_bf16: y, weights, out | T, K, H
	for _, p := range []struct{ T, K, H int }{{1, topK, hidden}, {5, topK, hidden}, {3, 3, 33}} {
		add("moe_combine_bf16", false, fmt.Sprintf("T=%d K=%d H=%d", p.T, p.K, p.H), func(g gen) *Case {
			return &Case{Tol: tolBF16, Buffers: []Buffer{
				in("y", backend.BF16, g.bf16(p.T*p.K*p.H, 1)), in("weights", backend.BF16, g.bf16Uniform(p.T*p.K, 0, 0.5)),
				out("out", backend.BF16, p.T*p.H),
			}, Scalars: ints(p.T, p.K, p.H)}
		})
	}
	// topk_partial_f32: x, cand_ids, cand_vals, stats | R, N, K; topk_merge_f32:
	// cand_ids, cand_vals, stats (from the CPU's partial), ids, vals, lse | R, N, K.
	// Rows of bf16-rounded values have ties; a short row pads; NaNs are passed over.
	for _, p := range []struct {
		R, N, K int
		kind    string
	}{{1, vocab, 20, "plain"}, {2, vocab, 64, "ties"}, {3, 1000, 256, "ties"}, {2, 5, 8, "pad"}, {2, 4099, 16, "nan"},
		{1, 9000, 40, "ninf"}, {3, vocab, 1, "greedy"}, {2, 9000, 1, "inf"}} {
		label := fmt.Sprintf("R=%d N=%d K=%d %s", p.R, p.N, p.K, p.kind)
		chunks := (p.N + kernels.Defines()["TOPK_CHUNK"] - 1) / kernels.Defines()["TOPK_CHUNK"]
		logits := func(g gen) []byte {
			x := g.f32Uniform(p.R*p.N, -8, 8, p.kind == "ties")
			for i := 0; i < p.R*p.N; i++ {
				switch {
				case p.kind == "nan" && i%5 == 0:
					binary.LittleEndian.PutUint32(x[4*i:], math.Float32bits(float32(math.NaN())))
				case p.kind == "ninf" && i >= 4096 && i < 8192: // a chunk without numbers
					binary.LittleEndian.PutUint32(x[4*i:], math.Float32bits(float32(math.Inf(-1))))
				case p.kind == "inf" && i == 5000: // one infinity: the row's lse is NaN
					binary.LittleEndian.PutUint32(x[4*i:], math.Float32bits(float32(math.Inf(1))))
				}
			}
			return x
		}
		add("topk_partial_f32", p.N == vocab, label, func(g gen) *Case {
			return &Case{Tol: tolF32, Buffers: []Buffer{in("x", backend.F32, logits(g)), out("cand_ids", backend.I32, p.R*chunks*p.K),
				out("cand_vals", backend.F32, p.R*chunks*p.K), out("stats", backend.F32, p.R*chunks*2)}, Scalars: ints(p.R, p.N, p.K)}
		})
		add("topk_merge_f32", p.N == vocab, label, func(g gen) *Case {
			ids, vals, stats := cpu.TopKPartial(f32Values(logits(g)), p.R, p.N, p.K)
			return &Case{Tol: tolF32, Buffers: []Buffer{
				in("cand_ids", backend.I32, i32Bytes(ids)), in("cand_vals", backend.F32, f32Bytes(vals)), in("stats", backend.F32, f32Bytes(stats)),
				out("ids", backend.I32, p.R*p.K), out("vals", backend.F32, p.R*p.K), out("lse", backend.F32, p.R),
			}, Scalars: ints(p.R, p.N, p.K)}
		})
	}

	// sample_top_f32: ids, vals, lse, out | K, temperature, top_p, min_p, u.
	// Candidates best first; n of the K are numbers (ids −1 after); the
	// row's log-sum-exp holds mass beyond them, or is NaN.
	for _, p := range []struct {
		K, n                int
		temp, topP, minP, u float32
		nan                 bool
	}{{20, 20, 0.7, 0.95, 0, 0.3, false}, {20, 20, 1, 0, 0.05, 0.9, false}, {8, 5, 0.5, 0.8, 0, 0.99, false},
		{1, 1, 0.7, 0.95, 0, 0.5, false}, {256, 256, 1.2, 0.5, 0.01, 0.62, false}, {20, 20, 0.7, 0.95, 0, 0.3, true}} {
		label := fmt.Sprintf("K=%d n=%d t=%g top-p=%g min-p=%g u=%g nan=%v", p.K, p.n, p.temp, p.topP, p.minP, p.u, p.nan)
		add("sample_top_f32", false, label, func(g gen) *Case {
			ids, vals := make([]int32, p.K), make([]float32, p.K)
			v := float32(4)
			sum := 0.0
			for i, id := range g.r.Perm(100000)[:p.K] {
				ids[i], vals[i] = int32(id), v
				if i >= p.n {
					ids[i], vals[i] = -1, float32(math.Inf(-1))
					continue
				}
				sum += math.Exp(float64(v))
				v -= float32(g.r.Float64())
			}
			lse := float32(math.Log(sum + 2)) // the rest of the vocabulary
			if p.nan {
				lse = float32(math.NaN())
			}
			return &Case{Tol: tolExact, Buffers: []Buffer{
				in("ids", backend.I32, i32Bytes(ids)), in("vals", backend.F32, f32Bytes(vals)),
				// out starts at 7: the NaN case writes −1, which the harness's poison also is.
				in("lse", backend.F32, f32Bytes([]float32{lse})), inout("out", backend.I32, i32Bytes([]int32{7})),
			}, Scalars: append(ints(p.K), backend.Float(p.temp), backend.Float(p.topP), backend.Float(p.minP), backend.Float(p.u))}
		})
	}

	// repetition_penalty_f32: x (in place), ids | N, M, penalty
	for _, p := range []struct{ N, M int }{{vocab, 20}, {100, 7}, {10, 0}} {
		add("repetition_penalty_f32", p.N == vocab, fmt.Sprintf("N=%d M=%d", p.N, p.M), func(g gen) *Case {
			ids := make([]byte, 4*max(p.M, 1))
			for j, id := range g.r.Perm(p.N)[:p.M] {
				binary.LittleEndian.PutUint32(ids[4*j:], uint32(id))
			}
			if p.M > 2 { // ids outside the row are ignored
				binary.LittleEndian.PutUint32(ids[4:], uint32(p.N+3))
			}
			return &Case{Tol: tolExact, Buffers: []Buffer{inout("x", backend.F32, g.f32(p.N, 3)), in("ids", backend.I32, ids)},
				Scalars: append(ints(p.N, p.M), backend.Float(1.3))}
		})
	}
	return s
}

// moeUpWeights is the buffers of moe_up_bf16 after its routing ones: E
// experts' gate and up (Out rows of In each), their output, the shared
// expert's gate and up (Is rows), and its output.
func moeUpWeights(g gen, T, K, E, In, Out, Is, bits, gs int) []Buffer {
	gw, gsc, gbi := g.quant(E*Out, In, bits, gs)
	uw, usc, ubi := g.quant(E*Out, In, bits, gs)
	sgw, sgsc, sgbi := g.quant(Is, In, bits, gs)
	suw, susc, subi := g.quant(Is, In, bits, gs)
	return []Buffer{
		in("gate_w", backend.U32, gw), in("gate_scales", backend.BF16, gsc), in("gate_biases", backend.BF16, gbi),
		in("up_w", backend.U32, uw), in("up_scales", backend.BF16, usc), in("up_biases", backend.BF16, ubi),
		out("out", backend.BF16, T*K*Out),
		in("shared_gate_w", backend.U32, sgw), in("shared_gate_scales", backend.BF16, sgsc), in("shared_gate_biases", backend.BF16, sgbi),
		in("shared_up_w", backend.U32, suw), in("shared_up_scales", backend.BF16, susc), in("shared_up_biases", backend.BF16, subi),
		out("hs", backend.BF16, T*Is),
	}
}

// moeDownBuffers are moe_down_bf16's buffers for T tokens of K slots among E
// experts: h, ids, weights, w, scales, biases, hs, shared_w, shared_scales,
// shared_biases, gate, out.
func moeDownBuffers(g gen, T, K, E, H, I, Is, bits, gs, sbits, sgs int) []Buffer {
	w, sc, bi := g.quant(E*H, I, bits, gs)
	sw, ssc, sbi := g.quant(H, Is, sbits, sgs)
	return []Buffer{
		in("h", backend.BF16, g.bf16(T*K*I, 1)), in("ids", backend.I32, g.experts(T, K, E)),
		in("weights", backend.BF16, g.bf16Uniform(T*K, 0, 0.5)),
		in("w", backend.U32, w), in("scales", backend.BF16, sc), in("biases", backend.BF16, bi),
		in("hs", backend.BF16, g.bf16(T*Is, 1)),
		in("shared_w", backend.U32, sw), in("shared_scales", backend.BF16, ssc), in("shared_biases", backend.BF16, sbi),
		in("gate", backend.BF16, g.bf16(T, 2)), out("out", backend.BF16, T*H),
	}
}

// slot is one matrix of a qmatmul_multi case: Out 0 is unused (its buffers are
// a few bytes and never read).
type slot struct{ Out, bits, gs int }

// multiCase is the buffers and scalars of qmatmul_multi_bf16 over T tokens of
// In: x, each slot's w, scales, biases and out, then T, In, Out0..3, fmt0..3.
// gdnRuleInputs are a GDN rule kernel's first inputs for T tokens: conv [T,
// 2·Hk·Dk + Hv·Dv], the gate logits a, b [T, Hv], aLog and dtBias [Hv].
func gdnRuleInputs(g gen, T, Hk, Hv, Dk, Dv int) []Buffer {
	width := 2*Hk*Dk + Hv*Dv
	return []Buffer{
		in("conv", backend.BF16, g.bf16(T*width, 1)),
		in("a", backend.BF16, g.bf16(T*Hv, 2)), in("b", backend.BF16, g.bf16(T*Hv, 2)),
		in("aLog", backend.F32, g.f32Uniform(Hv, 0, 2.8, false)), in("dtBias", backend.BF16, g.bf16(Hv, 1)),
	}
}

func multiCase(g gen, T, In int, slots [4]slot) ([]Buffer, []int) {
	bufs := []Buffer{in("x", backend.BF16, g.bf16(T*In, 1))}
	for i, sl := range slots {
		n := fmt.Sprint(i)
		if sl.Out == 0 {
			bufs = append(bufs, in("w"+n, backend.U32, g.words(1)), in("scales"+n, backend.BF16, g.bf16(2, 1)),
				in("biases"+n, backend.BF16, g.bf16(2, 1)), in("out"+n, backend.BF16, g.bf16(2, 1)))
			continue
		}
		w, sc, bi := g.quant(sl.Out, In, sl.bits, sl.gs)
		bufs = append(bufs, in("w"+n, backend.U32, w), in("scales"+n, backend.BF16, sc), in("biases"+n, backend.BF16, bi),
			out("out"+n, backend.BF16, T*sl.Out))
	}
	scalars := []int{T, In}
	for _, sl := range slots {
		scalars = append(scalars, sl.Out)
	}
	for _, sl := range slots { // fmt = bits + 256·gs; an unused slot still passes valid ones
		scalars = append(scalars, cmp.Or(sl.bits, 4)+256*cmp.Or(sl.gs, 32))
	}
	return bufs, scalars
}
