//go:build !darwin || metalsim

package mtl

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// The simulator's runtime: the switch that turns it on, the page it aligns
// to, reference counting of every simulated object and autorelease pools.
// Where Metal (or its validation layer) stops a program, or where a program's
// behaviour would be undefined, the simulator panics with a message starting
// "metal simulator:"; where Metal returns nil or an NSError, it does the same.

// Simulated is true: this build runs Metal's API on the simulator.
const Simulated = true

// Enabled reports whether BAGEL_METAL_SIM=1: the metal backend registers and
// opens only then, so a Linux binary keeps saying that Metal needs macOS.
func Enabled() bool { return os.Getenv(SimulatorEnv) == "1" }

// Load succeeds when the simulator is switched on and otherwise says why not.
func Load() error {
	switch {
	case Enabled():
		return nil
	case runtime.GOOS == "darwin":
		return errors.New("metal: this binary was built with the Metal simulator (tag metalsim); set BAGEL_METAL_SIM=1 to use it")
	}
	return errors.New("Metal is only available on macOS (BAGEL_METAL_SIM=1 runs the Metal simulator)")
}

// simPageSize is Apple silicon's VM page. The simulator requires it of
// newBufferWithBytesNoCopy whatever the host's page (4 KiB on most Linux
// machines), so the backend's rounding is exercised as on a Mac.
const simPageSize = 16 << 10

// PageSize is the page newBufferWithBytesNoCopy aligns to: 16 KiB.
func PageSize() int { return simPageSize }

// sim is the simulator's shared state. One mutex guards every reference
// count, command buffer status and pool: the host goroutine and each queue's
// GPU goroutine both touch them. Kernels run without it.
var sim struct {
	mu    sync.Mutex
	live  map[*object]struct{}
	pools [][]func() // autoreleased objects of each pool in place, innermost last
}

// epoch is time zero of GPUStartTime and GPUEndTime.
var epoch = time.Now()

func gpuClock() float64 { return time.Since(epoch).Seconds() }

// object is the reference count every simulated Metal object carries.
type object struct {
	kind string // "MTLBuffer", ...
	refs int    // 0: deallocated; any use is a use after release
}

// newObject starts an object at one reference (owned by the creator, or
// autoreleased). Callers hold sim.mu.
func newObject(kind string) object { return object{kind: kind, refs: 1} }

// track counts o as live; callers hold sim.mu.
func track(o *object) {
	if sim.live == nil {
		sim.live = map[*object]struct{}{}
	}
	sim.live[o] = struct{}{}
}

// use panics when o was released; callers hold sim.mu.
func (o *object) use(op string) {
	if o.refs <= 0 {
		panic(fmt.Sprintf("metal simulator: %s on a released %s", op, o.kind))
	}
}

// retain adds a reference; callers hold sim.mu.
func (o *object) retain() {
	o.use("retain")
	o.refs++
}

// release drops a reference and reports whether it was the last (the caller
// then frees what the object holds). Callers hold sim.mu.
func (o *object) release() (dealloc bool) {
	if o.refs <= 0 {
		panic(fmt.Sprintf("metal simulator: release of a %s already deallocated (over-release)", o.kind))
	}
	o.refs--
	if o.refs == 0 {
		delete(sim.live, o)
		return true
	}
	return false
}

// autorelease hands one reference to the innermost pool, which calls release
// when it drains. Without a pool Cocoa leaks the object; here that panics.
// Callers hold sim.mu.
func autorelease(kind string, release func()) {
	needPool(kind)
	top := len(sim.pools) - 1
	sim.pools[top] = append(sim.pools[top], release)
}

// needPool panics when no pool is in place; a method that returns an
// autoreleased object calls it before making the object. Callers hold sim.mu.
func needPool(kind string) {
	if len(sim.pools) == 0 {
		panic(fmt.Sprintf("metal simulator: %s autoreleased with no pool in place (it would leak): call inside WithPool", kind))
	}
}

// WithPool runs f inside an autorelease pool: objects autoreleased by f are
// released when it returns, unless retained.
func WithPool(f func()) {
	sim.mu.Lock()
	sim.pools = append(sim.pools, nil)
	depth := len(sim.pools)
	sim.mu.Unlock()
	defer func() {
		sim.mu.Lock()
		if len(sim.pools) != depth {
			sim.mu.Unlock()
			panic("metal simulator: autorelease pools popped out of order")
		}
		drain := sim.pools[depth-1]
		sim.pools = sim.pools[:depth-1]
		sim.mu.Unlock()
		for _, release := range drain {
			release()
		}
	}()
	f()
}

// LiveObjects counts the simulated objects not yet deallocated, by kind
// ("MTLBuffer 2, MTLDevice 1"; "" when none). A balanced program returns to
// the count it started from once it has released everything it made.
func LiveObjects() string {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	counts := map[string]int{}
	for o := range sim.live {
		counts[o.kind]++
	}
	var parts []string
	for kind, n := range counts {
		parts = append(parts, fmt.Sprintf("%s %d", kind, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
