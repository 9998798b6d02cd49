package gputest

import (
	"encoding/binary"
	"fmt"
	"math"

	"bagel/backend"
)

// decode widens a bf16 or f32 buffer to float64.
func decode(dt backend.DType, b []byte) []float64 {
	switch dt {
	case backend.BF16:
		out := make([]float64, len(b)/2)
		for i := range out {
			out[i] = float64(backend.BF16ToF32(binary.LittleEndian.Uint16(b[2*i:])))
		}
		return out
	case backend.F32:
		out := make([]float64, len(b)/4)
		for i := range out {
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		}
		return out
	}
	panic(fmt.Sprintf("gputest: cannot compare %v as floats", dt))
}

// relErr is ‖got−want‖₂/‖want‖₂, or ‖got−want‖₂ when want is all zero. Equal
// elements differ by nothing and infinite ones are left out of the norm, so
// outputs that are −∞ by contract (top-k padding) compare; a NaN in got (a
// poisoned element left unwritten) equals nothing and gives NaN.
func relErr(got, want []float64) float64 {
	var diff, norm float64
	for i := range want {
		if !math.IsInf(want[i], 0) {
			norm += want[i] * want[i]
		}
		if got[i] != want[i] {
			d := got[i] - want[i]
			diff += d * d
		}
	}
	if norm == 0 {
		return math.Sqrt(diff)
	}
	return math.Sqrt(diff / norm)
}

// withinOneBF16Step says every bf16 element of got equals want's or is its
// neighbour (one bf16 step away, same sign, both finite): what an f32 sum in
// another order than the reference's gives when it crosses a bf16 rounding
// boundary. Over a large output such flips stay far below tolBF16's norm,
// but in an output of one or a few elements a single flip is up to 2^-7 of
// the whole (the shared expert's gate logit on the matrix units: rel err
// 0.00515 in a forty-fifth session run); the harness passes it there too.
func withinOneBF16Step(gotB, wantB []byte) bool {
	for i := 0; i+1 < len(wantB); i += 2 {
		g, w := binary.LittleEndian.Uint16(gotB[i:]), binary.LittleEndian.Uint16(wantB[i:])
		gf, wf := backend.BF16ToF32(g), backend.BF16ToF32(w)
		if gf == wf {
			continue
		}
		finite := !math.IsNaN(float64(gf)) && !math.IsInf(float64(gf), 0) && !math.IsNaN(float64(wf)) && !math.IsInf(float64(wf), 0)
		if !finite || g>>15 != w>>15 || (g != w+1 && w != g+1) {
			return false
		}
	}
	return true
}

// quietNaN is the f32 NaN a kernel writes on purpose (topk_merge_f32's lse of
// a row with a non-finite logit); the poison of an unwritten output is another.
const quietNaN = 0x7fc00000

// agreedNaN zeroes the f32 elements that are quietNaN in both got and want
// (decoded as gf, wf): a NaN by contract compares; any other NaN still fails.
func agreedNaN(dt backend.DType, got, want []byte, gf, wf []float64) {
	if dt != backend.F32 {
		return
	}
	for i := range wf {
		if binary.LittleEndian.Uint32(got[4*i:]) == quietNaN && binary.LittleEndian.Uint32(want[4*i:]) == quietNaN {
			gf[i], wf[i] = 0, 0
		}
	}
}

// mismatch is the fraction of 32-bit words that differ.
func mismatch(got, want []byte) float64 {
	n := len(want) / 4
	if n == 0 {
		return 0
	}
	bad := 0
	for i := 0; i < n; i++ {
		if binary.LittleEndian.Uint32(got[4*i:]) != binary.LittleEndian.Uint32(want[4*i:]) {
			bad++
		}
	}
	return float64(bad) / float64(n)
}

// firstBad describes the first element that is not finite or differs the most,
// to point at the failing index.
func firstBad(dt backend.DType, gotB, wantB []byte) string {
	got, want := decode(dt, gotB), decode(dt, wantB)
	worst, at := -1.0, -1
	for i := range want {
		if math.IsNaN(got[i]) || math.IsInf(got[i], 0) {
			return fmt.Sprintf(" (element %d is %v, want %v)", i, got[i], want[i])
		}
		if d := math.Abs(got[i] - want[i]); d > worst {
			worst, at = d, i
		}
	}
	if at < 0 {
		return ""
	}
	return fmt.Sprintf(" (worst element %d: %v, want %v)", at, got[at], want[at])
}
