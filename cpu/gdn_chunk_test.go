package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"bagel/backend"
)

// TestGDNChunkedIsTheSequentialRule runs the chunked form (gdn_chunk_prep_f32,
// gdn_chunk_bf16) and the sequential rule (gdn_recurrence_bf16, normed) on the
// same normalised inputs, over several chunks and a partial one: the outputs
// and the state agree to f32 summation noise.
func TestGDNChunkedIsTheSequentialRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	d := newTestDevice()
	const T, Hk, Hv, Dk, Dv = 75, 2, 4, 32, 24
	width := 2*Hk*Dk + Hv*Dv
	conv := make([]float32, T*width)
	for tok := range T {
		row := conv[tok*width:]
		for j := range 2 * Hk {
			head := row[j*Dk : (j+1)*Dk]
			var ss float64
			for i := range head {
				head[i] = float32(rng.NormFloat64())
				ss += float64(head[i] * head[i])
			}
			scale := 1 / math.Sqrt(ss/Dk) / Dk
			if j >= Hk {
				scale = 1 / math.Sqrt(ss/Dk) / math.Sqrt(Dk)
			}
			for i := range head {
				head[i] *= float32(scale)
			}
		}
		for i := 2 * Hk * Dk; i < width; i++ {
			row[i] = float32(rng.NormFloat64())
		}
	}
	// The gates from logits, as the model makes them (gdn_gates_bf16 for the
	// chunked rule; the recurrence computes the same itself).
	aLog := make([]float32, Hv)
	for i := range aLog {
		aLog[i] = -3 + 2*rng.Float32() // decays g of about 0.6 to 0.98
	}
	aB, bB := bf16Buf(t, d, randBF16(rng, T*Hv, 1)), bf16Buf(t, d, randBF16(rng, T*Hv, 2))
	aLogB, dtBiasB := f32Buf(t, d, aLog), bf16Buf(t, d, randBF16(rng, Hv, 0.5))
	gB, betaB := poisonBuf(t, d, 4*T*Hv), poisonBuf(t, d, 4*T*Hv)
	dispatch(d, "gdn_gates_bf16", arg(aB), arg(bB), arg(aLogB), arg(dtBiasB), arg(gB), arg(betaB), backend.Int(T), backend.Int(Hv))
	state := randBF16(rng, Hv*Dv*Dk, 0.1)
	scalars := []backend.Arg{backend.Int(T), backend.Int(Hk), backend.Int(Hv), backend.Int(Dk), backend.Int(Dv)}

	convB := bf16Buf(t, d, conv)
	seqState, seqOut := f32Buf(t, d, state), poisonBuf(t, d, 2*T*Hv*Dv)
	dispatch(d, "gdn_recurrence_bf16", append([]backend.Arg{arg(convB), arg(aB), arg(bB), arg(aLogB), arg(dtBiasB), arg(seqState), arg(seqOut)},
		append(scalars, backend.Int(1))...)...)

	chunks := (T + gdnChunkLen - 1) / gdnChunkLen
	prep := poisonBuf(t, d, 4*chunks*Hv*gdnPrepLen)
	dispatch(d, "gdn_chunk_prep_f32", append([]backend.Arg{arg(convB), arg(gB), arg(betaB), arg(prep)}, scalars...)...)
	chState, chOut := f32Buf(t, d, state), poisonBuf(t, d, 2*T*Hv*Dv)
	dispatch(d, "gdn_chunk_bf16", append([]backend.Arg{arg(convB), arg(betaB), arg(prep), arg(chState), arg(chOut)}, scalars...)...)

	rel := func(a, b []float32) float64 {
		var diff, norm float64
		for i := range a {
			diff += math.Pow(float64(a[i]-b[i]), 2)
			norm += math.Pow(float64(b[i]), 2)
		}
		return math.Sqrt(diff / norm)
	}
	t.Logf("out %g, state %g", rel(readBF16(t, d, chOut, T*Hv*Dv), readBF16(t, d, seqOut, T*Hv*Dv)), rel(readF32(t, d, chState, Hv*Dv*Dk), readF32(t, d, seqState, Hv*Dv*Dk)))
	if e := rel(readBF16(t, d, chOut, T*Hv*Dv), readBF16(t, d, seqOut, T*Hv*Dv)); !(e <= 2e-3) {
		t.Errorf("outputs differ by %g relative", e)
	}
	if e := rel(readF32(t, d, chState, Hv*Dv*Dk), readF32(t, d, seqState, Hv*Dv*Dk)); !(e <= 1e-4) {
		t.Errorf("final states differ by %g relative", e)
	}
}
