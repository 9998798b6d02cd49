package backend

import (
	"sort"
	"sync"
	"time"
)

// Options are what the engine passes to a backend it opens.
type Options struct {
	Threads int // CPU worker goroutines; 0: all cores. GPU backends ignore it.
}

// Opener opens one device of a backend. GPU openers fail with an error that says
// why (no driver, no device) when the machine lacks the hardware.
type Opener func(Options) (Device, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]Opener{}
)

// Register makes a backend available by name. Each backend package calls it from
// init, in the files built for the OS it runs on (cuda on linux, metal on darwin,
// cpu everywhere), as database/sql drivers do; the engine imports the packages for
// that side effect only. Registering a name twice is a programmer error.
func Register(name string, open Opener) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("backend: Register called twice for " + name)
	}
	registry[name] = open
}

// Lookup returns the opener of a registered backend.
func Lookup(name string) (Opener, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	open, ok := registry[name]
	return open, ok
}

// Registered lists the backends compiled into this binary, sorted.
func Registered() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// GPUTimer is an optional Device capability: the device time its completed work
// took, as the GPU measured it (Metal's GPUStartTime/GPUEndTime per command
// buffer). Devices that cannot measure it do not implement it.
type GPUTimer interface {
	TotalGPUTime() time.Duration
}

// GPUIdleTimer is an optional Device capability: how long, in total, its
// queue stood empty between measured units of work, the GPU waiting for the
// host. before is the gaps before a submit's first unit (the host reading a
// result, deciding and recording the next work); inside, the gaps between
// the units of one submit (CUDA: a graph segment launched after the one
// before it had finished, the host recording it too slowly). CUDA measures
// it with the events that time its units.
type GPUIdleTimer interface {
	GPUIdle() (before, inside time.Duration)
}

// AsyncReader is an optional Device capability: a read-back that waits only
// for the work submitted before it, not for work submitted after, so that
// greedy decode keeps the next step running on the device while the host
// takes the last step's token (engine's decode pipeline).
type AsyncReader interface {
	// ReadAsync queues a copy of n bytes of b at byte offset off behind the
	// work submitted so far and returns at once; the read's Wait returns the
	// bytes when that work is done. A few reads may be outstanding
	// (AsyncReadSlots); each is waited for at most once.
	ReadAsync(b Buffer, off, n int) (PendingRead, error)
}

// AtDispatchRunner is an optional Device capability: a device whose work
// runs as it is dispatched (the CPU reference), so nothing it does overlaps
// the host. A step launched ahead of the host's read there runs before the
// token it follows is handed on: the engine's decode pipeline would only
// hold each token back a step.
type AtDispatchRunner interface {
	RunsAtDispatch() bool
}

// PendingRead is a read-back under way (AsyncReader).
type PendingRead interface {
	// Wait blocks until the bytes are there and returns them (a host sync).
	Wait() ([]byte, error)
}

// AsyncReadSlots is how many reads an AsyncReader keeps outstanding at most:
// a newer read may reuse the memory of the one that many reads back.
const AsyncReadSlots = 4

// AsyncReadMax is the most bytes one ReadAsync takes.
const AsyncReadMax = 4096

// MatrixUnits is an optional Device capability: the prompt kernels that run
// only on matrix units with their tiles (attention_flash_bf16's tiled path:
// CUDA sm_80+ compiled at run time) run so here. The kernels compute the same
// elsewhere, one row at a time; the engine picks them where this says true.
type MatrixUnits interface {
	MatrixUnits() bool
}
