package cpu

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkDotRow2048 is a decode GEMV's inner work on the CPU: 256 rows of a
// 2048-wide 4-bit matrix summed as they are widened (MB/s of packed codes).
func BenchmarkDotRow2048(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	in, rows := 2048, 256
	c := randQuant(rng, 4, 64, rows, in)
	m := &quantMatrix{w: c.w, scales: c.scales, biases: c.biases, bits: 4, gs: 64, in: in, rows: rows}
	x := make([]float32, in)
	for j := range x {
		x[j] = float32(rng.NormFloat64())
	}
	scratch := make([]float32, in)
	b.SetBytes(int64(rows * in / 2))
	for b.Loop() {
		for r := range rows {
			m.dotRow(r, x, scratch)
		}
	}
}
