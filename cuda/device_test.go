//go:build linux

package cuda

import (
	"bytes"
	"os"
	"runtime"
	"strings"
	"testing"

	"bagel/backend"
	"bagel/internal/gputest"
	"bagel/kernels"
)

// openOrSkip opens GPU 0 on the test's goroutine, which the caller has locked to
// its OS thread. Without a driver or GPU the test is skipped with the reason,
// unless BAGEL_REQUIRE_GPU=1 (make gpu-test), where that is a failure.
func openOrSkip(t *testing.T) *Device {
	t.Helper()
	dev, err := New(0)
	if err != nil {
		if os.Getenv("BAGEL_REQUIRE_GPU") == "1" {
			t.Fatalf("BAGEL_REQUIRE_GPU=1 but: %v", err)
		}
		t.Skipf("skipping CUDA test, no usable GPU: %v", err)
	}
	t.Cleanup(func() { dev.Close() })
	t.Log(dev.Describe())
	return dev
}

// TestNoDriverError checks the error the engine keys its CPU fallback on.
func TestNoDriverError(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev, err := New(0)
	if err == nil {
		dev.Close()
		t.Skip("a CUDA GPU is present")
	}
	if !strings.Contains(err.Error(), "no CUDA") && !strings.Contains(err.Error(), "cuInit") {
		t.Errorf("error %q names neither a missing driver nor a missing device", err)
	}
}

// TestKernels runs every kernel case of gputest against the CPU reference.
func TestKernels(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	gputest.Run(t, dev, gputest.Options{})
	t.Logf("kernels loaded from: %s; counters %+v", dev.ModuleOrigin(), dev.Counters())
}

// TestTiledGEMVTokenInvariance: the matrix-unit GEMVs give a token the same
// bits alone as beside others (a verify against a decode step), on the shapes
// of the 35B-A3B's output projections and logits and on ragged ones.
func TestTiledGEMVTokenInvariance(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	shapes := [][5]int{{5, 4096, 2048, 4, 64}, {9, 512, 2048, 4, 64}, {17, 2048, 37, 4, 128}, {3, 192, 100, 4, 64}}
	gputest.TokenInvariance(t, dev, "qmatmul_mma_bf16", shapes)
	gputest.TokenInvariance(t, dev, "qmatmul_mma_bf16_f32", [][5]int{{5, 2048, 4000, 4, 64}})
}

// TestSplitAttentionTokenInvariance: split-KV attention gives a verify's
// query the bits of a launch of it alone at its position (its decode step),
// on the plain and the matrix-unit split kernels.
func TestSplitAttentionTokenInvariance(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	for _, kernel := range []string{"attention_split_f32", "attention_split_mma_f32"} {
		gputest.SplitAttentionInvariance(t, dev, kernel, gputest.SplitInvarianceShapes)
	}
}

// TestTiledExpertsTokenInvariance: the matrix-unit experts (up and down) give
// a token the same bits alone as beside others that share its experts or not
// (a verify against a decode step), on the 35B-A3B's shapes and ragged ones.
func TestTiledExpertsTokenInvariance(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	gputest.MoEUpInvariance(t, dev, "moe_up_mma_bf16", [][8]int{{5, 8, 12, 2048, 512, 512, 4, 64},
		{5, 8, 256, 2048, 512, 512, 4, 64}, {16, 8, 9, 2048, 512, 512, 4, 64}, {17, 2, 2, 128, 17, 40, 4, 64},
		{3, 3, 4, 256, 20, 9, 4, 128}})
	gputest.MoEDownInvariance(t, dev, "moe_down_mma_bf16", [][8]int{{5, 8, 12, 2048, 512, 512, 64, 64},
		{5, 8, 256, 2048, 512, 512, 64, 64}, {16, 8, 9, 2048, 512, 512, 64, 64}, {16, 3, 3, 40, 128, 192, 128, 64}})
}

// TestWarpExpertsMatchPlain: moe_down_warp_bf16 gives moe_down_bf16's bits
// (a batch's replies their lone steps'), on the 35B-A3B's shapes and ragged
// ones: halves of no rows, rows of several pieces a lane, 8-bit codes.
func TestWarpExpertsMatchPlain(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	gputest.MoEDownMatches(t, dev, "moe_down_warp_bf16", [][10]int{{8, 8, 256, 2048, 512, 512, 4, 64, 4, 64},
		{1, 8, 256, 2048, 512, 512, 4, 64, 4, 64}, {3, 3, 5, 13, 64, 96, 4, 32, 8, 32}, {2, 3, 5, 11, 1024, 96, 4, 128, 4, 32},
		{5, 2, 4, 20, 32, 512, 8, 32, 4, 64}, {2, 2, 3, 9, 96, 64, 8, 32, 4, 32}})
}

// TestTiledMultiConvTokenInvariance: the matrix units' GDN in-projection and
// conv over a verify's tokens gives each token a decode step's bits, and the
// window the steps' (the 35B-A3B's shapes and ragged ones).
func TestTiledMultiConvTokenInvariance(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	gputest.MultiConvInvariance(t, dev, [][6]int{{5, 2048, 4, 8192, 4096, 32}, {16, 2048, 4, 8192, 4096, 32}, {3, 256, 3, 40, 17, 5}})
}

// TestKernelsEmbeddedPTX runs the small cases with the kernels JIT-compiled from
// the embedded PTX, the path of a machine with the driver but no NVRTC.
func TestKernelsEmbeddedPTX(t *testing.T) {
	if EmbeddedPTXHash() != kernels.SourceHash() {
		t.Skip("embedded PTX is stale (TestEmbeddedPTXIsCurrent reports it)")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t.Setenv("BAGEL_CUDA_PTX", "1")
	dev := openOrSkip(t)
	gputest.Run(t, dev, gputest.Options{Small: true})
	if got := dev.ModuleOrigin(); got != "embedded PTX" {
		t.Errorf("kernels loaded from %q, want the embedded PTX", got)
	}
}

// TestCompileCache checks that a second device finds the cubin the first wrote.
func TestCompileCache(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for i, want := range []string{"", "cubin cache"} {
		dev := openOrSkip(t)
		if err := smallAdd(dev); err != nil {
			t.Fatal(err)
		}
		if got := dev.ModuleOrigin(); want != "" && got != want {
			t.Errorf("device %d loaded kernels from %q, want %q", i, got, want)
		}
		dev.Close()
	}
}

// smallAdd runs add_bf16 on two short vectors and checks the sum.
func smallAdd(dev *Device) error {
	a, _ := dev.Alloc(8)
	b, _ := dev.Alloc(8)
	out, _ := dev.Alloc(8)
	one := []byte{0x80, 0x3f, 0x80, 0x3f, 0x80, 0x3f, 0x80, 0x3f} // four bf16 1.0
	dev.Write(a, 0, one)
	dev.Write(b, 0, one)
	args := []backend.Arg{backend.Buf(a, 0), backend.Buf(b, 0), backend.Buf(out, 0), backend.Int(4)}
	grid, group := kernels.Launch("add_bf16", args)
	enc := dev.Encoder()
	enc.Dispatch("add_bf16", grid, group, args...)
	if err := enc.Submit(); err != nil {
		return err
	}
	got := make([]byte, 8)
	if err := dev.Read(out, 0, got); err != nil {
		return err
	}
	if want := []byte{0, 0x40, 0, 0x40, 0, 0x40, 0, 0x40}; !bytes.Equal(got, want) {
		return &mismatchError{got, want}
	}
	return nil
}

type mismatchError struct{ got, want []byte }

func (e *mismatchError) Error() string { return "add_bf16: wrong sum" }

// TestDevice covers memory, ordering, counters and the programmer-error panics.
func TestDevice(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)

	// Alloc is zero-filled; Write and Read honour offsets.
	buf, err := dev.Alloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 16)
	if err := dev.Read(buf, 1000, got); err != nil || !bytes.Equal(got, make([]byte, 16)) {
		t.Fatalf("fresh buffer reads %v, %v; want zeros", got, err)
	}
	if err := dev.Write(buf, 3, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := dev.Read(buf, 2, got[:7]); err != nil || string(got[:7]) != "\x00hello\x00" {
		t.Fatalf("read back %q, %v", got[:7], err)
	}
	if err := dev.Read(buf, 1<<20-2, got[:4]); err == nil {
		t.Error("read past the end succeeded")
	}

	// A dependent chain of dispatches in one encoder runs in order:
	// out = ((1+1)+1)+1 = 4, counted as 3 dispatches and 1 command buffer.
	before := dev.Counters()
	a, _ := dev.Alloc(2)
	one, _ := dev.Alloc(2)
	dev.Write(a, 0, []byte{0x80, 0x3f})
	dev.Write(one, 0, []byte{0x80, 0x3f})
	enc := dev.Encoder()
	for range 3 {
		args := []backend.Arg{backend.Buf(a, 0), backend.Buf(one, 0), backend.Buf(a, 0), backend.Int(1)}
		grid, group := kernels.Launch("add_bf16", args)
		enc.Dispatch("add_bf16", grid, group, args...)
	}
	if err := enc.Submit(); err != nil {
		t.Fatal(err)
	}
	if err := dev.Read(a, 0, got[:2]); err != nil || got[0] != 0x80 || got[1] != 0x40 {
		t.Errorf("chained adds give % x, %v; want 4.0 (80 40)", got[:2], err)
	}
	c := dev.Counters()
	if c.Dispatches-before.Dispatches != 3 || c.CommandBuffers-before.CommandBuffers != 1 || c.HostSyncs-before.HostSyncs != 1 {
		t.Errorf("counters moved by %+v → %+v, want 3 dispatches, 1 command buffer, 1 host sync", before, c)
	}

	// Programmer errors panic in Dispatch.
	for name, call := range map[string]func(){
		"unknown kernel": func() { dev.Encoder().Dispatch("no_such_kernel", backend.Dim3{X: 1}, backend.Dim3{X: 1}) },
		"wrong count":    func() { dev.Encoder().Dispatch("add_bf16", backend.Dim3{X: 1}, backend.Dim3{X: 32}, backend.Int(1)) },
		"wrong kind": func() {
			dev.Encoder().Dispatch("add_bf16", backend.Dim3{X: 1}, backend.Dim3{X: 32},
				backend.Int(1), backend.Buf(a, 0), backend.Buf(a, 0), backend.Int(1))
		},
		"huge group": func() {
			dev.Encoder().Dispatch("add_bf16", backend.Dim3{X: 1}, backend.Dim3{X: 2048},
				backend.Buf(a, 0), backend.Buf(a, 0), backend.Buf(a, 0), backend.Int(1))
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Dispatch did not panic", name)
				}
			}()
			call()
		}()
	}

	dev.Free(buf)
	if err := dev.Write(buf, 0, []byte{1}); err == nil {
		t.Error("write to a freed buffer succeeded")
	}
}

// TestWrapHostAligned: the anchor byte lands on a 16-byte boundary and the
// bytes read back as written, for every anchor residue.
func TestWrapHostAligned(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for anchor := 0; anchor < 32; anchor += 3 {
		b, err := dev.WrapHostAligned(data, anchor)
		if err != nil {
			t.Fatal(err)
		}
		if p := b.(*buffer).ptr + uint64(anchor); p%16 != 0 || b.Len() != len(data) {
			t.Errorf("anchor %d: at device address %#x (want a multiple of 16), length %d", anchor, p, b.Len())
		}
		got := make([]byte, len(data))
		if err := dev.Read(b, 0, got); err != nil || !bytes.Equal(got, data) {
			t.Errorf("anchor %d: read back differs (%v)", anchor, err)
		}
		dev.Free(b)
	}
}
