package backend

import (
	"math"
	"testing"
)

func TestBF16Rounding(t *testing.T) {
	cases := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80},
		{-2, 0xc000},
		{math.Float32frombits(0x3f808000), 0x3f80}, // tie, even stays
		{math.Float32frombits(0x3f818000), 0x3f82}, // tie, odd rounds up to even
		{math.Float32frombits(0x3f808001), 0x3f81}, // above the tie
		{float32(math.Inf(1)), 0x7f80},
		{math.MaxFloat32, 0x7f80}, // rounds to infinity, as a cast does
	}
	for _, c := range cases {
		if got := F32ToBF16(c.in); got != c.want {
			t.Errorf("F32ToBF16(%#08x) = %#04x, want %#04x", math.Float32bits(c.in), got, c.want)
		}
	}
	if nan := F32ToBF16(float32(math.NaN())); !math.IsNaN(float64(BF16ToF32(nan))) {
		t.Errorf("NaN became %#04x", nan)
	}
	// every bf16 value round-trips through f32
	for h := 0; h < 1<<16; h++ {
		f := BF16ToF32(uint16(h))
		if math.IsNaN(float64(f)) {
			continue
		}
		if back := F32ToBF16(f); back != uint16(h) {
			t.Fatalf("%#04x → %g → %#04x", h, f, back)
		}
	}
}

func TestF16ToF32(t *testing.T) {
	cases := map[uint16]float32{0x3c00: 1, 0xc000: -2, 0x0001: 5.9604645e-08, 0x7bff: 65504, 0x0000: 0}
	for h, want := range cases {
		if got := F16ToF32(h); got != want {
			t.Errorf("F16ToF32(%#04x) = %g, want %g", h, got, want)
		}
	}
	if !math.IsInf(float64(F16ToF32(0x7c00)), 1) {
		t.Error("0x7c00 is not +Inf")
	}
}
