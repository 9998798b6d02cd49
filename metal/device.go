package metal

import (
	"fmt"
	"time"

	"bagel/backend"
	"bagel/metal/mtl"
	"bagel/switches"
)

// Device is the default Metal GPU with one command queue and the kernel library.
type Device struct {
	dev       mtl.Device
	queue     mtl.CommandQueue
	lib       mtl.Library
	msl       uint64 // the MSL version the library was compiled as
	pipelines map[string]pipeline
	name      string
	page      int // VM page size, bytes (16 KiB on Apple silicon)
	maxLen    int // maxBufferLength, bytes

	residency    mtl.ResidencySet // IsNil: no set (switched off or macOS < 15)
	residencyWhy string           // "on", or why not
	residencyNew bool             // allocations added or removed since the last commit

	maxInFlight int
	inFlight    []mtl.CommandBuffer // committed, owned, oldest first
	committed   int64               // command buffers committed so far
	completed   int64               // of those, completed (waited for or reaped)
	reads       asyncReads          // ReadAsync's slots (readasync.go)
	writes      stagedWrites        // Write's staging slots (write.go)
	open        *encoder            // the encoder whose recorded dispatches are not yet committed, or nil
	asyncErr    error               // the first failed command buffer not yet reported
	lastGPU     time.Duration       // GPU time of the last completed command buffer
	totalGPU    time.Duration

	live     map[*buffer]struct{} // released at Close if the caller did not
	counters backend.Counters
	closed   bool
}

// pipeline is one kernel's compute pipeline and its threadgroup limit.
type pipeline struct {
	state      mtl.ComputePipelineState
	maxThreads int
}

var (
	_ backend.Device   = (*Device)(nil)
	_ backend.GPUTimer = (*Device)(nil)
)

// New opens the default GPU, compiles the kernel library and creates the
// command queue and (when available and switched on) the residency set. It must
// be called on the goroutine that makes every later call, locked to its thread.
func New() (*Device, error) {
	if err := mtl.Load(); err != nil {
		return nil, err
	}
	maxCB, err := maxCommandBuffers()
	if err != nil {
		return nil, err
	}
	var d *Device
	mtl.WithPool(func() { d, err = open(maxCB) })
	return d, err
}

func open(maxCB int) (*Device, error) {
	dev := mtl.CreateSystemDefaultDevice()
	if dev.IsNil() {
		return nil, fmt.Errorf("metal: MTLCreateSystemDefaultDevice found no GPU")
	}
	d := &Device{
		dev:         dev,
		name:        dev.Name(),
		page:        mtl.PageSize(),
		maxLen:      int(dev.MaxBufferLength()),
		pipelines:   map[string]pipeline{},
		maxInFlight: maxCB,
		live:        map[*buffer]struct{}{},
	}
	var err error
	opts := mtl.NewCompileOptions()
	defer opts.Release()
	opts.SetLanguageVersion(languageVersion3_1)
	if d.msl = opts.LanguageVersion(); d.msl < languageVersion3_1 {
		dev.Release()
		return nil, fmt.Errorf("metal: the kernels need MSL 3.1 (macOS 14 or later); this system set %s", languageVersionString(d.msl))
	}
	if d.lib, err = dev.NewLibraryWithSource(librarySource(), opts); err != nil {
		dev.Release()
		return nil, err
	}
	d.queue = dev.NewCommandQueueWithMaxCommandBufferCount(maxCB)
	d.openResidencySet()
	return d, nil
}

// openResidencySet creates the residency set and attaches it to the queue. The
// switch is read here and only here.
func (d *Device) openResidencySet() {
	switch {
	case !switches.On(residencySwitch):
		d.residencyWhy = "off (switch residency-set)"
	case !d.dev.SupportsResidencySets():
		d.residencyWhy = "unsupported (macOS 15 or later)"
	default:
		set, err := d.dev.NewResidencySetWithDescriptor(256)
		if err != nil {
			d.residencyWhy = "failed: " + err.Error()
			return
		}
		d.residency, d.residencyWhy = set, "on"
		d.queue.AddResidencySet(set)
	}
}

// Name is the GPU's name, e.g. "Apple M3 Max".
func (d *Device) Name() string { return d.name }

// Describe is a one-line summary for logs and stats.
func (d *Device) Describe() string {
	return fmt.Sprintf("%s (Metal, MSL %s, working set %.1f GiB, max buffer %.1f GiB, page %d KiB, residency set %s, %d command buffers in flight)",
		d.name, languageVersionString(d.msl), float64(d.dev.RecommendedMaxWorkingSetSize())/(1<<30),
		float64(d.maxLen)/(1<<30), d.page>>10, d.residencyWhy, d.maxInFlight)
}

// LanguageVersion is the MSL version the kernels were compiled as ("3.1").
func (d *Device) LanguageVersion() string { return languageVersionString(d.msl) }

// ResidencySet reports whether the residency set is in use, and if not why.
func (d *Device) ResidencySet() (on bool, why string) { return !d.residency.IsNil(), d.residencyWhy }

// LastGPUTime is the GPU time (GPUEndTime − GPUStartTime) of the most recently
// completed command buffer; TotalGPUTime sums it over every completed one.
func (d *Device) LastGPUTime() time.Duration { return d.lastGPU }

// TotalGPUTime: see LastGPUTime.
func (d *Device) TotalGPUTime() time.Duration { return d.totalGPU }

// Counters returns the running totals.
func (d *Device) Counters() backend.Counters { return d.counters }

// Close waits for the GPU, then releases every buffer still live, the
// pipelines, the library, the residency set, the queue and the device.
func (d *Device) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	d.open = nil // recorded, uncommitted work is dropped with the device
	err := d.wait()
	for b := range d.live {
		d.Free(b)
	}
	mtl.WithPool(func() {
		for _, p := range d.pipelines {
			p.state.Release()
		}
		d.lib.Release()
		if !d.residency.IsNil() {
			d.residency.Release()
		}
		d.queue.Release()
		d.dev.Release()
	})
	return err
}
