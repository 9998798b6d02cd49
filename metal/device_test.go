package metal

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"bagel/backend"
	"bagel/cpu"
	"bagel/internal/gputest"
	"bagel/kernels"
	"bagel/metal/mtl"
	"bagel/switches"
)

// These tests run on a Mac against the GPU, and everywhere else (or on a Mac
// built with -tags metalsim) against the simulator, which they switch on.

// openOrSkip opens the default GPU on the test's goroutine, which the caller
// has locked to its OS thread. Without Metal the test is skipped with the
// reason, unless BAGEL_REQUIRE_GPU=1, where that is a failure.
func openOrSkip(t *testing.T) *Device {
	t.Helper()
	if mtl.Simulated {
		t.Setenv(mtl.SimulatorEnv, "1")
	}
	dev, err := New()
	if err != nil {
		if os.Getenv("BAGEL_REQUIRE_GPU") == "1" {
			t.Fatalf("BAGEL_REQUIRE_GPU=1 but: %v", err)
		}
		t.Skipf("skipping Metal test, no usable GPU: %v", err)
	}
	t.Cleanup(func() {
		if err := dev.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	t.Log(dev.Describe())
	return dev
}

// TestKernels runs every kernel case of gputest against the CPU reference.
func TestKernels(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	// The simulator runs each case twice on the CPU: the large shapes
	// (full vocabulary, all experts) would take minutes and show nothing new.
	gputest.Run(t, dev, gputest.Options{Small: mtl.Simulated})
	t.Logf("counters %+v, GPU time %v in all", dev.Counters(), dev.TotalGPUTime())
}

// TestLibraryLanguageVersion: the library was compiled as MSL 3.1 or newer.
func TestLibraryLanguageVersion(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	if dev.msl < languageVersion3_1 {
		t.Errorf("library compiled as MSL %s, want ≥ 3.1", dev.LanguageVersion())
	}
}

// TestCompileErrorCarriesLog compiles a broken source and expects the
// compiler's message (naming the undeclared identifier) in the error.
func TestCompileErrorCarriesLog(t *testing.T) {
	if mtl.Simulated {
		t.Skip("the simulator does not compile MSL")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	var err error
	mtl.WithPool(func() {
		opts := mtl.NewCompileOptions()
		defer opts.Release()
		opts.SetLanguageVersion(languageVersion3_1)
		var lib mtl.Library
		lib, err = dev.dev.NewLibraryWithSource("kernel void broken(device int *x [[buffer(0)]]) { x[0] = bagel_undeclared; }", opts)
		if err == nil {
			lib.Release()
		}
	})
	if err == nil || !strings.Contains(err.Error(), "bagel_undeclared") || !strings.Contains(err.Error(), "MTLLibraryErrorDomain") {
		t.Errorf("compile error %v: want the compiler log and the domain", err)
	}
}

// addBF16 runs add_bf16 over n elements of a and b (any buffers, at byte
// offsets) into a fresh buffer and returns its bytes.
func addBF16(t *testing.T, dev backend.Device, a backend.Buffer, aOff int, b backend.Buffer, bOff, n int) []byte {
	t.Helper()
	out, err := dev.Alloc(2 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(out)
	args := []backend.Arg{backend.Buf(a, aOff), backend.Buf(b, bOff), backend.Buf(out, 0), backend.Int(n)}
	grid, group := kernels.Launch("add_bf16", args)
	enc := dev.Encoder()
	enc.Dispatch("add_bf16", grid, group, args...)
	if err := enc.Submit(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 2*n)
	if err := dev.Read(out, 0, got); err != nil {
		t.Fatal(err)
	}
	return got
}

// mapFile writes n pseudo-random bf16-friendly bytes to a file and maps it
// read-only, as safetensors does.
func mapFile(t *testing.T, n int) []byte {
	t.Helper()
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*131 + i/7)
		if i%2 == 1 {
			data[i] = 0x3f + byte(i%3) // exponent of a bf16 near 1, never NaN
		}
	}
	path := filepath.Join(t.TempDir(), "weights.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, n, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(m) })
	return m
}

// checkNoCopy asserts that the GPU's view of byte off of b is the mapping's own
// address, and that a kernel reading the wrapped region agrees with the CPU.
func checkNoCopy(t *testing.T, dev *Device, b backend.Buffer, m []byte, offsets []int) {
	t.Helper()
	ref := cpu.New(1)
	rb, _ := ref.WrapHost(m)
	for _, off := range offsets {
		p, err := dev.Contents(b, off)
		if err != nil {
			t.Fatal(err)
		}
		if want := unsafe.Pointer(&m[off]); p != want {
			t.Errorf("offset %d: buffer contents at %p, mmap at %p: not a no-copy buffer", off, p, want)
		}
		const n = 1024
		if off+4*n > len(m) {
			continue
		}
		got := addBF16(t, dev, b, off, b, off+2*n, n)
		want := addBF16(t, ref, rb, off, rb, off+2*n, n)
		if !bytes.Equal(got, want) {
			t.Errorf("offset %d: add_bf16 over the wrapped file differs from the CPU", off)
		}
	}
}

// TestWrapHostNoCopy: a wrapped mmap is used in place, not copied.
func TestWrapHostNoCopy(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	m := mapFile(t, 3*dev.page+100) // a ragged end: the length is rounded up to the page
	b, err := dev.WrapHost(m)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(b)
	if n := len(b.(*buffer).mtl); n != 1 {
		t.Errorf("%d Metal buffers for %d bytes, want 1", n, len(m))
	}
	checkNoCopy(t, dev, b, m, []int{0, 2, 4096, dev.page, 3 * dev.page})
}

// TestWrapHostSplit lowers maxBufferLength to a few pages so the file is split
// into overlapping buffers, and checks addresses and kernels at offsets across
// the splits.
func TestWrapHostSplit(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	dev.maxLen = 4 * dev.page
	m := mapFile(t, 16*dev.page)
	b, err := dev.WrapHost(m)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(b)
	buf := b.(*buffer)
	if len(buf.mtl) < 4 {
		t.Fatalf("%d Metal buffers for 16 pages at 4 pages each, want a split", len(buf.mtl))
	}
	var offsets []int
	for off := 0; off < len(m); off += dev.page/2 + 2 {
		offsets = append(offsets, off)
	}
	checkNoCopy(t, dev, b, m, offsets)
}

// TestResidencySetOnOff runs the small kernel cases with the residency set on
// and off (BAGEL_NO_RESIDENCY_SET's switch); both must match the CPU.
func TestResidencySetOnOff(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer switches.Reset()
	for _, on := range []bool{true, false} {
		if err := switches.Set(residencySwitch, on); err != nil {
			t.Fatal(err)
		}
		dev := openOrSkip(t)
		got, why := dev.ResidencySet()
		t.Logf("switch %v: residency set %s", on, why)
		switch {
		case !on && got:
			t.Error("switch off but a residency set was made")
		case on && !got && !strings.HasPrefix(why, "unsupported"):
			t.Errorf("switch on, macOS supports sets, yet none: %s", why)
		}
		m := mapFile(t, 4*dev.page)
		b, err := dev.WrapHost(m)
		if err != nil {
			t.Fatal(err)
		}
		checkNoCopy(t, dev, b, m, []int{0, dev.page})
		dev.Free(b)
		gputest.Run(t, dev, gputest.Options{Small: true})
	}
}

// TestCommandBuffersInFlight: with BAGEL_MAX_COMMAND_BUFFERS=2, no more than
// two command buffers are ever in flight, each is counted, and each completed
// one's GPU time is recorded.
func TestCommandBuffersInFlight(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t.Setenv("BAGEL_MAX_COMMAND_BUFFERS", "2")
	dev := openOrSkip(t)
	const n = 1 << 16
	a, _ := dev.Alloc(2 * n)
	out, _ := dev.Alloc(2 * n)
	before := dev.Counters()
	for i := 0; i < 10; i++ {
		args := []backend.Arg{backend.Buf(a, 0), backend.Buf(a, 0), backend.Buf(out, 0), backend.Int(n)}
		grid, group := kernels.Launch("add_bf16", args)
		enc := dev.Encoder()
		enc.Dispatch("add_bf16", grid, group, args...)
		if err := enc.Submit(); err != nil {
			t.Fatal(err)
		}
		if len(dev.inFlight) > 2 {
			t.Fatalf("%d command buffers in flight, limit 2", len(dev.inFlight))
		}
	}
	if err := dev.Synchronize(); err != nil {
		t.Fatal(err)
	}
	c := dev.Counters()
	if c.CommandBuffers-before.CommandBuffers != 10 || c.Dispatches-before.Dispatches != 10 {
		t.Errorf("counters %+v after 10 single-dispatch submits (before %+v)", c, before)
	}
	if dev.LastGPUTime() <= 0 || dev.TotalGPUTime() < dev.LastGPUTime() {
		t.Errorf("GPU time last %v total %v, want > 0", dev.LastGPUTime(), dev.TotalGPUTime())
	}
}
