package qwen

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"bagel/ops"
)

// TestQuantize8: every weight comes back from the codes, scales and biases to
// within half a step (the group's rounded scale), a flat group exactly.
func TestQuantize8(t *testing.T) {
	rows, in := 3, 128
	data := make([]byte, 2*rows*in)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range rows * in {
		v := float32(r.NormFloat64() * 0.05)
		if i < 64 { // the first group is flat
			v = 0.25
		}
		binary.LittleEndian.PutUint16(data[2*i:], ops.F32ToBF16(v))
	}
	codes, scales, biases := quantize8(data, rows, in)
	for i := range rows * in {
		g := i / 64
		s := ops.BF16ToF32(binary.LittleEndian.Uint16(scales[2*g:]))
		b := ops.BF16ToF32(binary.LittleEndian.Uint16(biases[2*g:]))
		w := ops.BF16ToF32(binary.LittleEndian.Uint16(data[2*i:]))
		got := s*float32(codes[i]) + b
		if d := math.Abs(float64(got - w)); d > float64(s)/2+1e-7 {
			t.Fatalf("weight %d: %g came back as %g (scale %g)", i, w, got, s)
		}
	}
}
