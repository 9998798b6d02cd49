package cpu

import (
	"math/rand/v2"
	"slices"
	"testing"

	"bagel/backend"
)

// TestMRoPEOfTextIsPlainRoPE: with the three positions alike (text),
// attn_prep_mrope_bf16 is attn_prep_tree_bf16 at that position, bit for
// bit; with an image's (t, h, w), frequency 1 turns by h and 2 by w, so the
// result differs from the plain one exactly in those dims' pairs.
func TestMRoPEOfTextIsPlainRoPE(t *testing.T) {
	const T, Hq, Hkv, D, rot, Cap, pos0 = 3, 2, 1, 16, 12, 8, 2
	rng := rand.New(rand.NewPCG(1, 2))
	d := newTestDevice()
	run := func(kernel string, pos []int32, extra ...backend.Arg) []float32 {
		bufs := []backend.Buffer{
			bf16Buf(t, d, randBF16(rng, T*Hq*2*D, 1)), bf16Buf(t, d, randBF16(rng, T*Hkv*D, 1)), bf16Buf(t, d, randBF16(rng, T*Hkv*D, 1)),
			bf16Buf(t, d, randBF16(rng, D, 1)), bf16Buf(t, d, randBF16(rng, D, 1)),
			poisonBuf(t, d, 2*T*Hq*D), poisonBuf(t, d, 2*T*Hq*D), bf16Buf(t, d, make([]float32, Hkv*Cap*D)), bf16Buf(t, d, make([]float32, Hkv*Cap*D)),
			i32Buf(t, d, pos),
		}
		args := []backend.Arg{}
		for _, b := range bufs {
			args = append(args, arg(b))
		}
		args = append(args, backend.Int(T), backend.Int(Hq), backend.Int(Hkv), backend.Int(D), backend.Int(rot), backend.Int(pos0), backend.Int(Cap))
		args = append(args, extra...)
		args = append(args, backend.Float(10), backend.Float(1e-6))
		dispatch(d, kernel, args...)
		return append(readBF16(t, d, bufs[5], T*Hq*D), readBF16(t, d, bufs[7], Hkv*Cap*D)...)
	}
	same := func() { rng = rand.New(rand.NewPCG(1, 2)) }
	same()
	plain := run("attn_prep_tree_bf16", []int32{7, 8, 9})
	same()
	text := run("attn_prep_mrope_bf16", []int32{7, 7, 7, 8, 8, 8, 9, 9, 9}, backend.Int(2), backend.Int(2))
	if !slices.Equal(plain, text) {
		t.Fatal("text's multimodal RoPE differs from the plain RoPE")
	}
	same()
	image := run("attn_prep_mrope_bf16", []int32{7, 7, 7, 8, 30, 8, 9, 9, 50}, backend.Int(2), backend.Int(2))
	// Token 1 differs only where h turns (frequencies 1 and 4: dims 1, 4, 7, 10),
	// token 2 only where w turns (2, 5: dims 2, 5, 8, 11); token 0 not at all.
	half := rot / 2
	for tok := range T {
		for h := range Hq {
			for i := range D {
				k := (tok*Hq+h)*D + i
				f := i % half
				moved := i < rot && ((tok == 1 && (f == 1 || f == 4)) || (tok == 2 && (f == 2 || f == 5)))
				if (image[k] != plain[k]) != moved && plain[k] != 0 {
					t.Errorf("token %d head %d dim %d: %v, plain %v (should move: %v)", tok, h, i, image[k], plain[k], moved)
				}
			}
		}
	}
}
