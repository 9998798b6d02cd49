//go:build linux

package cuda

import (
	"fmt"
	"strings"
	"unsafe"

	"bagel/backend"
	"bagel/kernels"
	"bagel/switches"
)

// Device is one NVIDIA GPU with its primary context and one stream.
type Device struct {
	drv     *driver
	nv      *nvrtc // nil when NVRTC is absent: the embedded PTX is used
	nvErr   error  // why nv is nil
	dev     int32
	ctx     uintptr
	stream  uintptr
	name    string
	major   int
	minor   int
	memory  uint64
	version int32 // driver API version, e.g. 13000

	mod      *module // loaded at the first dispatch
	modErr   error   // a failed load, returned by every later Submit
	forcePTX bool    // switch cuda-embedded-ptx (BAGEL_CUDA_PTX=1): the embedded PTX even with NVRTC present

	counters backend.Counters
	closed   bool

	// useGraphs is the cuda-graph switch at load, and the driver has graphs.
	useGraphs bool
	// usePDL is the cuda-pdl switch at load (see dependentLaunch).
	usePDL bool
	graphs graphCache
	open   *encoder // the encoder with recorded, unlaunched dispatches
	timing gpuTiming
	reads  asyncReads // ReadAsync's page-locked slots (readasync_linux.go)
}

var _ backend.Device = (*Device)(nil)
var _ backend.Preparer = (*Device)(nil)

// New opens GPU ordinal (0 for the first), retains its primary context, makes it
// current on the calling OS thread and creates a stream. The caller's goroutine
// must be locked to its thread (runtime.LockOSThread) and make every later call.
// Without the driver the error contains "no CUDA driver"; without a GPU,
// "no CUDA device".
//
// BAGEL_CUDA_PTX=1 makes the device load the embedded PTX instead of compiling
// with NVRTC (to test the driver-only path on a machine that has NVRTC).
func New(ordinal int) (*Device, error) {
	drv, err := loadDriver()
	if err != nil {
		return nil, err
	}
	if err := drv.check(drv.cuInit(0), "cuInit", ""); err != nil {
		return nil, fmt.Errorf("%w (no CUDA device usable by the driver?)", err)
	}
	dev := &Device{drv: drv, forcePTX: switches.On(SwitchEmbeddedPTX)}
	dev.useGraphs = drv.graphs != nil && switches.On(SwitchGraph)
	dev.usePDL = switches.On(SwitchPDL)
	var count int32
	if err := drv.check(drv.cuDeviceGetCount(&count), "cuDeviceGetCount", ""); err != nil {
		return nil, err
	}
	if count == 0 {
		return nil, fmt.Errorf("cuda: no CUDA device")
	}
	if ordinal < 0 || ordinal >= int(count) {
		return nil, fmt.Errorf("cuda: device %d requested, %d present", ordinal, count)
	}
	steps := []struct {
		r    func() cuResult
		call string
	}{
		{func() cuResult { return drv.cuDriverGetVersion(&dev.version) }, "cuDriverGetVersion"},
		{func() cuResult { return drv.cuDeviceGet(&dev.dev, int32(ordinal)) }, "cuDeviceGet"},
		{func() cuResult { return dev.attribute(attrComputeCapabilityMajor, &dev.major) }, "cuDeviceGetAttribute(major)"},
		{func() cuResult { return dev.attribute(attrComputeCapabilityMinor, &dev.minor) }, "cuDeviceGetAttribute(minor)"},
		{func() cuResult { return drv.cuDeviceTotalMem(&dev.memory, dev.dev) }, "cuDeviceTotalMem"},
		{func() cuResult {
			var buf [256]byte
			r := drv.cuDeviceGetName(&buf[0], int32(len(buf)), dev.dev)
			dev.name = strings.TrimRight(string(buf[:]), "\x00")
			return r
		}, "cuDeviceGetName"},
		{func() cuResult { return drv.cuDevicePrimaryCtxRetain(&dev.ctx, dev.dev) }, "cuDevicePrimaryCtxRetain"},
		{func() cuResult { return drv.cuCtxSetCurrent(dev.ctx) }, "cuCtxSetCurrent"},
		{func() cuResult { return drv.cuStreamCreate(&dev.stream, 0) }, "cuStreamCreate"},
	}
	for _, s := range steps {
		if err := drv.check(s.r(), s.call, ""); err != nil {
			if dev.ctx != 0 {
				drv.cuDevicePrimaryCtxRelease(dev.dev)
			}
			return nil, err
		}
	}
	dev.nv, dev.nvErr = loadNVRTC()
	return dev, nil
}

func (d *Device) attribute(attr int32, out *int) cuResult {
	var v int32
	r := d.drv.cuDeviceGetAttribute(&v, attr, d.dev)
	*out = int(v)
	return r
}

// Name is the GPU's name, e.g. "NVIDIA H200".
func (d *Device) Name() string { return d.name }

// ComputeCapability is the GPU's (major, minor), e.g. (9, 0) on H100/H200.
func (d *Device) ComputeCapability() (major, minor int) { return d.major, d.minor }

// Describe is a one-line summary for logs: GPU, memory, capability, driver and
// how kernels are compiled.
func (d *Device) Describe() string {
	how := "embedded PTX (NVRTC not found)"
	switch {
	case d.forcePTX:
		how = "embedded PTX (BAGEL_CUDA_PTX=1)"
	case d.nv != nil:
		how = "NVRTC " + d.nv.Version() + " (" + d.nv.path + ")"
	}
	graphs := "CUDA graphs"
	switch {
	case d.drv.graphs == nil:
		graphs = "no CUDA graphs (" + d.drv.graphErr.Error() + ")"
	case !d.useGraphs:
		graphs = "CUDA graphs off (switch " + SwitchGraph + ")"
	case d.drv.graphs.cuGraphAddDependencies == nil || d.major < 9:
		graphs += " without dependent launch (needs sm_90 and CUDA 12.3)"
	case !d.usePDL:
		graphs += ", dependent launch off (switch " + SwitchPDL + ")"
	default:
		graphs += " with programmatic dependent launch"
	}
	return fmt.Sprintf("%s, %.1f GiB, sm_%d%d, driver API %d.%d, kernels: %s, %s",
		d.name, float64(d.memory)/(1<<30), d.major, d.minor, d.version/1000, d.version%1000/10, how, graphs)
}

// buffer is device memory: ptr is the CUdeviceptr of its first byte, alloc
// what cuMemAlloc returned (ptr, or up to 15 bytes before it: WrapHostAligned).
type buffer struct {
	dev   *Device
	ptr   uint64
	alloc uint64
	n     int
	freed bool
}

func (b *buffer) Len() int { return b.n }

// Alloc returns n zero bytes of device memory.
func (d *Device) Alloc(n int) (backend.Buffer, error) {
	if n < 0 {
		return nil, fmt.Errorf("cuda: alloc of %d bytes", n)
	}
	b := &buffer{dev: d, n: n}
	if n == 0 {
		return b, nil
	}
	if err := d.drv.check(d.drv.cuMemAlloc(&b.ptr, uint64(n)), "cuMemAlloc", ""); err != nil {
		return nil, fmt.Errorf("%w (%d bytes)", err, n)
	}
	if err := d.drv.check(d.drv.cuMemsetD8(b.ptr, 0, uint64(n)), "cuMemsetD8", ""); err != nil {
		d.drv.cuMemFree(b.ptr)
		return nil, err
	}
	b.alloc = b.ptr
	return b, nil
}

// WrapHost uploads data into new device memory (a discrete GPU cannot use the
// mmap'd file in place); data may be released afterwards.
func (d *Device) WrapHost(data []byte) (backend.Buffer, error) {
	b, err := d.Alloc(len(data))
	if err != nil {
		return nil, err
	}
	if err := d.Write(b, 0, data); err != nil {
		d.Free(b)
		return nil, err
	}
	return b, nil
}

// WrapHostAligned is WrapHost with the copy placed so that byte anchor of data
// starts a 16-byte boundary of device memory: the tensors of a checkpoint file
// that share the anchor's alignment can then be read in 16-byte pieces (the
// matrix-vector kernels' fast path), whatever the file's header length.
// cuMemAlloc memory is 256-byte aligned; the copy starts up to 15 bytes in.
func (d *Device) WrapHostAligned(data []byte, anchor int) (backend.Buffer, error) {
	shift := (16 - anchor%16) % 16
	b, err := d.Alloc(len(data) + shift)
	if err != nil {
		return nil, err
	}
	buf := b.(*buffer)
	buf.ptr += uint64(shift)
	buf.n = len(data)
	if err := d.Write(b, 0, data); err != nil {
		d.Free(b)
		return nil, err
	}
	return b, nil
}

// deviceBytes checks that n bytes at off lie inside b, a live buffer of d.
func (d *Device) deviceBytes(b backend.Buffer, off, n int) (*buffer, error) {
	buf, ok := b.(*buffer)
	switch {
	case !ok || buf == nil:
		return nil, fmt.Errorf("buffer %T is not a cuda buffer", b)
	case buf.dev != d:
		return nil, fmt.Errorf("buffer belongs to another device")
	case buf.freed:
		return nil, fmt.Errorf("buffer was freed")
	case off < 0 || n < 0 || off > buf.n || n > buf.n-off:
		return nil, fmt.Errorf("%d bytes at offset %d outside a buffer of %d", n, off, buf.n)
	}
	return buf, nil
}

// Write copies src into b at off. It is ordered after every launch made so far
// and returns when src may be reused. Up to asyncWriteMax bytes it does not
// wait for the stream: cuMemcpyHtoDAsync from pageable memory (Go's) stages
// the bytes before it returns and copies them in stream order, where
// cuMemcpyHtoD (the legacy stream) first waited for every launch before it, so
// a verify's token upload stood the GPU idle until its state snapshot had run
// (TestWriteTakesItsBytesAtOnce). Pinned memory would not be staged: the
// only pinned host memory here, the asynchronous reads' slots, is copied out
// and never written from. Larger writes (a cache restored from disk) keep the
// synchronous copy.
func (d *Device) Write(b backend.Buffer, off int, src []byte) error {
	buf, err := d.deviceBytes(b, off, len(src))
	if err != nil {
		return fmt.Errorf("cuda: write: %w", err)
	}
	if len(src) == 0 {
		return nil
	}
	if err := d.flushRecorded(); err != nil {
		return err
	}
	if len(src) <= asyncWriteMax {
		return d.drv.check(d.drv.cuMemcpyHtoDAsync(buf.ptr+uint64(off), unsafe.Pointer(&src[0]), uint64(len(src)), d.stream), "cuMemcpyHtoDAsync", "")
	}
	return d.drv.check(d.drv.cuMemcpyHtoD(buf.ptr+uint64(off), unsafe.Pointer(&src[0]), uint64(len(src))), "cuMemcpyHtoD", "")
}

// asyncWriteMax is the largest Write that does not wait for the stream.
const asyncWriteMax = 1 << 20

// Read waits for the stream, then copies from b at off into dst. A host sync.
func (d *Device) Read(b backend.Buffer, off int, dst []byte) error {
	buf, err := d.deviceBytes(b, off, len(dst))
	if err != nil {
		return fmt.Errorf("cuda: read: %w", err)
	}
	if err := d.Synchronize(); err != nil {
		return err
	}
	if len(dst) == 0 {
		return nil
	}
	return d.drv.check(d.drv.cuMemcpyDtoH(unsafe.Pointer(&dst[0]), buf.ptr+uint64(off), uint64(len(dst))), "cuMemcpyDtoH", "")
}

// Synchronize waits for all launched work; it counts as a host sync. A kernel
// that faulted reports here (CUDA errors of asynchronous work surface late).
func (d *Device) Synchronize() error {
	if err := d.flushRecorded(); err != nil {
		return err
	}
	d.counters.HostSyncs++
	if err := d.drv.check(d.drv.cuStreamSynchronize(d.stream), "cuStreamSynchronize", ""); err != nil {
		return err
	}
	d.readTiming()
	return nil
}

// Counters returns the running totals.
func (d *Device) Counters() backend.Counters { return d.counters }

// Free releases b's device memory (cuMemFree waits for work that may use it).
func (d *Device) Free(b backend.Buffer) {
	buf, ok := b.(*buffer)
	if !ok || buf == nil || buf.freed || buf.dev != d {
		return
	}
	_ = d.flushRecorded() // a recorded launch may use b; its error reports at the next Submit or Read
	if buf.alloc != 0 {
		d.drv.cuMemFree(buf.alloc)
	}
	buf.freed, buf.ptr, buf.alloc = true, 0, 0
}

// Close waits for the stream and releases the module, the stream and the context.
func (d *Device) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	d.open = nil // recorded, unsubmitted work is dropped with the device
	err := d.drv.check(d.drv.cuStreamSynchronize(d.stream), "cuStreamSynchronize", "")
	d.graphs.release(d)
	d.releaseTiming()
	d.releaseReads()
	if d.mod != nil {
		d.drv.cuModuleUnload(d.mod.handle)
	}
	d.drv.cuStreamDestroy(d.stream)
	d.drv.cuDevicePrimaryCtxRelease(d.dev)
	return err
}

// marshal lays out one 8-byte slot per argument in slots: a buffer becomes
// its CUdeviceptr plus offset, an int an int32, a float a float32
// (little-endian, in the slot's low bytes).
func (d *Device) marshal(kernel string, c kernels.Checked, args []backend.Arg, slots []uint64) {
	sig := c.Sig
	for i, a := range args {
		if a.Kind != backend.ArgBuffer {
			slots[i] = uint64(kernels.ScalarBits(a))
			continue
		}
		buf, err := d.deviceBytes(a.Buf, a.Off, 0)
		if err != nil {
			panic(fmt.Sprintf("cuda: %s: argument %d (%s): %v", kernel, i, sig.Params[i].Name, err))
		}
		slots[i] = buf.ptr + uint64(a.Off)
	}
}
