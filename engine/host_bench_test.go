package engine

import (
	"testing"

	"bagel/backend"
	"bagel/internal/testmodel"
)

// countingEncoder records nothing and counts dispatches.
type countingEncoder struct{ n int }

func (c *countingEncoder) Dispatch(string, backend.Dim3, backend.Dim3, ...backend.Arg) { c.n++ }
func (c *countingEncoder) Submit() error                                               { return nil }

// BenchmarkDecodeStepHost is the host's share of a decode step: the model
// building one token's dispatches (checks, arguments, launch geometry,
// scratch) with an encoder that drops them, so that only the host work is
// timed. It reports ns a dispatch; a GPU step overlaps this work with the
// kernels, except for its first segment.
func BenchmarkDecodeStepHost(b *testing.B) {
	e, err := Load(testmodel.Weights(b, "tiny-moe"), Options{Backend: "cpu", ContextLength: 64})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	b.ReportAllocs()
	err = e.loop.do(func() error {
		enc := &countingEncoder{}
		real := e.ctx.Enc
		defer func() { e.ctx.Enc = real }()
		e.ctx.Enc = enc
		for b.Loop() {
			e.cache.Offset = 5
			if _, err := e.model.Forward(e.ctx, e.cache, []int32{1}, false); err != nil {
				return err
			}
			e.scratch.Reset()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(enc.n), "ns/dispatch")
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
