package qwen

import (
	"encoding/binary"
	"math"

	"bagel/ops"
)

// quantize8 is the MLX affine 8-bit layout of a bf16 matrix of rows × in
// (values little-endian bf16 bits, row-major), in groups of 64: per group a
// scale and a bias (bf16) and the codes q with w ≈ scale·q + bias, four codes
// a word, the first in the low byte. The scale is the group's range over 255
// and the bias its minimum, both rounded to bf16 before the codes are chosen,
// so that each weight comes back to within half a step of the rounded scale
// (8 bits keep a bf16 head's guesses; the demo's are trained in 4). A head
// released in bf16 (Qwen's mtp.safetensors) is quantized so at load: the
// kernels take quantized weights only.
func quantize8(data []byte, rows, in int) (codes, scales, biases []byte) {
	const gs = 64
	groups := in / gs
	codes = make([]byte, rows*in)
	scales, biases = make([]byte, 2*rows*groups), make([]byte, 2*rows*groups)
	for g := range rows * groups {
		vals := data[2*gs*g : 2*gs*(g+1)]
		lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
		for i := range gs {
			v := ops.BF16ToF32(binary.LittleEndian.Uint16(vals[2*i:]))
			lo, hi = min(lo, v), max(hi, v)
		}
		sb, bb := ops.F32ToBF16((hi-lo)/255), ops.F32ToBF16(lo)
		scale, bias := ops.BF16ToF32(sb), ops.BF16ToF32(bb)
		binary.LittleEndian.PutUint16(scales[2*g:], sb)
		binary.LittleEndian.PutUint16(biases[2*g:], bb)
		for i := range gs {
			q := float32(0)
			if scale > 0 {
				v := ops.BF16ToF32(binary.LittleEndian.Uint16(vals[2*i:]))
				q = float32(math.Round(float64((v - bias) / scale)))
			}
			codes[gs*g+i] = byte(min(255, max(0, q)))
		}
	}
	return codes, scales, biases
}
