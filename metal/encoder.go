package metal

import (
	"fmt"
	"time"
	"unsafe"

	"bagel/backend"
	"bagel/kernels"
	"bagel/metal/mtl"
)

// Encoder starts recording one command buffer.
func (d *Device) Encoder() backend.Encoder { return &encoder{dev: d} }

// encoder records dispatches into one command buffer with one compute encoder
// (serial dispatch: each dispatch sees the writes of those before it). Both
// are created at the first dispatch and owned until Submit.
type encoder struct {
	dev *Device
	cb  mtl.CommandBuffer
	enc mtl.ComputeCommandEncoder
	err error // the first pipeline failure; the dispatches after it are dropped
}

// Dispatch records kernel over grid threadgroups of group threads. An unknown
// kernel, arguments that do not match its signature or a threadgroup over 1024
// threads panic (programmer errors); a pipeline that cannot be built, or that
// runs fewer threads per threadgroup than group, is reported by Submit. An empty
// grid records nothing.
func (e *encoder) Dispatch(kernel string, grid, group backend.Dim3, args ...backend.Arg) {
	d := e.dev
	c := kernels.Preflight("metal", kernel, grid, group, args)
	bound := d.bind(kernel, c, args)
	grid, group = c.Grid, c.Group
	threads := group.X * group.Y * group.Z
	if c.Empty() || e.err != nil {
		return
	}
	if d.open != nil && d.open != e {
		// Another encoder's recorded work comes first in the queue's order.
		if err := d.open.Submit(); err != nil {
			e.err = err
			return
		}
	}
	mtl.WithPool(func() {
		p, err := d.pipeline(kernel)
		if err == nil && threads > p.maxThreads {
			err = fmt.Errorf("metal: %s: threadgroup of %d threads, the pipeline runs at most %d", kernel, threads, p.maxThreads)
		}
		if err != nil {
			e.err = err
			return
		}
		if e.cb.IsNil() {
			e.cb = d.queue.CommandBuffer().Retain()
			e.enc = e.cb.ComputeCommandEncoder().Retain()
		}
		e.enc.SetComputePipelineState(p.state)
		for i, a := range bound {
			switch {
			case a.scalar:
				v := a.bits
				e.enc.SetBytes(unsafe.Pointer(&v), 4, i)
			default:
				e.enc.SetBuffer(a.buf, a.off, i)
			}
		}
		e.enc.DispatchThreadgroups(
			mtl.Size{Width: uint64(grid.X), Height: uint64(grid.Y), Depth: uint64(grid.Z)},
			mtl.Size{Width: uint64(group.X), Height: uint64(group.Y), Depth: uint64(group.Z)})
		d.counters.Dispatches++
		d.open = e
	})
}

// boundArg is one argument resolved for the encoder: a Metal buffer and the
// offset inside it, or a scalar's 32 bits (setBytes).
type boundArg struct {
	buf    mtl.Buffer
	off    int
	scalar bool
	bits   uint32
}

// bind resolves each buffer
// argument to the Metal buffer that holds its offset.
func (d *Device) bind(kernel string, c kernels.Checked, args []backend.Arg) []boundArg {
	sig := c.Sig
	out := make([]boundArg, len(args))
	for i, a := range args {
		if a.Kind != backend.ArgBuffer {
			out[i] = boundArg{scalar: true, bits: kernels.ScalarBits(a)}
			continue
		}
		buf, err := d.own(a.Buf, a.Off, 0)
		if err == nil && len(buf.mtl) == 0 {
			err = fmt.Errorf("empty buffer")
		}
		if err != nil {
			panic(fmt.Sprintf("metal: %s: argument %d (%s): %v", kernel, i, sig.Params[i].Name, err))
		}
		j, local := buf.plan.resolve(a.Off)
		out[i] = boundArg{buf: buf.mtl[j], off: local}
	}
	return out
}

// pipeline returns kernel's compute pipeline, building it at first use.
func (d *Device) pipeline(kernel string) (pipeline, error) {
	if p, ok := d.pipelines[kernel]; ok {
		return p, nil
	}
	fn := d.lib.NewFunctionWithName(kernel)
	if fn.IsNil() {
		return pipeline{}, fmt.Errorf("metal: kernel %s is not in the compiled library", kernel)
	}
	defer fn.Release()
	state, err := d.dev.NewComputePipelineStateWithFunction(fn)
	if err != nil {
		return pipeline{}, fmt.Errorf("metal: %s: %w", kernel, err)
	}
	p := pipeline{state: state, maxThreads: state.MaxTotalThreadsPerThreadgroup()}
	d.pipelines[kernel] = p
	return p, nil
}

// Submit commits the recorded command buffer without waiting for it. When
// maxInFlight buffers are already in flight it first waits for the oldest.
// It returns the encoder's first pipeline failure (the recorded work is then
// dropped), or the failure of an earlier command buffer found completed.
func (e *encoder) Submit() error {
	d := e.dev
	if d.open == e {
		d.open = nil
	}
	err := e.err
	e.err = nil
	mtl.WithPool(func() {
		if e.cb.IsNil() {
			return
		}
		e.enc.EndEncoding()
		e.enc.Release()
		cb := e.cb
		e.cb, e.enc = mtl.CommandBuffer{}, mtl.ComputeCommandEncoder{}
		if err != nil {
			cb.Release()
			return
		}
		d.commitResidency()
		for len(d.inFlight) >= d.maxInFlight {
			d.completeOldest()
		}
		cb.Commit()
		d.committed++
		d.inFlight = append(d.inFlight, cb)
		d.counters.CommandBuffers++
		d.reap()
	})
	if err == nil {
		err, d.asyncErr = d.asyncErr, nil
	}
	return err
}

// Synchronize commits the open encoder's recorded work and waits for every
// submitted command buffer; a host sync.
func (d *Device) Synchronize() error {
	if err := d.submitOpen(); err != nil {
		return err
	}
	d.counters.HostSyncs++
	return d.wait()
}

// submitOpen commits the dispatches an encoder recorded and has not
// committed, so that a host-side operation after them (a read, a wait, a
// write it cannot stage) comes after them, as CUDA's stream order puts it.
func (d *Device) submitOpen() error {
	if d.open == nil {
		return nil
	}
	return d.open.Submit()
}

// wait completes every command buffer in flight and returns (and forgets) the
// first failure among those completed since the last report.
func (d *Device) wait() error {
	mtl.WithPool(func() {
		for len(d.inFlight) > 0 {
			d.completeOldest()
		}
	})
	err := d.asyncErr
	d.asyncErr = nil
	return err
}

// completeOldest waits for the oldest command buffer in flight, checks its
// status, records its GPU time and releases it.
func (d *Device) completeOldest() {
	cb := d.inFlight[0]
	d.inFlight = d.inFlight[1:]
	d.completed++
	cb.WaitUntilCompleted()
	if st := cb.Status(); st != mtl.StatusCompleted {
		if d.asyncErr == nil {
			err := cb.Error()
			if err == nil {
				err = fmt.Errorf("metal: command buffer ended with status %s", mtl.CommandBufferStatus(st))
			}
			d.asyncErr = err
		}
	} else {
		gpu := time.Duration((cb.GPUEndTime() - cb.GPUStartTime()) * float64(time.Second))
		d.lastGPU = gpu
		d.totalGPU += gpu
	}
	cb.Release()
}

// reap completes the command buffers at the front that the GPU has finished,
// without waiting.
func (d *Device) reap() {
	for len(d.inFlight) > 0 {
		if st := d.inFlight[0].Status(); st != mtl.StatusCompleted && st != mtl.StatusError {
			return
		}
		d.completeOldest()
	}
}
