//go:build !darwin || metalsim

package mtl

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"unsafe"

	"bagel/backend"
	"bagel/cpu"
	"bagel/kernels"
)

// The simulated GPU: a command queue whose own goroutine executes committed
// command buffers in commit order, each dispatch by the CPU backend's kernel
// of the pipeline's name over the bound buffers' memory. The host goroutine
// records and commits; like a real GPU, the work runs concurrently with it.

// CommandQueue is a simulated MTLCommandQueue.
type CommandQueue struct{ q *simQueue }

type simQueue struct {
	object
	dev         *simDevice
	max         int                 // maxCommandBufferCount
	outstanding []*simCommandBuffer // made by CommandBuffer and not yet completed
	work        chan *simCommandBuffer
	completed   chan struct{}      // a command buffer completed (CommandBuffer waits for one)
	sets        []*simResidencySet // attached with addResidencySet (sim_residency.go)
}

// NewCommandQueueWithMaxCommandBufferCount makes the queue and starts its
// GPU goroutine; owned.
func (d Device) NewCommandQueueWithMaxCommandBufferCount(n int) CommandQueue {
	defer sim.mu.Unlock()
	dev := d.lock("newCommandQueueWithMaxCommandBufferCount")
	if n < 1 {
		panic(fmt.Sprintf("metal simulator: maxCommandBufferCount %d", n))
	}
	q := &simQueue{object: newObject("MTLCommandQueue"), dev: dev, max: n,
		work: make(chan *simCommandBuffer, n), completed: make(chan struct{}, 1)}
	track(&q.object)
	go q.run()
	return CommandQueue{q}
}

// CommandBuffer returns a new command buffer; autoreleased. Like Metal it
// blocks while maxCommandBufferCount command buffers are outstanding; when
// none of them is committed it would block forever, and panics instead.
func (q CommandQueue) CommandBuffer() CommandBuffer {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	for {
		q.q.use("commandBuffer")
		if len(q.q.outstanding) < q.q.max {
			break
		}
		committed := 0
		for _, c := range q.q.outstanding {
			if c.status != statusNotEnqueued {
				committed++
			}
		}
		if committed == 0 {
			panic(fmt.Sprintf("metal simulator: commandBuffer would block forever: %d command buffers outstanding, none committed", q.q.max))
		}
		sim.mu.Unlock()
		<-q.q.completed
		sim.mu.Lock()
	}
	needPool("MTLCommandBuffer")
	c := &simCommandBuffer{object: newObject("MTLCommandBuffer"), queue: q.q, done: make(chan struct{})}
	track(&c.object)
	q.q.outstanding = append(q.q.outstanding, c)
	cb := CommandBuffer{c}
	autorelease(c.kind, cb.Release)
	return cb
}

// Release gives up ownership; the last release stops the GPU goroutine once
// it has run what was committed.
func (q CommandQueue) Release() {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	if q.q.release() {
		for _, s := range q.q.sets {
			s.releaseRef()
		}
		q.q.sets = nil
		close(q.q.work)
	}
}

// MTLCommandBufferStatus values.
const (
	statusNotEnqueued = 0
	statusCommitted   = 2
	statusScheduled   = 3
)

// CommandBuffer is a simulated MTLCommandBuffer.
type CommandBuffer struct{ c *simCommandBuffer }

type simCommandBuffer struct {
	object
	queue      *simQueue
	status     uint64
	open       *simEncoder // the encoder not yet ended
	dispatches []simDispatch
	retained   []*simBuffer // every buffer bound, held until completion as Metal does
	err        error        // *NSError when status is error
	start, end float64      // GPU times, seconds of gpuClock
	done       chan struct{}
}

// IsNil reports whether c is no command buffer.
func (c CommandBuffer) IsNil() bool { return c.c == nil }

// ComputeCommandEncoder returns a new compute encoder; autoreleased. Metal
// allows one open encoder per command buffer and none after commit.
func (c CommandBuffer) ComputeCommandEncoder() ComputeCommandEncoder {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	c.c.use("computeCommandEncoder")
	needPool("MTLComputeCommandEncoder")
	switch {
	case c.c.status != statusNotEnqueued:
		panic("metal simulator: computeCommandEncoder on a committed command buffer")
	case c.c.open != nil:
		panic("metal simulator: computeCommandEncoder while another encoder of the command buffer is not ended")
	}
	e := &simEncoder{object: newObject("MTLComputeCommandEncoder"), cb: c.c}
	track(&e.object)
	c.c.open = e
	enc := ComputeCommandEncoder{e}
	autorelease(e.kind, enc.Release)
	return enc
}

// Commit hands the command buffer to the GPU goroutine. Committing twice, or
// with an encoder not ended, is an error Metal asserts on.
func (c CommandBuffer) Commit() {
	c.commit()
	c.c.queue.work <- c.c // never blocks: at most max are outstanding
}

func (c CommandBuffer) commit() {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	c.c.use("commit")
	switch {
	case c.c.status != statusNotEnqueued:
		panic("metal simulator: commit of a command buffer already committed")
	case c.c.open != nil:
		panic("metal simulator: commit with an encoder not ended (endEncoding first)")
	}
	c.c.queue.use("commit to a queue")
	if found := c.c.queue.checkResidency(c.c); len(found) > 0 && c.c.queue.dev.residency.strict {
		c.c.err = &NSError{Op: "command buffer", Domain: "MTLCommandBufferErrorDomain", Code: 9,
			Description: "metal simulator (strict residency): " + strings.Join(found, "; ")}
	}
	c.c.status = statusCommitted
	c.c.retain() // the queue's reference, dropped at completion
}

// WaitUntilCompleted blocks until the GPU goroutine finished the buffer. On a
// buffer never committed Metal would wait forever; here that panics.
func (c CommandBuffer) WaitUntilCompleted() {
	if c.Status() == statusNotEnqueued {
		panic("metal simulator: waitUntilCompleted on a command buffer never committed (it would wait forever)")
	}
	<-c.c.done
}

// Status is the MTLCommandBufferStatus.
func (c CommandBuffer) Status() uint64 {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	c.c.use("status")
	return c.c.status
}

// Error is the failure of a buffer whose status is error.
func (c CommandBuffer) Error() error {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	c.c.use("error")
	return c.c.err
}

// GPUStartTime is when the GPU goroutine started the buffer, in seconds.
func (c CommandBuffer) GPUStartTime() float64 {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	c.c.use("GPUStartTime")
	return c.c.start
}

// GPUEndTime is when it finished, in seconds.
func (c CommandBuffer) GPUEndTime() float64 {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	c.c.use("GPUEndTime")
	return c.c.end
}

// Retain takes a reference.
func (c CommandBuffer) Retain() CommandBuffer {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	c.c.retain()
	return c
}

// Release drops a reference. A buffer released without being committed lets
// go of the buffers it bound and of its place in the queue.
func (c CommandBuffer) Release() {
	if retained, abandoned := c.release(); abandoned {
		for _, b := range retained {
			b.releaseRef()
		}
		signal(c.c.queue.completed)
	}
}

// release drops the reference; when it was the last of a buffer never
// committed, it takes the buffer out of the queue and returns what it bound.
func (c CommandBuffer) release() (retained []*simBuffer, abandoned bool) {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	if !c.c.release() || c.c.status != statusNotEnqueued {
		return nil, false
	}
	q := c.c.queue
	q.outstanding = removeCB(q.outstanding, c.c)
	retained, c.c.retained = c.c.retained, nil
	return retained, true
}

func removeCB(list []*simCommandBuffer, c *simCommandBuffer) []*simCommandBuffer {
	for i, x := range list {
		if x == c {
			return append(list[:i], list[i+1:]...)
		}
	}
	return list
}

// signal wakes one waiter of ch without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// ComputeCommandEncoder is a simulated MTLComputeCommandEncoder.
type ComputeCommandEncoder struct{ e *simEncoder }

type simEncoder struct {
	object
	cb       *simCommandBuffer
	ended    bool
	pipeline *simPipeline
	table    [simMaxBufferIndex + 1]binding // the argument table; bindings persist across dispatches
}

// binding is one argument-table entry: a buffer at an offset, or setBytes' copy.
type binding struct {
	buf   *simBuffer
	off   int
	bytes []byte
}

// simDispatch is one recorded dispatchThreadgroups.
type simDispatch struct {
	kernel      string
	sig         kernels.Signature
	args        []binding // entry i is [[buffer(i)]], the kernel's argument i
	grid, group Size
}

// active checks the encoder may still record; callers hold sim.mu.
func (e *simEncoder) active(op string) {
	e.use(op)
	if e.ended {
		panic(fmt.Sprintf("metal simulator: %s after endEncoding", op))
	}
}

// checkIndex panics on an argument-table index Metal does not have.
func checkIndex(op string, index int) {
	if index < 0 || index > simMaxBufferIndex {
		panic(fmt.Sprintf("metal simulator: %s at index %d, want 0..%d", op, index, simMaxBufferIndex))
	}
}

// SetComputePipelineState: the kernel of the next dispatches.
func (e ComputeCommandEncoder) SetComputePipelineState(p ComputePipelineState) {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	e.e.active("setComputePipelineState")
	p.p.use("setComputePipelineState of a pipeline")
	e.e.pipeline = p.p
}

// SetBuffer binds b at byte offset off to [[buffer(index)]]. The command
// buffer holds b until it completes. An offset past the end is an error.
func (e ComputeCommandEncoder) SetBuffer(b Buffer, off, index int) {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	e.e.active("setBuffer")
	checkIndex("setBuffer", index)
	b.b.use("setBuffer of a buffer")
	if off < 0 || off > len(b.b.mem) {
		panic(fmt.Sprintf("metal simulator: setBuffer offset %d outside a buffer of %d bytes", off, len(b.b.mem)))
	}
	b.b.retain()
	e.e.cb.retained = append(e.e.cb.retained, b.b)
	e.e.table[index] = binding{buf: b.b, off: off}
}

// SetBytes copies n bytes at p into the argument table (Metal's limit: 4 KB).
func (e ComputeCommandEncoder) SetBytes(p unsafe.Pointer, n, index int) {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	e.e.active("setBytes")
	checkIndex("setBytes", index)
	if n < 0 || n > simMaxSetBytes {
		panic(fmt.Sprintf("metal simulator: setBytes of %d bytes, Metal allows at most %d", n, simMaxSetBytes))
	}
	e.e.table[index] = binding{bytes: append([]byte(nil), unsafe.Slice((*byte)(p), n)...)}
}

// DispatchThreadgroups records a dispatch of the current pipeline. It panics
// without a pipeline, on a threadgroup of no threads or more than the
// pipeline's maxTotalThreadsPerThreadgroup, and on an argument the kernel
// declares but the table does not hold as it must (a buffer bound for a
// BUFFER, 4 bytes of setBytes for a PARAM), all undefined on a real GPU.
func (e ComputeCommandEncoder) DispatchThreadgroups(grid, group Size) {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	e.e.active("dispatchThreadgroups")
	p := e.e.pipeline
	if p == nil {
		panic("metal simulator: dispatchThreadgroups without a compute pipeline state")
	}
	p.use("dispatchThreadgroups with a pipeline")
	threads := group.Width * group.Height * group.Depth
	if threads == 0 || threads > uint64(p.maxThreads) {
		panic(fmt.Sprintf("metal simulator: %s: threadgroup %dx%dx%d = %d threads, the pipeline runs 1..%d",
			p.kernel, group.Width, group.Height, group.Depth, threads, p.maxThreads))
	}
	sig := kernels.Lookup("metal simulator", p.kernel)
	args := make([]binding, len(sig.Params))
	for i, param := range sig.Params {
		b := e.e.table[i]
		switch {
		case param.Buffer && b.buf == nil:
			panic(fmt.Sprintf("metal simulator: %s: argument %d (%s) is a device buffer but [[buffer(%d)]] holds no buffer", p.kernel, i, param.Name, i))
		case !param.Buffer && len(b.bytes) != 4:
			panic(fmt.Sprintf("metal simulator: %s: argument %d (%s) is a 4-byte scalar but [[buffer(%d)]] holds %d bytes of setBytes", p.kernel, i, param.Name, i, len(b.bytes)))
		}
		if param.Buffer {
			b.buf.use(fmt.Sprintf("%s: dispatch with argument %d", p.kernel, i))
		}
		args[i] = b
	}
	e.e.cb.dispatches = append(e.e.cb.dispatches, simDispatch{kernel: p.kernel, sig: sig, args: args, grid: grid, group: group})
}

// EndEncoding closes the encoder; nothing may be recorded with it afterwards.
func (e ComputeCommandEncoder) EndEncoding() {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	e.e.active("endEncoding")
	e.e.ended = true
	e.e.cb.open = nil
}

// Retain takes a reference.
func (e ComputeCommandEncoder) Retain() ComputeCommandEncoder {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	e.e.retain()
	return e
}

// Release drops a reference.
func (e ComputeCommandEncoder) Release() { releaseLocked(&e.e.object) }

// run is the GPU goroutine: it executes committed command buffers in order
// until the queue is released.
func (q *simQueue) run() {
	for c := range q.work {
		q.execute(c)
	}
}

// execute runs c's dispatches in order. A kernel that panics (arguments
// outside their buffers, say) fails the command buffer with an
// MTLCommandBufferErrorDomain error and skips the rest, as a GPU fault does.
func (q *simQueue) execute(c *simCommandBuffer) {
	sim.mu.Lock()
	c.status, c.start = statusScheduled, gpuClock()
	dispatches, err := c.dispatches, c.err // err: failed at commit (strict residency)
	sim.mu.Unlock()

	for _, d := range dispatches {
		if err != nil {
			break
		}
		err = runDispatch(q.dev.kernels, d)
	}

	sim.mu.Lock()
	c.end = gpuClock()
	c.status = StatusCompleted
	if err != nil {
		c.status, c.err = StatusError, err
	}
	retained := c.retained
	c.retained, c.dispatches = nil, nil
	q.outstanding = removeCB(q.outstanding, c)
	sim.mu.Unlock()
	// Everything the buffer held is let go before a waiter wakes, so a host
	// that waited sees the final reference counts.
	for _, b := range retained {
		b.releaseRef()
	}
	CommandBuffer{c}.Release() // the queue's reference, taken by Commit
	close(c.done)
	signal(q.completed)
}

// runDispatch runs one dispatch with the CPU backend: every buffer argument
// becomes a cpu buffer over the whole Metal buffer (so the CPU kernel's bounds
// checks stop at the Metal buffer's end), every scalar is decoded from its 4
// bytes by its declared type.
func runDispatch(dev *cpu.Device, d simDispatch) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &NSError{Op: "command buffer", Domain: "MTLCommandBufferErrorDomain", Code: 1,
				Description: fmt.Sprintf("metal simulator: kernel %s failed on the CPU: %v", d.kernel, r)}
		}
	}()
	args := make([]backend.Arg, len(d.args))
	for i, param := range d.sig.Params {
		b := d.args[i]
		switch {
		case param.Buffer:
			buf, err := dev.WrapHost(b.buf.mem)
			if err != nil {
				return err
			}
			args[i] = backend.Buf(buf, b.off)
		case param.Type == "float":
			args[i] = backend.Float(math.Float32frombits(binary.LittleEndian.Uint32(b.bytes)))
		default:
			args[i] = backend.Int(int(int32(binary.LittleEndian.Uint32(b.bytes))))
		}
	}
	dim := func(s Size) backend.Dim3 { return backend.Dim3{X: int(s.Width), Y: int(s.Height), Z: int(s.Depth)} }
	enc := dev.Encoder()
	enc.Dispatch(d.kernel, dim(d.grid), dim(d.group), args...)
	return enc.Submit()
}
