package gputest

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"bagel/backend"
	"bagel/cpu"
	"bagel/kernels"
)

// TestEveryKernelIsCovered fails when a kernel of the CPU reference has no GPU
// kernel in kernels/ or no case here: a kernel may not be added without a test.
func TestEveryKernelIsCovered(t *testing.T) {
	gpu := kernels.Names()
	tested := map[string]int{}
	for _, s := range Specs() {
		tested[s.Kernel]++
	}
	for _, name := range cpu.Kernels() {
		if !slices.Contains(gpu, name) {
			t.Errorf("%s: in cpu.Kernels() but no KERNEL in kernels/*.metal", name)
		}
		if tested[name] == 0 {
			t.Errorf("%s: in cpu.Kernels() but gputest has no case for it", name)
		}
	}
	for name := range tested {
		if !slices.Contains(cpu.Kernels(), name) {
			t.Errorf("%s: gputest has cases for a kernel the CPU reference lacks", name)
		}
	}
}

// TestHarnessAgainstCPU holds the harness itself to account, with the CPU
// reference as the device under test in two ways:
//   - single-threaded against the reference's multi-threaded run: every case
//     must agree exactly, so the reference's split over goroutines never changes
//     a result (the GPU kernels are compared with one fixed reference);
//   - a device that drops every dispatch: every case must fail, so each one
//     has an output the harness compares and poisoning shows an unwritten output.
func TestHarnessAgainstCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	ref := cpu.New(0)
	for _, r := range Run(t, cpu.New(1), Options{Small: true}) {
		if r.Err != 0 {
			t.Errorf("%s [%s]: one thread against %s differs: %g", r.Kernel, r.Shape, ref.Name(), r.Err)
		}
	}
	lazy := dropDispatches{cpu.New(1)}
	for _, spec := range Specs() {
		if spec.Large {
			continue
		}
		c := spec.Make(newRand(spec.Kernel, spec.Label))
		if identity(t, ref, c) {
			continue // e.g. RoPE at position 0: nothing to tell apart
		}
		if r := compare(lazy, ref, c); r.Pass {
			t.Errorf("%s [%s]: passes with no dispatch at all (%s)", r.Kernel, r.Shape, r.Note)
		}
	}
}

// identity reports a case whose every output is an in/out buffer the kernel
// leaves as it was.
func identity(t *testing.T, ref backend.Device, c *Case) bool {
	outs, err := execute(ref, c)
	if err != nil {
		t.Fatalf("%s [%s]: %v", c.Kernel, c.Shape, err)
	}
	for i, b := range c.Buffers {
		if b.Out && (b.Data == nil || !bytes.Equal(outs[i], b.Data)) {
			return false
		}
	}
	return true
}

// dropDispatches is a device whose encoders record nothing.
type dropDispatches struct{ backend.Device }

func (d dropDispatches) Encoder() backend.Encoder { return dropEncoder{} }

type dropEncoder struct{}

func (dropEncoder) Dispatch(string, backend.Dim3, backend.Dim3, ...backend.Arg) {}
func (dropEncoder) Submit() error                                               { return nil }

// TestRelErr pins the comparison: relative to the whole reference, equal
// infinities add nothing, and a NaN never passes.
func TestRelErr(t *testing.T) {
	inf := math.Inf(-1)
	for _, c := range []struct {
		got, want []float64
		err       float64
	}{
		{[]float64{1, 2, 3, 4}, []float64{1, 2, 3, 4}, 0},
		{[]float64{1, 2, 3, 5}, []float64{1, 2, 3, 4}, 1 / math.Sqrt(30)},
		{[]float64{1, inf}, []float64{1, inf}, 0},
		{[]float64{0.5}, []float64{0}, 0.5},
	} {
		if got := relErr(c.got, c.want); math.Abs(got-c.err) > 1e-12 {
			t.Errorf("relErr(%v, %v) = %v, want %v", c.got, c.want, got, c.err)
		}
	}
	if got := relErr([]float64{math.NaN(), 1}, []float64{1, 1}); !math.IsNaN(got) {
		t.Errorf("a NaN gives %v", got)
	}
}

// TestWithinOneBF16Step pins the floor for small bf16 outputs: a
// neighbouring bf16 value passes, two steps, a sign change or a non-finite
// value do not.
func TestWithinOneBF16Step(t *testing.T) {
	bf := func(v ...uint16) []byte {
		b := make([]byte, 2*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint16(b[2*i:], x)
		}
		return b
	}
	for _, c := range []struct {
		got, want []uint16
		ok        bool
	}{
		{[]uint16{0x3f80, 0x4000}, []uint16{0x3f80, 0x4000}, true}, // equal
		{[]uint16{0x3f81}, []uint16{0x3f80}, true},                 // 1 + 2^-7 against 1
		{[]uint16{0x3f7f}, []uint16{0x3f80}, true},                 // across the exponent
		{[]uint16{0xbf81, 0x4000}, []uint16{0xbf80, 0x4000}, true}, // negative
		{[]uint16{0x8000}, []uint16{0x0000}, true},                 // −0 and +0
		{[]uint16{0x3f82}, []uint16{0x3f80}, false},                // two steps
		{[]uint16{0x8001}, []uint16{0x0001}, false},                // sign
		{[]uint16{0x7f80}, []uint16{0x7f7f}, false},                // ∞ beside the largest
		{[]uint16{0x7fc0}, []uint16{0x7fc0}, false},                // NaN
	} {
		if got := withinOneBF16Step(bf(c.got...), bf(c.want...)); got != c.ok {
			t.Errorf("withinOneBF16Step(%#x, %#x) = %v, want %v", c.got, c.want, got, c.ok)
		}
	}
}

// TestTokenInvarianceOnCPU runs the invariance check on the reference, which
// computes each token alone: the harness's slicing of tokens and outputs must
// line up for it to pass.
func TestTokenInvarianceOnCPU(t *testing.T) {
	TokenInvariance(t, cpu.New(0), "qmatmul_mma_bf16", [][5]int{{5, 192, 37, 4, 64}, {17, 128, 20, 4, 128}})
	TokenInvariance(t, cpu.New(0), "qmatmul_mma_bf16_f32", [][5]int{{3, 256, 50, 4, 64}})
	MoEUpInvariance(t, cpu.New(0), "moe_up_mma_bf16", [][8]int{{5, 3, 4, 128, 17, 40, 4, 64}})
	MoEDownInvariance(t, cpu.New(0), "moe_down_mma_bf16", [][8]int{{5, 3, 4, 40, 128, 128, 64, 128}})
	MultiConvInvariance(t, cpu.New(0), [][6]int{{5, 128, 4, 40, 16, 3}})
}
