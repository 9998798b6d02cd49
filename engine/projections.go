package engine

import (
	"fmt"
	"time"

	"bagel/backend"
	"bagel/ops"
)

// ProjectionTiming is the decode GEMV on one shape of the model's quantized
// matrices, timed alone: one token's activations times the matrix (an expert
// stack: the router's K experts of it), repeated. Its effective bandwidth
// against the device's is what is left to gain on that shape.
type ProjectionTiming struct {
	Name      string        `json:"name"` // the first matrix of the shape
	Rows      int           `json:"rows"`
	In        int           `json:"in"`
	Bits      int           `json:"bits"`
	GroupSize int           `json:"group_size"`
	Experts   int           `json:"experts,omitempty"` // a stack's experts (a product reads the router's K of them)
	PerToken  int           `json:"per_token"`         // products of this shape a decode token makes
	Bytes     int64         `json:"bytes"`             // codes, scales and biases one product reads
	Time      time.Duration `json:"time_ns"`           // one product: device time where the backend measures it, else wall time
	GBPerSec  float64       `json:"gb_per_s"`
	// DeviceTime says whether Time is the device's own measure (CUDA events,
	// Metal's command buffer times) rather than the host's wall clock.
	DeviceTime bool `json:"device_time"`
}

// TimeProjections times the GEMV on each shape of the model's quantized
// matrices (qwen.Model.Projections), reps products each after one to warm up,
// all of a shape in one submission. Zeros for activations: the time of a
// GEMV does not depend on them.
func (e *Engine) TimeProjections(reps int) ([]ProjectionTiming, error) {
	if reps < 1 || reps > 10000 {
		return nil, fmt.Errorf("projection timing: %d repetitions, want 1 to 10000", reps)
	}
	var out []ProjectionTiming
	err := e.loop.do(func() error {
		defer e.scratch.Reset()
		for _, p := range e.model.Projections() {
			e.scratch.Rewind(0) // the last projection's tensors: it was timed
			w := p.W
			k := 1
			if w.Experts > 0 {
				k = min(e.Config.ExpertsPerToken, w.Experts)
			}
			x, y := e.scratch.Get("timing.x", ops.BF16, 1, w.In), e.scratch.Get("timing.y", ops.BF16, 1, k, w.Out)
			if err := ops.Zero(e.ctx, x); err != nil {
				return err
			}
			var ids ops.Tensor
			if w.Experts > 0 {
				ids = e.scratch.Get("timing.ids", ops.I32, 1, k)
				first := make([]int32, k) // the first K experts: distinct, as the router's are
				for i := range first {
					first[i] = int32(i)
				}
				if err := ops.WriteInt32(e.ctx, ids, first); err != nil {
					return err
				}
			}
			product := func() {
				if w.Experts > 0 {
					ops.QMatmulGather(e.ctx, x, ids, w, y, false)
				} else {
					ops.QMatmul(e.ctx, x, w, y)
				}
			}
			product()
			if _, err := ops.ReadBytes(e.ctx, y); err != nil { // the warm-up done
				return fmt.Errorf("timing %s: %w", p.Name, err)
			}
			gpu0, timed := e.deviceTime()
			start := time.Now()
			for range reps {
				product()
			}
			if _, err := ops.ReadBytes(e.ctx, y); err != nil {
				return fmt.Errorf("timing %s: %w", p.Name, err)
			}
			per := time.Since(start) / time.Duration(reps)
			if gpu1, ok := e.deviceTime(); timed && ok && gpu1 > gpu0 {
				per = (gpu1 - gpu0) / time.Duration(reps)
			} else {
				timed = false
			}
			t := ProjectionTiming{Name: p.Name, Rows: w.Out, In: w.In, Bits: w.Bits, GroupSize: w.GroupSize, Experts: w.Experts,
				PerToken: p.PerToken, Bytes: p.Bytes, Time: per, DeviceTime: timed}
			if per > 0 {
				t.GBPerSec = float64(p.Bytes) / per.Seconds() / 1e9
			}
			out = append(out, t)
		}
		return nil
	})
	return out, err
}

// deviceTime is the device's measured total on the device goroutine (see gpuTime).
func (e *Engine) deviceTime() (time.Duration, bool) {
	if m, ok := e.dev.(backend.GPUTimer); ok {
		return m.TotalGPUTime(), true
	}
	return 0, false
}
