package kernels

import (
	"fmt"
	"math"

	"bagel/backend"
)

// CheckArgs checks a dispatch's arguments against the kernel's signature — their
// count, and each one's kind. A mismatch panics with a message naming the
// backend, the kernel and the argument: by the backend contract it is a
// programmer error. It allocates nothing: it runs for every dispatch.
func CheckArgs(backendName, kernel string, sig Signature, args []backend.Arg) {
	if len(args) != len(sig.Params) {
		panic(fmt.Sprintf("%s: %s: %d arguments, want %d", backendName, kernel, len(args), len(sig.Params)))
	}
	for i, a := range args {
		p := sig.Params[i]
		want, what := backend.ArgInt, "an int32 scalar"
		switch {
		case p.Buffer:
			want, what = backend.ArgBuffer, "a buffer"
		case p.Type == "float":
			want, what = backend.ArgFloat, "an f32 scalar"
		}
		if a.Kind != want {
			panic(fmt.Sprintf("%s: %s: argument %d (%s): want %s, got argument kind %d", backendName, kernel, i, p.Name, what, a.Kind))
		}
	}
}

// ScalarBits is a scalar argument's 32 bits as both GPU backends pass it: an
// int32, or an f32's bit pattern (0 for a buffer).
func ScalarBits(a backend.Arg) uint32 {
	switch a.Kind {
	case backend.ArgFloat:
		return math.Float32bits(a.F32)
	case backend.ArgInt:
		return uint32(a.Int)
	}
	return 0
}

// Checked is one dispatch checked against its kernel's declaration: what every
// backend's Dispatch does before it touches the device.
type Checked struct {
	Sig         Signature
	Grid, Group backend.Dim3 // with a zero Y or Z read as 1 (a 1-D launch written as Dim3{X: n})
}

// Empty reports a grid with no threadgroups: such a dispatch launches nothing.
func (c Checked) Empty() bool { return c.Grid.X == 0 || c.Grid.Y == 0 || c.Grid.Z == 0 }

// maxGroupThreads is the most threads a threadgroup may have on both GPU
// backends (CUDA's block limit; Metal's per-pipeline limit is at most this and
// is checked by the Metal backend against the pipeline).
const maxGroupThreads = 1024

// Preflight checks a dispatch: the kernel exists, the arguments match its
// declaration (CheckArgs), and the threadgroup has 1..1024 threads. Each
// failure panics naming the backend and the kernel: by the backend contract it
// is a programmer error. The CPU backend, which ignores geometry, uses Lookup
// and CheckArgs alone.
func Preflight(backendName, kernel string, grid, group backend.Dim3, args []backend.Arg) Checked {
	sig := Lookup(backendName, kernel)
	CheckArgs(backendName, kernel, sig, args)
	c := Checked{Sig: sig, Grid: norm3(grid), Group: norm3(group)}
	if threads := c.Group.X * c.Group.Y * c.Group.Z; threads > maxGroupThreads || threads < 1 {
		panic(fmt.Sprintf("%s: %s: threadgroup %v has %d threads, want 1..%d", backendName, kernel, c.Group, threads, maxGroupThreads))
	}
	return c
}

// Lookup returns kernel's declaration; an unknown kernel panics naming the backend.
func Lookup(backendName, kernel string) Signature {
	sig, ok := Signatures()[kernel]
	if !ok {
		panic(fmt.Sprintf("%s: unknown kernel %q", backendName, kernel))
	}
	return sig
}

// norm3 treats a zero Y or Z as 1.
func norm3(v backend.Dim3) backend.Dim3 {
	if v.Y == 0 {
		v.Y = 1
	}
	if v.Z == 0 {
		v.Z = 1
	}
	return v
}
