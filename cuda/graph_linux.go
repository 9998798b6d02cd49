//go:build linux

package cuda

import (
	"fmt"
	"hash/maphash"
	"os"
	"runtime"
	"slices"
	"strconv"
	"unsafe"
)

// CUDA graphs. A decode step is the same sequence of launches every token (the
// same kernels, grids and threadgroups; only a few scalars such as the position
// and some scratch addresses change), so its host cost — one cuLaunchKernel per
// kernel, about a thousand per token — can be paid once: the second time a
// sequence is seen it becomes a graph (a chain of kernel nodes), and every later
// time the nodes whose arguments changed are updated in place and the graph is
// launched with one call. Short or never-repeated sequences (prefill chunks of
// odd lengths) are launched directly, as without graphs.

// graphMinLaunches is the shortest sequence worth a graph.
const graphMinLaunches = 8

// graphSegment is the most launches one graph holds. A longer unit of work is
// replayed as several graphs, launched as soon as each is recorded: the GPU
// runs one segment while the host records the next, as it overlaps with
// direct launches, instead of idling until the whole step is recorded. The
// segments of a decode step are the same every token, so each is one graph.
// Consecutive graphs are not joined by programmatic edges: the first kernel
// of a segment waits for the last of the one before to finish. With the
// decode pipeline the host records a step while the GPU runs the one before,
// so fewer, longer segments may pay: BAGEL_GRAPH_SEGMENT overrides it for an
// A/B run (8 to 4096; with BAGEL_GRAPH_FIRST_SEGMENT as large, a decode step
// of the 35B-A3B's 415 launches is one graph at 512).
var graphSegment = envInt("BAGEL_GRAPH_SEGMENT", 128, graphMinLaunches, 4096)

// graphFirstSegment is the most launches of an encoder's first segment; each
// later one may hold twice as many as the one before, up to graphSegment. A
// decode step starts after the host has read the previous token, with the GPU
// idle, and the host records a launch in about half the time the GPU runs one
// (H200: 3.6 against 7.3 µs): so the GPU waits only for the first, short
// segment, and each segment is recorded while the one before it runs (16, 32,
// 64, 128, 128, ...). BAGEL_GRAPH_FIRST_SEGMENT overrides it for an A/B run
// (1 to graphSegment; graphSegment gives equal segments).
var graphFirstSegment = envInt("BAGEL_GRAPH_FIRST_SEGMENT", 16, 1, graphSegment)

// segmentLimit is the most launches of an encoder's segment n (from 0).
func segmentLimit(n int) int {
	limit := graphFirstSegment
	for ; n > 0 && limit < graphSegment; n-- {
		limit *= 2
	}
	return min(limit, graphSegment)
}

// envInt is the integer in environment variable name, def when it is unset
// or outside lo..hi.
func envInt(name string, def, lo, hi int) int {
	v, err := strconv.Atoi(os.Getenv(name))
	if err != nil || v < lo || v > hi {
		return def
	}
	return v
}

// graphCacheSize bounds the graphs kept per device (the segments of a decode
// step at one context length, plus a few for prefill chunks and other shapes).
const graphCacheSize = 24

// graphCache maps a launch sequence's topology to its instantiated graph.
type graphCache struct {
	seed   maphash.Seed
	seen   map[uint64]int // topologies seen without a graph yet
	graphs map[uint64]*graph
	tick   uint64 // for evicting the least recently used graph
	failed error  // a graph that could not be built turns graphs off
}

// graph is one instantiated chain of kernel nodes and the arguments each node
// was last launched with.
type graph struct {
	handle, exec uintptr
	nodes        []uintptr
	launches     []launch
	used         uint64
}

// run launches seq: as a graph when its topology has been seen before, else
// one kernel at a time.
func (c *graphCache) run(d *Device, seq []launch) error {
	if c.failed != nil || len(seq) < graphMinLaunches {
		return launchAll(d, seq)
	}
	if c.graphs == nil {
		c.seed, c.seen, c.graphs = maphash.MakeSeed(), map[uint64]int{}, map[uint64]*graph{}
	}
	key := c.topology(seq)
	g, ok := c.graphs[key]
	if ok && !sameTopology(g.launches, seq) {
		return launchAll(d, seq) // a hash collision: never replay the wrong graph
	}
	if !ok {
		if c.seen[key] == 0 {
			if len(c.seen) > 1024 {
				clear(c.seen)
			}
			c.seen[key] = 1
			return launchAll(d, seq)
		}
		var err error
		if g, err = build(d, seq); err != nil {
			c.failed = err
			return launchAll(d, seq)
		}
		delete(c.seen, key)
		c.evict(d)
		c.graphs[key] = g
	}
	c.tick++
	g.used = c.tick
	if err := g.update(d, seq); err != nil {
		return err
	}
	if err := d.drv.check(d.drv.graphs.cuGraphLaunch(g.exec, d.stream), "cuGraphLaunch", ""); err != nil {
		return err
	}
	d.counters.GraphLaunches++
	return nil
}

// topology hashes what a graph fixes: each launch's function and geometry.
func (c *graphCache) topology(seq []launch) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	var b [8 * 7]byte
	for _, l := range seq {
		v := [7]uint64{uint64(l.fn), uint64(l.grid.X), uint64(l.grid.Y), uint64(l.grid.Z),
			uint64(l.group.X), uint64(l.group.Y), uint64(l.group.Z)}
		for i, x := range v {
			for j := range 8 {
				b[8*i+j] = byte(x >> (8 * j))
			}
		}
		h.Write(b[:])
	}
	return h.Sum64()
}

func sameTopology(a, b []launch) bool {
	return slices.EqualFunc(a, b, func(x, y launch) bool {
		return x.fn == y.fn && x.grid == y.grid && x.group == y.group && len(x.params) == len(y.params)
	})
}

// evict destroys the least recently used graph when the cache is full.
func (c *graphCache) evict(d *Device) {
	if len(c.graphs) < graphCacheSize {
		return
	}
	var oldest uint64
	var victim *graph
	for k, g := range c.graphs {
		if victim == nil || g.used < victim.used {
			oldest, victim = k, g
		}
	}
	victim.destroy(d)
	delete(c.graphs, oldest)
}

// release destroys every graph (the device is closing).
func (c *graphCache) release(d *Device) {
	for _, g := range c.graphs {
		g.destroy(d)
	}
	c.graphs = nil
}

// build makes a chain of kernel nodes for seq and instantiates it.
func build(d *Device, seq []launch) (*graph, error) {
	api := d.drv.graphs
	g := &graph{launches: make([]launch, len(seq)), nodes: make([]uintptr, len(seq))}
	if err := d.drv.check(api.cuGraphCreate(&g.handle, 0), "cuGraphCreate", ""); err != nil {
		return nil, err
	}
	pdl := d.dependentLaunch()
	for i, l := range seq {
		p, keep := nodeParams(l)
		var deps *uintptr
		n := uintptr(0)
		if i > 0 && !pdl {
			deps, n = &g.nodes[i-1], 1
		}
		r := api.cuGraphAddKernelNode(&g.nodes[i], g.handle, deps, n, p)
		runtime.KeepAlive(keep)
		if err := d.drv.check(r, "cuGraphAddKernelNode", l.kernel); err != nil {
			api.cuGraphDestroy(g.handle)
			return nil, err
		}
		if i > 0 && pdl {
			edge := programmaticEdge
			r := api.cuGraphAddDependencies(g.handle, &g.nodes[i-1], &g.nodes[i], &edge, 1)
			if err := d.drv.check(r, "cuGraphAddDependencies (programmatic)", l.kernel); err != nil {
				api.cuGraphDestroy(g.handle)
				return nil, err
			}
		}
		g.launches[i] = cloneLaunch(l)
	}
	if err := d.drv.check(api.cuGraphInstantiateWithFlags(&g.exec, g.handle, 0), "cuGraphInstantiateWithFlags", ""); err != nil {
		api.cuGraphDestroy(g.handle)
		return nil, fmt.Errorf("%w (%d kernels)", err, len(seq))
	}
	return g, nil
}

// dependentLaunch reports whether graphs join their kernels by programmatic
// edges (Hopper's programmatic dependent launch): the switch is on, the
// driver has the call, the GPU is sm_90 or later and the kernels were compiled
// for it (NVRTC or its cache), so that every kernel waits in GRID_WAIT; the
// embedded PTX targets compute_75, where GRID_WAIT is empty.
func (d *Device) dependentLaunch() bool {
	return d.usePDL && d.drv.graphs.cuGraphAddDependencies != nil && d.major >= 9 &&
		d.mod != nil && d.mod.origin != "embedded PTX"
}

// update sets the arguments of every node whose launch differs from the last.
func (g *graph) update(d *Device, seq []launch) error {
	for i, l := range seq {
		if slices.Equal(g.launches[i].params, l.params) {
			continue
		}
		p, keep := nodeParams(l)
		r := d.drv.graphs.cuGraphExecKernelNodeSetParams(g.exec, g.nodes[i], p)
		runtime.KeepAlive(keep)
		if err := d.drv.check(r, "cuGraphExecKernelNodeSetParams", l.kernel); err != nil {
			return err
		}
		copy(g.launches[i].params, l.params)
		d.counters.GraphNodeUpdates++
	}
	return nil
}

func (g *graph) destroy(d *Device) {
	d.drv.graphs.cuGraphExecDestroy(g.exec)
	d.drv.graphs.cuGraphDestroy(g.handle)
}

// nodeParams lays out a launch for the driver, which copies the argument
// values during the call; keep holds the Go memory the pointers refer to and
// must stay alive until then.
func nodeParams(l launch) (p *kernelNodeParams, keep []unsafe.Pointer) {
	keep = make([]unsafe.Pointer, len(l.params))
	for i := range l.params {
		keep[i] = unsafe.Pointer(&l.params[i])
	}
	return &kernelNodeParams{
		fn: l.fn, gridX: uint32(l.grid.X), gridY: uint32(l.grid.Y), gridZ: uint32(l.grid.Z),
		blockX: uint32(l.group.X), blockY: uint32(l.group.Y), blockZ: uint32(l.group.Z),
		params: unsafe.Pointer(&keep[0]),
	}, keep
}

func cloneLaunch(l launch) launch {
	l.params = slices.Clone(l.params)
	return l
}

// launchAll launches seq one kernel at a time.
func launchAll(d *Device, seq []launch) error {
	for _, l := range seq {
		if err := d.launchNow(l); err != nil {
			return err
		}
	}
	return nil
}
