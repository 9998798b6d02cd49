package gputest

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"time"

	"bagel/backend"
)

// Seed is the run's random seed: BAGEL_GPUTEST_SEED when set, otherwise the
// clock, so every run draws fresh inputs. Run prints it; set it to replay a run.
var Seed = sync.OnceValue(func() uint64 {
	if s, err := strconv.ParseUint(os.Getenv("BAGEL_GPUTEST_SEED"), 10, 64); err == nil {
		return s
	}
	return uint64(time.Now().UnixNano())
})

// newRand is the generator of one case, derived from the run's seed and the case.
func newRand(kernel, label string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(kernel + "\x00" + label))
	return rand.New(rand.NewPCG(Seed(), h.Sum64()))
}

// gen draws random tensors as little-endian bytes.
type gen struct{ r *rand.Rand }

// bf16 is n values of N(0, sigma²) rounded to bf16.
func (g gen) bf16(n int, sigma float64) []byte {
	b := make([]byte, 2*n)
	for i := range n {
		binary.LittleEndian.PutUint16(b[2*i:], backend.F32ToBF16(float32(g.r.NormFloat64()*sigma)))
	}
	return b
}

// bf16Uniform is n values uniform in [lo, hi) rounded to bf16.
func (g gen) bf16Uniform(n int, lo, hi float64) []byte {
	b := make([]byte, 2*n)
	for i := range n {
		binary.LittleEndian.PutUint16(b[2*i:], backend.F32ToBF16(float32(lo+(hi-lo)*g.r.Float64())))
	}
	return b
}

// f32 is n values of N(0, sigma²).
func (g gen) f32(n int, sigma float64) []byte {
	b := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(g.r.NormFloat64()*sigma)))
	}
	return b
}

// f32Uniform is n values uniform in [lo, hi); bf16 rounds them to bf16 values.
func (g gen) f32Uniform(n int, lo, hi float64, bf16 bool) []byte {
	b := make([]byte, 4*n)
	for i := range n {
		v := float32(lo + (hi-lo)*g.r.Float64())
		if bf16 {
			v = backend.RoundBF16(v)
		}
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// words is n random u32 (every code pattern equally likely).
func (g gen) words(n int) []byte {
	b := make([]byte, 4*n)
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], g.r.Uint64())
	}
	if len(b)%8 != 0 {
		binary.LittleEndian.PutUint32(b[len(b)-4:], g.r.Uint32())
	}
	return b
}

// quant is an MLX affine-quantized [rows, in] matrix with random codes whose
// dequantized values are centred near 0 with spread about ±0.02, as real
// checkpoints' are: scale ≈ 0.04/(2^bits−1), bias ≈ −scale·(2^bits−1)/2.
func (g gen) quant(rows, in, bits, gs int) (w, scales, biases []byte) {
	w = g.words(rows * in * bits / 32)
	groups := rows * in / gs
	scales, biases = make([]byte, 2*groups), make([]byte, 2*groups)
	levels := float64(int(1)<<bits - 1)
	for i := range groups {
		s := 0.04 / levels * (0.5 + g.r.Float64())
		bias := -s * levels / 2 * (0.8 + 0.4*g.r.Float64())
		binary.LittleEndian.PutUint16(scales[2*i:], backend.F32ToBF16(float32(s)))
		binary.LittleEndian.PutUint16(biases[2*i:], backend.F32ToBF16(float32(bias)))
	}
	return w, scales, biases
}

// tree is the parents of a random draft tree of n nodes, i32 [n]: node 0 the
// root (−1), every later node's parent an earlier node, deepening more often
// than not (a chain with branches, as a drafter's guesses are).
func (g gen) tree(n int) []byte { return i32Bytes(g.treeParents(n)) }

// slots is i32 [b]: b distinct slots of a pool of s (b ≤ s), in a random
// order, as a batched step's rows name theirs.
func (g gen) slots(b, s int) []byte { return i32Bytes(g.slotIDs(b, s)) }

// slotIDs is slots as values.
func (g gen) slotIDs(b, s int) []int32 {
	ids := make([]int32, s)
	for i, v := range g.r.Perm(s) {
		ids[i] = int32(v)
	}
	return ids[:b]
}

// runs is a batched step's runs table i32 [S, 3] (slot, first row, rows)
// for sequences of counts rows: distinct slots of a pool of s in a random
// order, the sequences' rows laid out in another.
func (g gen) runs(counts []int, s int) []byte {
	slots := g.slotIDs(len(counts), s)
	table, row := make([]int32, 3*len(counts)), 0
	for _, i := range g.r.Perm(len(counts)) {
		table[3*i], table[3*i+1], table[3*i+2] = slots[i], int32(row), int32(counts[i])
		row += counts[i]
	}
	return i32Bytes(table)
}

// runsInOrder is runs with the table's sequences in row order, as a
// batched step writes it (qmatmul_mma_multi_conv_batch_bf16 walks them so).
func (g gen) runsInOrder(counts []int, s int) []byte {
	slots := g.slotIDs(len(counts), s)
	table, row := make([]int32, 3*len(counts)), 0
	for i, n := range counts {
		table[3*i], table[3*i+1], table[3*i+2] = slots[i], int32(row), int32(n)
		row += n
	}
	return i32Bytes(table)
}

// ones is n counts of one.
func ones(n int) []int {
	c := make([]int, n)
	for i := range c {
		c[i] = 1
	}
	return c
}

// sum is the sum of ns.
func sum(ns []int) int {
	n := 0
	for _, v := range ns {
		n += v
	}
	return n
}

// sharedSeqs is batchSeqs with pairs of rows (a short and a long one) in
// one slot, as a verify's rows share their sequence's: each odd row takes
// the slot of the row before it where their cache rows differ.
func (g gen) sharedSeqs(b, s, capacity, splits, split int) []int32 {
	seqs := g.batchSeqs(b, s, capacity, splits, split)
	for r := 1; r < b; r += 2 {
		if seqs[3*r+1] != seqs[3*(r-1)+1] {
			seqs[3*r] = seqs[3*(r-1)]
		}
	}
	return seqs
}

// batchSeqs is a batched step's table i32 [b, 3] (slot, cache row, rotary
// position) over a pool of s slots of capacity keys: b distinct slots, each
// row's keys (its cache row + 1) fewer than split or, past it, a multiple of
// splits (each of a split kernel's ranges some keys), alternating where both
// fit.
func (g gen) batchSeqs(b, s, capacity, splits, split int) []int32 {
	seqs := make([]int32, 3*b)
	for r, slot := range g.slotIDs(b, s) {
		long, lo := capacity/splits, (max(split, splits)+splits-1)/splits // a long row's keys: splits · [lo, long]
		var n int
		if lo <= long && (r%2 == 1 || split <= 1) {
			n = splits * (lo + g.r.IntN(long-lo+1))
		} else {
			n = 1 + g.r.IntN(min(split-1, capacity))
		}
		seqs[3*r], seqs[3*r+1], seqs[3*r+2] = slot, int32(n-1), int32(n-1)
	}
	return seqs
}

// treeParents is tree's parents as values.
func (g gen) treeParents(n int) []int32 {
	parent := make([]int32, n)
	for t := range parent {
		switch {
		case t == 0:
			parent[t] = -1
		case g.r.IntN(3) > 0:
			parent[t] = int32(t - 1)
		default:
			parent[t] = int32(g.r.IntN(t+1)) - 1 // another root now and then
		}
	}
	return parent
}

// treeLayout is a draft tree's RoPE positions (pos0 plus each node's depth,
// the root's 0) and attention masks (bit j of node t: j is t or one of its
// ancestors), as i32 [n] each.
func treeLayout(parent []int32, pos0 int) (pos, mask []byte) {
	p, m := make([]int32, len(parent)), make([]int32, len(parent))
	for t, up := range parent {
		bits := uint32(1) << t
		depth := 0
		if up >= 0 {
			bits |= uint32(m[up])
			depth = int(p[up]) - pos0 + 1
		}
		p[t], m[t] = int32(pos0+depth), int32(bits)
	}
	return i32Bytes(p), i32Bytes(m)
}

// ids is n indices uniform in [0, hi).
func (g gen) ids(n, hi int) []byte {
	b := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(g.r.IntN(hi)))
	}
	return b
}

// experts is T rows of K distinct expert ids in [0, E), as a router picks them.
func (g gen) experts(T, K, E int) []byte {
	b := make([]byte, 4*T*K)
	for t := range T {
		perm := g.r.Perm(E)
		for s := range K {
			binary.LittleEndian.PutUint32(b[4*(t*K+s):], uint32(perm[s]))
		}
	}
	return b
}

// Buffer constructors: an input, an output of n elements (poisoned), an
// in/out buffer (initial data, compared afterwards), and an alias.
func in(name string, dt backend.DType, data []byte) Buffer {
	return Buffer{Name: name, DType: dt, Data: data}
}

func out(name string, dt backend.DType, n int) Buffer {
	return Buffer{Name: name, DType: dt, Len: n * dt.Size(), Out: true}
}

func inout(name string, dt backend.DType, data []byte) Buffer {
	return Buffer{Name: name, DType: dt, Data: data, Out: true}
}

func alias(name, of string, dt backend.DType) Buffer {
	return Buffer{Name: name, DType: dt, Alias: of}
}

// ints is a list of int32 scalars.
func ints(v ...int) []backend.Arg {
	a := make([]backend.Arg, len(v))
	for i, x := range v {
		a[i] = backend.Int(x)
	}
	return a
}

// i32Bytes is v as little-endian bytes.
func i32Bytes(v []int32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

// gdnConv is a conv row block [T, 2·Hk·Dk + Hv·Dv] whose q and k heads are
// normalised as gdn_qk_norm_bf16 leaves them (rms 1, then q scaled by 1/Dk
// and k by Dk^−½) and whose v is random.
func (g gen) gdnConv(T, Hk, Hv, Dk, Dv int) []byte {
	width := 2*Hk*Dk + Hv*Dv
	v := make([]float32, T*width)
	for t := range T {
		row := v[t*width : (t+1)*width]
		for j := range 2 * Hk {
			head := row[j*Dk : (j+1)*Dk]
			var ss float64
			for i := range head {
				head[i] = float32(g.r.NormFloat64())
				ss += float64(head[i]) * float64(head[i])
			}
			scale := 1 / math.Sqrt(ss/float64(Dk)) / float64(Dk) // q: rms 1, then 1/Dk
			if j >= Hk {
				scale = 1 / math.Sqrt(ss/float64(Dk)) / math.Sqrt(float64(Dk)) // k: rms 1, then Dk^−½
			}
			for i := range head {
				head[i] *= float32(scale)
			}
		}
		for i := 2 * Hk * Dk; i < width; i++ {
			row[i] = float32(g.r.NormFloat64())
		}
	}
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], backend.F32ToBF16(x))
	}
	return b
}

// bf16Values reads little-endian bf16 bits.
func bf16Values(b []byte) []uint16 {
	v := make([]uint16, len(b)/2)
	for i := range v {
		v[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return v
}

// f32Values reads little-endian f32s.
func f32Values(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// f32Bytes is v as little-endian bytes.
func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}
