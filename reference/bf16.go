package reference

import "math"

// bf16Value widens a bfloat16 bit pattern.
func bf16Value(bits uint16) float64 {
	return float64(math.Float32frombits(uint32(bits) << 16))
}

// roundBF16 is v rounded to the nearest bfloat16 value (8 significant bits,
// ties to even), kept as a float64. Values below bf16's normal range (2^-126)
// go through float32, whose subnormals bf16 shares.
func roundBF16(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	if math.Abs(v) < 0x1p-126 {
		u := math.Float32bits(float32(v))
		u += 0x7fff + (u>>16)&1
		return float64(math.Float32frombits(u &^ 0xffff))
	}
	const drop = 52 - 7 // float64's fraction bits beyond bf16's 7
	u := math.Float64bits(v)
	u += 1<<(drop-1) - 1 + (u>>drop)&1
	return math.Float64frombits(u &^ (1<<drop - 1))
}
