package engine

import (
	"bagel/backend"
	"bagel/ops"
	"bagel/switches"
)

// The decode pipeline. A decode step may pick its token on the device
// (greedy: device-argmax; sampled with a top-k and no penalty:
// device-sampling, device_draw.go). Without the pipeline the host then waits
// for the step, reads the token and only then records and launches the next
// step, and the GPU idles meanwhile (bench's host ms/tok: 0.12–0.23 ms of a
// 2.4 ms token on an H200). With it the next step is launched before the
// host waits: it embeds the pick where the step left it on the device (qwen's
// ForwardIDs), and the host's wait is for an asynchronous read queued
// between the two (backend.AsyncReader), so the GPU always has the next step
// queued.
//
// The step after the last token is launched before the host knows the token
// ends the reply (an end-of-text, a cancel): it runs for nothing, and the
// cache, one token past the reply and with that token in its GDN states, is
// reset. Later turns start from a held snapshot or an empty cache
// (reuse.go), never from the live one, so nothing is lost. A known end (the
// token limit, the context's end) launches nothing extra.

// SwitchDecodePipeline turns the decode pipeline on.
const SwitchDecodePipeline = "decode-pipeline"

func init() {
	switches.Register(switches.Switch{
		Name: SwitchDecodePipeline,
		Description: "Decoding launches the next step before reading the last one's token, which stays on the device " +
			"(greedy replies, sampled ones with device sampling, and batches of greedy replies answering together; " +
			"devices that read back asynchronously while they work: CUDA, Metal; applies at the next generation).",
		Default:  true,
		Env:      "BAGEL_NO_DECODE_PIPELINE",
		Backends: []string{"cuda", "metal"}, // the CPU's work runs as it is dispatched (CanPipeline)
	})
}

// aheadStep is a decode step launched and not yet read: its token is on the
// device (ids, what the step after it embeds) and on its way to the host.
type aheadStep struct {
	ids     ops.Tensor          // i32 [1] in the step's read-back buffer
	read    backend.PendingRead // that buffer: [id | logit | log-sum-exp], or [id] when sampled
	sampled bool
}

// decodePipe runs decode steps one ahead of the host. cur is the step
// launched on the token being handled (nil: none launched yet). draw, when
// set, has the device draw each token (device sampling); nil: greedy.
type decodePipe struct {
	e    *Engine
	cur  *aheadStep
	draw *deviceDraw
}

// deviceDraw is what a sampled step needs: the sampling settings, and the
// reply's uniforms in step order (the sampler's generator: they do not depend
// on the tokens, so a step may be launched before the last token is read).
type deviceDraw struct {
	s       Sampling
	uniform func() float32
}

// CanPipeline says whether the decode pipeline runs on the loaded device: it
// reads back asynchronously and works while the host reads (not the CPU
// backend's, whose work runs as it is dispatched).
func (e *Engine) CanPipeline() bool {
	return ops.CanReadAsync(e.ctx) && (pipelineAtDispatch || !ops.RunsAtDispatch(e.ctx))
}

// pipelineAtDispatch lets the decode pipeline run on a device whose work runs
// as it is dispatched (the CPU backend), for the engine's tests of its logic.
// Elsewhere such a device decodes without it: the step launched ahead would
// run before the token it follows is sent, so each token reached the reader
// a step late (a 4-layer synthetic dense model on 2 cores: the second token
// at 1.55 s against 0.99 s, the same total time).
var pipelineAtDispatch = false

// next returns the token after id: it launches the step on id unless one is
// under way, then, when ahead, the step on that step's pick before waiting
// for it (ahead: the reply goes on after the returned token, as far as the
// host knows: no token limit or context end reached).
func (p *decodePipe) next(id int32, ahead bool) (int32, error) {
	if p.cur == nil {
		s, err := p.e.launchStep(id, nil, p.draw)
		if err != nil {
			return 0, err
		}
		p.cur = s
	}
	cur := p.cur
	p.cur = nil
	if ahead {
		s, err := p.e.launchStep(0, cur, p.draw)
		if err != nil {
			return 0, err
		}
		p.cur = s
	}
	return p.e.waitStep(cur)
}

// stop ends the pipeline after the reply's last token: a step launched on it
// is waited for (a fault in it reports here) and the cache, one token past
// the reply, is reset.
func (p *decodePipe) stop() error {
	if p.cur == nil {
		return nil
	}
	s := p.cur
	p.cur = nil
	return p.e.loop.do(func() error {
		_, err := s.read.Wait()
		if rerr := p.e.cache.Reset(p.e.ctx); err == nil {
			err = rerr
		}
		return err
	})
}

// launchStep launches a decode step, on tok from the host or, with prev, on
// the token prev left on the device, and queues the read of its token without
// waiting for it: the top 1, or with draw the device's draw from the top k. A
// failure resets the cache, as step does.
func (e *Engine) launchStep(tok int32, prev *aheadStep, draw *deviceDraw) (*aheadStep, error) {
	var s *aheadStep
	var u float32
	if draw != nil {
		u = draw.uniform() // in step order, before anything can fail
	}
	forward := func() (ops.Tensor, error) {
		if prev != nil {
			return e.model.ForwardIDs(e.ctx, e.cache, prev.ids)
		}
		return e.model.Forward(e.ctx, e.cache, []int32{tok}, false)
	}
	err := e.stepWith(forward, nil, func(logits ops.Tensor) error {
		// The read-back buffer stays put after the scratch reset: the next
		// step embeds its first value before its own pick overwrites it,
		// and the read is queued before either.
		var back ops.Tensor
		if draw != nil {
			back = e.drawOnDevice(logits, draw.s, u)
		} else {
			back = e.topK(logits, 1, 1)
		}
		read, err := ops.ReadBytesAsync(e.ctx, back)
		if err != nil {
			return err
		}
		s = &aheadStep{ids: ops.View(back, 0, ops.I32, []int{1}), read: read, sampled: draw != nil}
		return nil
	})
	return s, err
}

// waitStep waits for a launched step's token (errNonFinite when its logits
// were not all finite).
func (e *Engine) waitStep(s *aheadStep) (int32, error) {
	var raw []byte
	if err := e.loop.do(func() (err error) { raw, err = s.read.Wait(); return err }); err != nil {
		return 0, err
	}
	if s.sampled {
		return drawnToken(raw)
	}
	return parseTopK(raw, 1, 1)[0].greedy()
}
