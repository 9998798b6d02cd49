package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"bagel/backend"
)

// packBits writes codes (each < 2^bits) as one row's LSB-first bit stream: bit b
// of code j is stream bit j*bits+b, stream bit i is bit i%32 of word i/32.
func packBits(codes []uint32, bits int) []uint32 {
	words := make([]uint32, len(codes)*bits/32)
	for j, q := range codes {
		for b := range bits {
			if q>>b&1 != 0 {
				i := j*bits + b
				words[i/32] |= 1 << (i % 32)
			}
		}
	}
	return words
}

// TestDequantRowHandPacked checks words written out by hand, including codes
// that straddle two words for 3, 5 and 6 bits.
func TestDequantRowHandPacked(t *testing.T) {
	cases := []struct {
		name  string
		bits  int
		words map[int]uint32 // the non-zero words of a 32-element row
		codes map[int]uint32 // the non-zero codes they hold
	}{
		{"2-bit", 2, map[int]uint32{0: 0b11_10_01_00, 1: 3 << 30}, map[int]uint32{1: 1, 2: 2, 3: 3, 31: 3}},
		{"3-bit straddle", 3, map[int]uint32{0: 1 << 30, 1: 1}, map[int]uint32{10: 0b101}},
		{"4-bit", 4, map[int]uint32{0: 0x76543210, 1: 0xfedcba98}, map[int]uint32{
			1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7, 8: 8, 9: 9, 10: 10, 11: 11, 12: 12, 13: 13, 14: 14, 15: 15}},
		{"5-bit straddle", 5, map[int]uint32{0: 3 << 30, 1: 0b101}, map[int]uint32{6: 0b10111}},
		{"6-bit straddle", 6, map[int]uint32{0: 3 << 30, 1: 0xf, 2: 0x3f << 26}, map[int]uint32{5: 63, 15: 63}},
		{"8-bit", 8, map[int]uint32{0: 0x03020100, 7: 0xff000000}, map[int]uint32{1: 1, 2: 2, 3: 3, 31: 255}},
	}
	const in, gs = 32, 32
	scale, bias := float32(0.5), float32(-1)
	scales := []uint16{backend.F32ToBF16(scale)}
	biases := []uint16{backend.F32ToBF16(bias)}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := make([]uint32, in*c.bits/32)
			for i, word := range c.words {
				w[i] = word
			}
			out := make([]float32, in)
			DequantRow(w, scales, biases, c.bits, gs, in, out)
			for j := range in {
				if want := scale*float32(c.codes[j]) + bias; out[j] != want {
					t.Errorf("element %d = %v, want %v (code %d)", j, out[j], want, c.codes[j])
				}
			}
		})
	}
}

// TestDequantRowRandom packs random codes for every bit width and group size
// and checks scale·q + bias per group.
func TestDequantRowRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const in = 256
	for _, bits := range []int{2, 3, 4, 5, 6, 8} {
		for _, gs := range []int{32, 64, 128} {
			codes := make([]uint32, in)
			for j := range codes {
				codes[j] = rng.Uint32N(1 << bits)
			}
			s := randBF16(rng, in/gs, 0.1)
			b := randBF16(rng, in/gs, 0.1)
			out := make([]float32, in)
			DequantRow(packBits(codes, bits), bf16Patterns(s), bf16Patterns(b), bits, gs, in, out)
			for j := range in {
				want := float64(s[j/gs])*float64(codes[j]) + float64(b[j/gs])
				if math.Abs(float64(out[j])-want) > 1e-6*math.Abs(want)+1e-9 {
					t.Fatalf("bits=%d gs=%d element %d = %v, want %v", bits, gs, j, out[j], want)
				}
			}
		}
	}
}

func TestDequantRowRejectsBadParameters(t *testing.T) {
	out := make([]float32, 64)
	w := make([]uint32, 16)
	sb := make([]uint16, 2)
	mustPanic(t, func() { DequantRow(w, sb, sb, 7, 32, 64, out) }, "bits=7")
	mustPanic(t, func() { DequantRow(w, sb, sb, 4, 16, 64, out) }, "gs=16")
	mustPanic(t, func() { DequantRow(w[:3], sb, sb, 4, 32, 64, out) }, "needs w 8")
}

func bf16Patterns(v []float32) []uint16 {
	h := make([]uint16, len(v))
	for i, x := range v {
		h[i] = backend.F32ToBF16(x)
	}
	return h
}

// quantCase is a random quantized matrix (rows, in) with its float64 values.
type quantCase struct {
	bits, gs, in, rows int
	w                  []uint32 // (rows, in*bits/32)
	scales, biases     []uint16 // (rows, in/gs)
	dense              []float64
}

func randQuant(rng *rand.Rand, bits, gs, rows, in int) quantCase {
	c := quantCase{bits: bits, gs: gs, in: in, rows: rows, dense: make([]float64, rows*in)}
	for r := range rows {
		codes := make([]uint32, in)
		for j := range codes {
			codes[j] = rng.Uint32N(1 << bits)
		}
		c.w = append(c.w, packBits(codes, bits)...)
		// Scales shrink with the code range so every width gives weights of ~0.05.
		s := randBF16(rng, in/gs, 0.1/float64(int(1)<<bits))
		b := randBF16(rng, in/gs, 0.05)
		c.scales = append(c.scales, bf16Patterns(s)...)
		c.biases = append(c.biases, bf16Patterns(b)...)
		for j := range in {
			c.dense[r*in+j] = float64(s[j/gs])*float64(codes[j]) + float64(b[j/gs])
		}
	}
	return c
}

func (c quantCase) upload(t *testing.T, d *Device) (w, s, b backend.Buffer) {
	return u32Buf(t, d, c.w), bitsBuf(t, d, c.scales), bitsBuf(t, d, c.biases)
}

// matvec64 is Σ_j x[j]·W[row,j] in float64, and Σ_j |x[j]·W[row,j]| for the tolerance.
func (c quantCase) matvec64(x []float32, row int) (sum, mag float64) {
	for j := range c.in {
		p := float64(x[j]) * c.dense[row*c.in+j]
		sum += p
		mag += math.Abs(p)
	}
	return sum, mag
}

// TestQMatmul checks both output types against dequantize-then-matmul in float64.
func TestQMatmul(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	d := newTestDevice()
	const T, In, Out = 3, 256, 37
	for _, bits := range []int{2, 3, 4, 5, 6, 8} {
		for _, gs := range []int{32, 64, 128} {
			c := randQuant(rng, bits, gs, Out, In)
			x := randBF16(rng, T*In, 1)
			wb, sb, bb := c.upload(t, d)
			xb := bf16Buf(t, d, x)
			outB := poisonBuf(t, d, 2*T*Out)
			outF := poisonBuf(t, d, 4*T*Out)
			scalars := []backend.Arg{backend.Int(T), backend.Int(In), backend.Int(Out), backend.Int(bits), backend.Int(gs)}
			dispatch(d, "qmatmul_bf16", append([]backend.Arg{arg(xb), arg(wb), arg(sb), arg(bb), arg(outB)}, scalars...)...)
			dispatch(d, "qmatmul_bf16_f32", append([]backend.Arg{arg(xb), arg(wb), arg(sb), arg(bb), arg(outF)}, scalars...)...)
			gotB, gotF := readBF16(t, d, outB, T*Out), readF32(t, d, outF, T*Out)
			for tok := range T {
				for o := range Out {
					want, mag := c.matvec64(x[tok*In:(tok+1)*In], o)
					i := tok*Out + o
					if math.Abs(float64(gotF[i])-want) > 1e-5*mag {
						t.Fatalf("bits=%d gs=%d f32 out[%d,%d] = %v, want %v", bits, gs, tok, o, gotF[i], want)
					}
					if !bf16Close(gotB[i], want, 1e-5*mag) {
						t.Fatalf("bits=%d gs=%d bf16 out[%d,%d] = %v, want %v", bits, gs, tok, o, gotB[i], want)
					}
				}
			}
		}
	}
}

// TestQMatmulGather checks both x layouts, an expert used by several slots, and
// that a slot reads the expert its id names.
func TestQMatmulGather(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	d := newTestDevice()
	const T, K, E, In, Out, bits, gs = 3, 2, 4, 128, 9, 4, 64
	c := randQuant(rng, bits, gs, E*Out, In) // (E, Out, In)
	wb, sb, bb := c.upload(t, d)
	ids := []int32{2, 0, 0, 3, 2, 1} // (T, K)
	idb := i32Buf(t, d, ids)
	for xPerSlot := range 2 {
		xRows := T
		if xPerSlot == 1 {
			xRows = T * K
		}
		x := randBF16(rng, xRows*In, 1)
		xb := bf16Buf(t, d, x)
		out := poisonBuf(t, d, 2*T*K*Out)
		dispatch(d, "qmatmul_gather_bf16", arg(xb), arg(idb), arg(wb), arg(sb), arg(bb), arg(out),
			backend.Int(T), backend.Int(K), backend.Int(In), backend.Int(Out), backend.Int(bits), backend.Int(gs), backend.Int(xPerSlot))
		got := readBF16(t, d, out, T*K*Out)
		for slot, e := range ids {
			r := slot / K
			if xPerSlot == 1 {
				r = slot
			}
			for o := range Out {
				want, mag := c.matvec64(x[r*In:(r+1)*In], int(e)*Out+o)
				if g := got[slot*Out+o]; !bf16Close(g, want, 1e-5*mag) {
					t.Fatalf("xPerSlot=%d out[%d,%d,%d] = %v, want %v", xPerSlot, slot/K, slot%K, o, g, want)
				}
			}
		}
	}

	bad := i32Buf(t, d, []int32{0, 4, 0, 0, 0, 0})
	out := poisonBuf(t, d, 2*T*K*Out)
	x := bf16Buf(t, d, make([]float32, T*In))
	mustPanic(t, func() {
		dispatch(d, "qmatmul_gather_bf16", arg(x), arg(bad), arg(wb), arg(sb), arg(bb), arg(out),
			backend.Int(T), backend.Int(K), backend.Int(In), backend.Int(Out), backend.Int(bits), backend.Int(gs), backend.Int(0))
	}, "qmatmul_gather_bf16", "ids", "= 4")
}

func TestEmbedDequant(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	d := newTestDevice()
	const V, In, bits, gs = 5, 64, 6, 32
	c := randQuant(rng, bits, gs, V, In)
	wb, sb, bb := c.upload(t, d)
	ids := []int32{3, 0, 4, 3}
	out := poisonBuf(t, d, 2*len(ids)*In)
	dispatch(d, "embed_dequant_bf16", arg(i32Buf(t, d, ids)), arg(wb), arg(sb), arg(bb), arg(out),
		backend.Int(len(ids)), backend.Int(In), backend.Int(bits), backend.Int(gs))
	got := readBF16(t, d, out, len(ids)*In)
	for tok, id := range ids {
		for j := range In {
			want := c.dense[int(id)*In+j]
			if g := got[tok*In+j]; !bf16Close(g, want, 0) {
				t.Fatalf("out[%d,%d] = %v, want %v", tok, j, g, want)
			}
		}
	}
	mustPanic(t, func() {
		dispatch(d, "embed_dequant_bf16", arg(i32Buf(t, d, []int32{5})), arg(wb), arg(sb), arg(bb), arg(out),
			backend.Int(1), backend.Int(In), backend.Int(bits), backend.Int(gs))
	}, "embed_dequant_bf16", "ids")
	mustPanic(t, func() {
		dispatch(d, "embed_dequant_bf16", arg(i32Buf(t, d, ids)), arg(wb), arg(sb), arg(bb), arg(out),
			backend.Int(len(ids)), backend.Int(In), backend.Int(7), backend.Int(gs))
	}, "embed_dequant_bf16", "bits")
}

func TestDot(t *testing.T) {
	for n := range 11 {
		x, y := make([]float32, n), make([]float32, n)
		var want float32
		for i := range n {
			x[i], y[i] = float32(i+1), float32(2*i-3)
			want += x[i] * y[i]
		}
		if got := dot(x, y); got != want {
			t.Fatalf("n=%d: dot = %v, want %v", n, got, want)
		}
	}
}

// TestDotRowIsDequantThenDot: dotRow (the row widened as it is summed) gives
// dot(x, row) to the bit for every width and group size.
func TestDotRowIsDequantThenDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, bits := range []int{2, 3, 4, 5, 6, 8} {
		for _, gs := range []int{32, 64, 128} {
			in := 2 * 128
			c := randQuant(rng, bits, gs, 7, in)
			m := &quantMatrix{w: c.w, scales: c.scales, biases: c.biases, bits: bits, gs: gs, in: in, rows: 7}
			x := make([]float32, in)
			for j := range x {
				x[j] = float32(rng.NormFloat64())
			}
			row, scratch := make([]float32, in), make([]float32, in)
			for r := range 7 {
				m.row(r, row)
				want := dot(x, row)
				if got := m.dotRow(r, x, scratch); math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("bits %d gs %d row %d: dotRow %v, dot of the row %v", bits, gs, r, got, want)
				}
			}
		}
	}
}
