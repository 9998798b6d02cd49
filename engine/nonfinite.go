package engine

import (
	"encoding/binary"
	"fmt"
	"math"

	"bagel/backend"
	"bagel/ops"
)

// NonFinite is where a forward first produced a NaN or an infinity.
type NonFinite struct {
	Layer    int     // −1: the embedding; NumLayers: the logits; a layer index otherwise
	What     string  // "the embedding", "layer 7 (attention)", "the logits"
	Position int     // the token position of the first bad value
	Index    int     // its element within that position's row
	Value    float32 // NaN or ±Inf
}

func (n *NonFinite) String() string {
	return fmt.Sprintf("%s produced the first non-finite value: position %d, element %d is %v", n.What, n.Position, n.Index, n.Value)
}

// FindNonFinite runs ids teacher-forced from an empty cache, in prefill chunks,
// reads the residual stream back after the embedding and after every layer,
// then the logits, and returns the first NaN or infinity it meets (nil when
// there is none). A host sync per layer: a diagnostic (bagel score
// --check-finite), not a path a reply takes.
func (e *Engine) FindNonFinite(ids []int32) (*NonFinite, error) {
	if len(ids) == 0 {
		return nil, fmt.Errorf("check-finite: no token ids")
	}
	if len(ids) > e.ContextLength() {
		return nil, fmt.Errorf("check-finite: %d tokens exceed the context length %d", len(ids), e.ContextLength())
	}
	e.waitTurn() // a generation under way finishes first
	defer e.give()
	if err := e.resetCache(); err != nil {
		return nil, err
	}
	defer e.resetCache()
	layers := e.Config.NumLayers
	for c0 := 0; c0 < len(ids); c0 += scoreChunk {
		chunk := ids[c0:min(len(ids), c0+scoreChunk)]
		var found *NonFinite
		err := e.loop.do(func() error {
			defer e.scratch.Reset()
			inspect := func(layer int, x ops.Tensor) error {
				raw, err := ops.ReadBytes(e.ctx, x)
				if err != nil {
					return err
				}
				if pos, idx, v, bad := firstNonFiniteBF16(raw, x.Shape[1]); bad {
					found = &NonFinite{Layer: layer, What: e.layerName(layer), Position: c0 + pos, Index: idx, Value: v}
					return errStopInspect
				}
				return nil
			}
			logits, err := e.model.ForwardInspect(e.ctx, e.cache, chunk, inspect)
			if err == errStopInspect {
				return nil
			}
			if err != nil {
				return err
			}
			values, err := ops.ReadF32(e.ctx, logits)
			if err != nil {
				return err
			}
			vocab := e.Config.VocabSize
			for i, v := range values {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					found = &NonFinite{Layer: layers, What: "the logits", Position: c0 + i/vocab, Index: i % vocab, Value: v}
					break
				}
			}
			return nil
		})
		if err != nil || found != nil {
			return found, err
		}
	}
	return nil, nil
}

var errStopInspect = fmt.Errorf("stop")

// layerName names what layer produced, for messages.
func (e *Engine) layerName(layer int) string {
	switch {
	case layer < 0:
		return "the embedding"
	case e.Config.IsAttention(layer):
		return fmt.Sprintf("layer %d (attention)", layer)
	default:
		return fmt.Sprintf("layer %d (gated DeltaNet)", layer)
	}
}

// firstNonFiniteBF16 finds the first NaN or infinity in rows of width bf16
// values: its row, column and value.
func firstNonFiniteBF16(raw []byte, width int) (row, col int, v float32, bad bool) {
	for i := 0; 2*i+1 < len(raw); i++ {
		bits := binary.LittleEndian.Uint16(raw[2*i:])
		if bits&0x7f80 == 0x7f80 { // exponent all ones: an infinity or a NaN
			return i / width, i % width, backend.BF16ToF32(bits), true
		}
	}
	return 0, 0, 0, false
}
