package cpu

import (
	"fmt"
	"math"

	"bagel/backend"
)

// DequantRow dequantizes one row of an MLX affine-quantized matrix:
//
//	w      u32  (in*bits/32)  codes, a little-endian LSB-first bit stream
//	scales bf16 (in/gs)
//	biases bf16 (in/gs)
//	out    f32  (in)          out[j] = scales[j/gs]·q_j + biases[j/gs]
//
// Bit b of code q_j is bit j*bits+b of the stream, i.e. bit (j*bits+b)%32 of word
// (j*bits+b)/32; 3-, 5- and 6-bit codes may straddle two words. The value is kept
// in f32 (no bf16 rounding), as MLX's quantized matmuls use it.
//
// The 4- and 8-bit cases are fast paths for the common checkpoints (a 4-bit
// lm_head is ~300M codes per token); they compute the same values as the general
// bit stream below.
func DequantRow(w []uint32, scales, biases []uint16, bits, gs, in int, out []float32) {
	if err := checkQuant(bits, gs, in); err != nil {
		panic("cpu: DequantRow: " + err.Error())
	}
	if len(w) < in*bits/32 || len(scales) < in/gs || len(biases) < in/gs || len(out) < in {
		panic(fmt.Sprintf("cpu: DequantRow: in=%d bits=%d gs=%d needs w %d, scales and biases %d, out %d; got %d, %d, %d, %d",
			in, bits, gs, in*bits/32, in/gs, in, len(w), len(scales), len(biases), len(out)))
	}
	switch bits {
	case 4: // 8 codes per word: nibble k of word i is code 8i+k
		var lut [16]float32 // the 16 values of this group
		for g := range in / gs {
			s, b := backend.BF16ToF32(scales[g]), backend.BF16ToF32(biases[g])
			for q := range lut {
				lut[q] = s*float32(q) + b
			}
			for i, word := range w[g*gs/8 : (g+1)*gs/8] {
				o := (*[8]float32)(out[g*gs+8*i:])
				o[0] = lut[word&0xf]
				o[1] = lut[word>>4&0xf]
				o[2] = lut[word>>8&0xf]
				o[3] = lut[word>>12&0xf]
				o[4] = lut[word>>16&0xf]
				o[5] = lut[word>>20&0xf]
				o[6] = lut[word>>24&0xf]
				o[7] = lut[word>>28]
			}
		}
	case 8: // 4 codes per word: byte k of word i is code 4i+k
		for g := range in / gs {
			s, b := backend.BF16ToF32(scales[g]), backend.BF16ToF32(biases[g])
			for i, word := range w[g*gs/4 : (g+1)*gs/4] {
				o := (*[4]float32)(out[g*gs+4*i:])
				o[0] = s*float32(word&0xff) + b
				o[1] = s*float32(word>>8&0xff) + b
				o[2] = s*float32(word>>16&0xff) + b
				o[3] = s*float32(word>>24) + b
			}
		}
	default: // the general bit stream
		mask := uint32(1)<<bits - 1
		for j := range in {
			bit := j * bits
			word, shift := bit/32, bit%32
			q := w[word] >> shift
			if shift+bits > 32 { // the code continues in the low bits of the next word
				q |= w[word+1] << (32 - shift)
			}
			q &= mask
			out[j] = backend.BF16ToF32(scales[j/gs])*float32(q) + backend.BF16ToF32(biases[j/gs])
		}
	}
}

// checkQuant is the contract on quantization parameters: bits ∈ {2,3,4,5,6,8},
// gs ∈ {32,64,128}, In a multiple of gs (hence whole words per row).
func checkQuant(bits, gs, in int) error {
	switch {
	case !validBits(bits):
		return fmt.Errorf("bits=%d, want 2, 3, 4, 5, 6 or 8", bits)
	case !validGroup(gs):
		return fmt.Errorf("gs=%d, want 32, 64 or 128", gs)
	case in%gs != 0:
		return fmt.Errorf("In=%d is not a multiple of gs=%d", in, gs)
	}
	return nil
}

func validBits(bits int) bool {
	return bits == 2 || bits == 3 || bits == 4 || bits == 5 || bits == 6 || bits == 8
}

func validGroup(gs int) bool { return gs == 32 || gs == 64 || gs == 128 }

// quantMatrix is an MLX affine-quantized matrix (rows, in):
// w u32 (rows, in*bits/32), scales and biases bf16 (rows, in/gs).
type quantMatrix struct {
	w              []uint32
	scales, biases []uint16
	bits, gs, in   int
	rows           int
}

// row dequantizes row r into out f32 (in).
func (m *quantMatrix) row(r int, out []float32) {
	words, groups := m.in*m.bits/32, m.in/m.gs
	DequantRow(m.w[r*words:(r+1)*words], m.scales[r*groups:(r+1)*groups], m.biases[r*groups:(r+1)*groups],
		m.bits, m.gs, m.in, out)
}

// dotRow is dot(x, W[r,:]): for 4-bit codes the row is widened as it is
// summed, the same products added in dot's order (four running sums, j mod
// 4), so the same bits without writing the row out; other widths go through
// scratch (in floats). A decode step's products take this path.
func (m *quantMatrix) dotRow(r int, x, scratch []float32) float32 {
	if m.bits != 4 {
		m.row(r, scratch)
		return dot(x, scratch)
	}
	words, groups := m.in/8, m.in/m.gs
	w := m.w[r*words : (r+1)*words]
	scales, biases := m.scales[r*groups:(r+1)*groups], m.biases[r*groups:(r+1)*groups]
	x = x[:m.in]
	var s0, s1, s2, s3 float32
	var lut [16]float32 // the 16 values of a group, as DequantRow makes them
	for g := range groups {
		sc, b := backend.BF16ToF32(scales[g]), backend.BF16ToF32(biases[g])
		for q := range lut {
			lut[q] = sc*float32(q) + b
		}
		xg := x[g*m.gs : (g+1)*m.gs]
		for i, word := range w[g*m.gs/8 : (g+1)*m.gs/8] {
			xs := (*[8]float32)(xg[8*i:])
			s0 += xs[0] * lut[word&0xf]
			s1 += xs[1] * lut[word>>4&0xf]
			s2 += xs[2] * lut[word>>8&0xf]
			s3 += xs[3] * lut[word>>12&0xf]
			s0 += xs[4] * lut[word>>16&0xf]
			s1 += xs[5] * lut[word>>20&0xf]
			s2 += xs[6] * lut[word>>24&0xf]
			s3 += xs[7] * lut[word>>28]
		}
	}
	return (s0 + s1) + (s2 + s3)
}

// quant reads the buffers w, scales, biases and the scalars In, bits, gs as a
// matrix of rows rows. rows < 0 means as many as the buffers hold: the embedding
// (V rows) and the stacked experts (E·Out rows) have no scalar for their count, so
// an id is checked against the buffers' ends, which can lie beyond the tensor
// when it is bound at an offset into a larger file.
func (a *args) quant(rows int) *quantMatrix {
	return a.quantNamed("w", "scales", "biases", "bits", "gs", rows)
}

// quantNamed is quant for kernels with several matrices, whose arguments carry
// other names (gate_w, gate_scales, gate_biases, bits, gs; ...).
func (a *args) quantNamed(w, scales, biases, bitsName, gsName string, rows int) *quantMatrix {
	return a.quantMatrixIn(w, scales, biases, bitsName, gsName, a.intArg("In"), rows)
}

// quantFormat is quantNamed for a matrix of a multi-matrix kernel, whose bits
// and group size come as one scalar fmtName = bits + 256·gs.
func (a *args) quantFormat(w, scales, biases, fmtName string, rows int) *quantMatrix {
	return a.quantFormatOf(w, scales, biases, fmtName, a.intArg(fmtName), rows)
}

// quantFormatOf is quantFormat for a format f read elsewhere (fmtName names
// it in messages): two packed in one scalar, as the batch kernels pass them.
func (a *args) quantFormatOf(w, scales, biases, fmtName string, f, rows int) *quantMatrix {
	return a.quantOf(w, scales, biases, fmtName, f%256, fmtName, f/256, a.intArg("In"), rows)
}

// quantMatrixIn is quantNamed for a matrix whose input width is not the
// scalar In (the MoE block's two down projections).
func (a *args) quantMatrixIn(w, scales, biases, bitsName, gsName string, in, rows int) *quantMatrix {
	return a.quantOf(w, scales, biases, bitsName, a.intArg(bitsName), gsName, a.intArg(gsName), in, rows)
}

// quantOf checks bits and gs (named bitsName and gsName in messages) and
// reads the matrix's buffers.
func (a *args) quantOf(w, scales, biases, bitsName string, bits int, gsName string, gs, in, rows int) *quantMatrix {
	a.check(validBits(bits), bitsName, "%d, want 2, 3, 4, 5, 6 or 8", bits)
	a.check(validGroup(gs), gsName, "%d, want 32, 64 or 128", gs)
	a.check(in%gs == 0, gsName, "the input width %d is not a multiple of %s=%d", in, gsName, gs)
	words, groups := in*bits/32, in/gs
	if rows < 0 {
		rows = math.MaxInt32
		if in > 0 {
			rows = min(a.avail(w, 4)/words, a.avail(scales, 2)/groups, a.avail(biases, 2)/groups)
		}
	}
	return &quantMatrix{
		w:      a.u32s(w, rows*words),
		scales: a.bf16s(scales, rows*groups),
		biases: a.bf16s(biases, rows*groups),
		bits:   bits, gs: gs, in: in, rows: rows,
	}
}

// embed_dequant_bf16: out[t,:] = bf16(dequant(w)[ids[t],:]); an id of −1
// (the device's pick of logits that are not finite) reads row 0, as the
// kernel does.
func embedDequant(a *args) {
	T, In := a.intArg("T"), a.intArg("In")
	ids := a.i32s("ids", T)     // (T)
	m := a.quant(-1)            // (V, In)
	out := a.bf16s("out", T*In) // (T, In)
	row := make([]float32, In)
	for t, id := range ids {
		if id == -1 {
			id = 0
		}
		a.check(id >= 0 && int(id) < m.rows, "ids", "ids[%d] = %d outside the %d rows of w", t, id, m.rows)
		m.row(int(id), row)
		for j, v := range row {
			out[t*In+j] = backend.F32ToBF16(v)
		}
	}
}

// qmatmul_bf16: out[t,o] = bf16(Σ_j x[t,j]·W[o,j]).
func qmatmulBF16(a *args) {
	T, Out := a.intArg("T"), a.intArg("Out")
	out := a.bf16s("out", T*Out) // (T, Out)
	qmatmul(a, func(t, o int, y float32) { out[t*Out+o] = backend.F32ToBF16(y) })
}

// qmatmul_bf16_f32: out[t,o] = Σ_j x[t,j]·W[o,j], kept in f32 (logits).
func qmatmulF32(a *args) {
	T, Out := a.intArg("T"), a.intArg("Out")
	out := a.f32s("out", T*Out) // (T, Out)
	qmatmul(a, func(t, o int, y float32) { out[t*Out+o] = y })
}

// qmatmul computes y[t,o] = Σ_j x[t,j]·W[o,j] and hands each to store.
// The hot spot of this backend (lm_head has ~150k rows): output rows are split
// over goroutines, and each row is dequantized once and dotted with every token.
func qmatmul(a *args, store func(t, o int, y float32)) {
	T, In, Out := a.intArg("T"), a.intArg("In"), a.intArg("Out")
	x := widen(a.bf16s("x", T*In)) // (T, In)
	m := a.quant(Out)              // (Out, In)
	a.parallel(Out, T*In, func(lo, hi int) {
		row := make([]float32, In) // W[o,:]
		for o := lo; o < hi; o++ {
			if T == 1 {
				store(0, o, m.dotRow(o, x, row))
				continue
			}
			m.row(o, row)
			for t := range T {
				store(t, o, dot(x[t*In:(t+1)*In], row))
			}
		}
	})
}

// qmatmul_gather_bf16: out[t,s,o] = bf16(Σ_j xrow[j]·W[ids[t,s],o,j]) with xrow =
// x[t,:] of x (T, In) when xPerSlot = 0, x[t,s,:] of x (T, K, In) when 1.
func qmatmulGather(a *args) {
	T, K, In, Out := a.intArg("T"), a.intArg("K"), a.intArg("In"), a.intArg("Out")
	xPerSlot := a.intArg("xPerSlot")
	a.check(xPerSlot <= 1, "xPerSlot", "%d, want 0 or 1", xPerSlot)
	xRows := T
	if xPerSlot == 1 {
		xRows = T * K
	}
	x := widen(a.bf16s("x", xRows*In)) // (T, In) or (T, K, In)
	ids := a.i32s("ids", T*K)          // (T, K)
	m := a.quant(-1)                   // (E·Out, In)
	out := a.bf16s("out", T*K*Out)     // (T, K, Out)
	if Out == 0 {
		return
	}
	experts := m.rows / Out

	// Group the slots (t·K+s) by expert, so each expert row is dequantized once.
	var order []int   // experts in first-use order
	var slots [][]int // slots[i]: the slots routed to order[i]
	index := map[int]int{}
	for slot, id := range ids {
		e := int(id)
		a.check(e >= 0 && e < experts, "ids", "ids[%d] = %d outside the %d experts of w", slot, e, experts)
		i, ok := index[e]
		if !ok {
			i = len(order)
			index[e] = i
			order = append(order, e)
			slots = append(slots, nil)
		}
		slots[i] = append(slots[i], slot)
	}

	// One work item is one (expert, output row) pair.
	items := len(order) * Out
	a.parallel(items, max(1, T*K*In/max(1, len(order))), func(lo, hi int) {
		row := make([]float32, In) // W[e,o,:]
		for item := lo; item < hi; item++ {
			i, o := item/Out, item%Out
			m.row(order[i]*Out+o, row)
			for _, slot := range slots[i] {
				r := slot / K // x[t,:]
				if xPerSlot == 1 {
					r = slot // x[t,s,:]
				}
				out[slot*Out+o] = backend.F32ToBF16(dot(x[r*In:(r+1)*In], row))
			}
		}
	})
}

// dot is Σ x[j]·y[j] in f32. It keeps four partial sums (lane j%4), added as
// (s0+s1)+(s2+s3), like a 4-wide SIMD loop: the same rounding class as the GPU
// reductions and four times shorter dependency chains than one running sum.
func dot(x, y []float32) float32 {
	var s0, s1, s2, s3 float32
	n := len(x) &^ 3
	y = y[:len(x)]
	for j := 0; j < n; j += 4 {
		s0 += x[j] * y[j]
		s1 += x[j+1] * y[j+1]
		s2 += x[j+2] * y[j+2]
		s3 += x[j+3] * y[j+3]
	}
	for j := n; j < len(x); j++ {
		s0 += x[j] * y[j]
	}
	return (s0 + s1) + (s2 + s3)
}
