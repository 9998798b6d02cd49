package engine

import (
	"encoding/binary"

	"bagel/ops"
	"bagel/switches"
)

// Device sampling: a sampled reply with a top-k and no repetition penalty
// draws each token on the device (ops.SampleTop, from the device's top k,
// with a uniform from the reply's seeded generator), and the host reads back
// the token's id alone; the decode pipeline can then run sampled replies too
// (the uniforms do not depend on the tokens). The draw is the host sampler's
// (sampler.go) in f32, where the host's is in f64: the two can part where a
// uniform falls within rounding of a boundary between two tokens.

// SwitchDeviceSampling turns device sampling on.
const SwitchDeviceSampling = "device-sampling"

func init() {
	switches.Register(switches.Switch{
		Name: SwitchDeviceSampling,
		Description: "Sampling with a top-k and no repetition penalty draws the token on the device and reads back only its id " +
			"(applies at the next generation).",
		Default: true,
		Env:     "BAGEL_NO_DEVICE_SAMPLING",
	})
}

// drawOnDevice dispatches the top k of logits' row (k = s.TopK) and the draw
// from them with the uniform u, and returns the drawn token's tensor, i32 [1].
func (e *Engine) drawOnDevice(logits ops.Tensor, s Sampling, u float32) ops.Tensor {
	out := e.scratch.Get("sample.drawn", ops.I32, 1)
	e.drawInto(s, u, e.topK(logits, 1, s.TopK), out)
	return out
}

// drawRow is drawOnDevice of a batch's row into out, i32 [1]: the row's top
// k in scratch of its own (the batch's top k of every row stays as it is),
// taken again by the next row's draw (the launches run in order).
func (e *Engine) drawRow(logits ops.Tensor, s Sampling, u float32, out ops.Tensor) {
	mark := e.scratch.Scope("draw")
	defer e.scratch.Rewind(mark)
	e.drawInto(s, u, e.topKNamed("sample.draw_topk", logits, 1, s.TopK), out)
}

// drawInto draws from both, a row's top k (topK's buffer, k = s.TopK), with
// the uniform u into out.
func (e *Engine) drawInto(s Sampling, u float32, both, out ops.Tensor) {
	k := s.TopK
	ops.SampleTop(e.ctx, ops.View(both, 0, ops.I32, []int{k}), ops.View(both, 4*k, ops.F32, []int{k}),
		ops.View(both, 8*k, ops.F32, []int{1}), out, float32(s.Temperature), float32(s.TopP), float32(s.MinP), u)
}

// forwardDraw runs tokens through the model and draws the next token on the
// device with the uniform u; the host reads back its id alone.
func (e *Engine) forwardDraw(tokens []int32, s Sampling, u float32) (int32, error) {
	var id int32
	err := e.step(tokens, false, nil, func(logits ops.Tensor) error {
		raw, err := ops.ReadBytes(e.ctx, e.drawOnDevice(logits, s, u))
		if err != nil {
			return err
		}
		id, err = drawnToken(raw)
		return err
	})
	return id, err
}

// drawnToken is the token a device draw read back; −1 says the logits were
// not all finite (errNonFinite).
func drawnToken(raw []byte) (int32, error) {
	id := int32(binary.LittleEndian.Uint32(raw))
	if id < 0 {
		return 0, errNonFinite
	}
	return id, nil
}
