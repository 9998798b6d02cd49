//go:build linux

package cuda

import (
	"slices"
	"testing"
	"unsafe"

	"bagel/backend"
	"bagel/kernels"
)

// stubDevice is a Device whose driver calls do nothing and succeed (handles
// count up), with graphs on: the host's own share of recording, updating and
// launching, without a GPU.
func stubDevice() *Device {
	next := uintptr(0)
	handle := func(p *uintptr) cuResult { next++; *p = next; return 0 }
	var ptr uint64 = 1 << 40
	drv := &driver{
		cuMemAlloc:          func(p *uint64, n uint64) cuResult { *p = ptr; ptr += (n + 255) &^ 255; return 0 },
		cuMemsetD8:          func(uint64, uint8, uint64) cuResult { return 0 },
		cuModuleGetFunction: func(fn *uintptr, _ uintptr, _ string) cuResult { return handle(fn) },
		cuLaunchKernel: func(uintptr, uint32, uint32, uint32, uint32, uint32, uint32, uint32, uintptr, unsafe.Pointer, unsafe.Pointer) cuResult {
			return 0
		},
		cuEventCreate:       func(ev *uintptr, _ uint32) cuResult { return handle(ev) },
		cuEventRecord:       func(uintptr, uintptr) cuResult { return 0 },
		cuEventElapsedTime:  func(ms *float32, _, _ uintptr) cuResult { *ms = 0.01; return 0 },
		cuStreamSynchronize: func(uintptr) cuResult { return 0 },
		graphs: &graphAPI{
			cuGraphCreate: func(g *uintptr, _ uint32) cuResult { return handle(g) },
			cuGraphAddKernelNode: func(n *uintptr, _ uintptr, _ *uintptr, _ uintptr, _ *kernelNodeParams) cuResult {
				return handle(n)
			},
			cuGraphInstantiateWithFlags:    func(e *uintptr, _ uintptr, _ uint64) cuResult { return handle(e) },
			cuGraphExecKernelNodeSetParams: func(uintptr, uintptr, *kernelNodeParams) cuResult { return 0 },
			cuGraphLaunch:                  func(uintptr, uintptr) cuResult { return 0 },
		},
	}
	return &Device{drv: drv, useGraphs: true, major: 9, mod: &module{funcs: map[string]uintptr{}, handle: 1, origin: "stub"}}
}

// BenchmarkEncoderHost is the CUDA encoder's host work a launch (checks,
// argument slots, recording, the graph's topology and node updates, its
// launch) over a decode-like sequence: 416 launches a submit with every
// kernel's real signature in turn, a position argument changing each submit.
// The driver is a stub, so what it reports is Bagel's share alone; the
// driver's (cuGraphExecKernelNodeSetParams, cuGraphLaunch) comes on top.
func BenchmarkEncoderHost(b *testing.B) {
	d := stubDevice()
	buf, err := d.Alloc(1 << 20)
	if err != nil {
		b.Fatal(err)
	}
	sigs := kernels.Signatures()
	var names []string
	for name := range sigs {
		names = append(names, name)
	}
	const launches = 416
	type call struct {
		kernel string
		args   []backend.Arg
	}
	seq := make([]call, launches)
	for i := range seq {
		name := names[i%len(names)]
		var args []backend.Arg
		for j, p := range sigs[name].Params {
			switch {
			case p.Buffer:
				args = append(args, backend.Buf(buf, 256*j))
			case p.Type == "float":
				args = append(args, backend.Float(1))
			default:
				args = append(args, backend.Int(1))
			}
		}
		seq[i] = call{name, args}
	}
	grid, group := backend.Dim3{X: 64, Y: 1, Z: 1}, backend.Dim3{X: 128, Y: 1, Z: 1}
	b.ReportAllocs()
	step := 0
	for b.Loop() {
		step++
		enc := d.Encoder()
		for i, c := range seq {
			if i%13 == 0 { // a position, as attention and the caches take
				for j, a := range c.args {
					if a.Kind == backend.ArgInt {
						c.args[j] = backend.Int(step)
						break
					}
				}
			}
			enc.Dispatch(c.kernel, grid, group, c.args...)
		}
		if err := enc.Submit(); err != nil {
			b.Fatal(err)
		}
		if err := d.Synchronize(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*launches), "ns/launch")
}

// TestGraphNodeUpdatesCounted: replaying a recorded sequence updates, and
// counts, only the nodes whose arguments changed since their last launch
// (on the stub driver: no GPU needed).
func TestGraphNodeUpdatesCounted(t *testing.T) {
	d := stubDevice()
	buf, err := d.Alloc(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	submit := func(offsets []int) {
		enc := d.Encoder()
		for _, off := range offsets {
			args := []backend.Arg{backend.Buf(buf, off), backend.Buf(buf, 0), backend.Buf(buf, 0), backend.Int(64)}
			enc.Dispatch("add_bf16", backend.Dim3{X: 1}, backend.Dim3{X: 64}, args...)
		}
		if err := enc.Submit(); err != nil {
			t.Fatal(err)
		}
	}
	same := []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	submit(same) // seen: launched directly
	submit(same) // the graph is built
	submit(same) // replayed unchanged
	if c := d.Counters(); c.GraphLaunches != 2 || c.GraphNodeUpdates != 0 {
		t.Fatalf("%d graph launches, %d node updates: want 2 and 0", c.GraphLaunches, c.GraphNodeUpdates)
	}
	submit([]int{0, 256, 0, 0, 512, 0, 0, 0, 0, 768})
	if u := d.Counters().GraphNodeUpdates; u != 3 {
		t.Errorf("%d node updates after 3 launches changed, want 3", u)
	}
}

// TestRecordedArgumentsReachTheDriver: with the argument slots reused
// between segments and submits, every launch still reaches the driver with
// its own arguments: a direct launch's, a built graph node's and an updated
// node's (on the stub driver, which keeps what it is given).
func TestRecordedArgumentsReachTheDriver(t *testing.T) {
	d := stubDevice()
	buf, err := d.Alloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := d.deviceBytes(buf, 0, 0)
	nodeArg := map[uintptr]uint64{} // node: its first argument as last set
	var direct []uint64
	first := func(params unsafe.Pointer) uint64 { return **(**uint64)(params) }
	d.drv.cuLaunchKernel = func(_ uintptr, _, _, _, _, _, _, _ uint32, _ uintptr, params, _ unsafe.Pointer) cuResult {
		direct = append(direct, first(params))
		return 0
	}
	next := uintptr(1000)
	d.drv.graphs.cuGraphAddKernelNode = func(n *uintptr, _ uintptr, _ *uintptr, _ uintptr, p *kernelNodeParams) cuResult {
		next++
		*n = next
		nodeArg[next] = first(p.params)
		return 0
	}
	var nodes []uintptr // in launch order, the graphs' nodes built so far
	d.drv.graphs.cuGraphExecKernelNodeSetParams = func(_, node uintptr, p *kernelNodeParams) cuResult {
		nodeArg[node] = first(p.params)
		return 0
	}
	n := 3*graphFirstSegment + graphMinLaunches + 1 // several segments, the last partly full (but a graph)
	submit := func(shift int) {
		enc := d.Encoder()
		for i := range n {
			args := []backend.Arg{backend.Buf(buf, 256*(i+shift)), backend.Buf(buf, 0), backend.Buf(buf, 0), backend.Int(64)}
			enc.Dispatch("add_bf16", backend.Dim3{X: 1}, backend.Dim3{X: 64}, args...)
		}
		if err := enc.Submit(); err != nil {
			t.Fatal(err)
		}
	}
	want := func(shift int) []uint64 {
		var w []uint64
		for i := range n {
			w = append(w, base.ptr+uint64(256*(i+shift)))
		}
		return w
	}
	submit(0) // first sight: direct launches
	if !slices.Equal(direct, want(0)) {
		t.Fatalf("direct launches' first arguments %v, want %v", direct, want(0))
	}
	submit(0) // the graphs are built, one a segment, in order
	for node := uintptr(1001); node <= next; node++ {
		nodes = append(nodes, node)
	}
	got := func() []uint64 {
		var g []uint64
		for _, node := range nodes {
			g = append(g, nodeArg[node])
		}
		return g
	}
	if !slices.Equal(got(), want(0)) {
		t.Fatalf("built nodes' first arguments %v, want %v", got(), want(0))
	}
	submit(7) // every node updated
	if !slices.Equal(got(), want(7)) {
		t.Fatalf("updated nodes' first arguments %v, want %v", got(), want(7))
	}
}
