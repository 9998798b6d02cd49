package kernels

import (
	"fmt"
	"math"

	"bagel/backend"
)

// CheckArgs checks a dispatch's arguments against the kernel's signature — their
// count, and each one's kind — and returns each scalar's 32 bits (an int32, or an
// f32's bit pattern; 0 for buffers), as both GPU backends pass them. A mismatch
// panics with a message naming the backend, the kernel and the argument: by the
// backend contract it is a programmer error.
func CheckArgs(backendName, kernel string, sig Signature, args []backend.Arg) (scalarBits []uint32) {
	if len(args) != len(sig.Params) {
		panic(fmt.Sprintf("%s: %s: %d arguments, want %d", backendName, kernel, len(args), len(sig.Params)))
	}
	bits := make([]uint32, len(args))
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
			panic(fmt.Sprintf("%s: %s: argument %d (%s) wants %s", backendName, kernel, i, p.Name, what))
		}
		switch a.Kind {
		case backend.ArgFloat:
			bits[i] = math.Float32bits(a.F32)
		case backend.ArgInt:
			bits[i] = uint32(a.Int)
		}
	}
	return bits
}
