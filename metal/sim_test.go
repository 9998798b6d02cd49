//go:build !darwin || metalsim

package metal

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"bagel/backend"
	"bagel/internal/gputest"
	"bagel/kernels"
	"bagel/metal/mtl"
)

// Checks of the backend that only the simulator can make: the reference
// counts it leaves, and what it does with a device whose limits a test sets.

// TestSimBalancedAfterClose: after kernels ran and buffers were left for Close
// to free, Close releases every Metal object the backend made.
func TestSimBalancedAfterClose(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t.Setenv(mtl.SimulatorEnv, "1")
	before := mtl.LiveObjects()
	dev, err := New()
	if err != nil {
		t.Fatal(err)
	}
	gputest.Run(t, dev, gputest.Options{Small: true, Only: []string{"add_bf16", "rms_norm_bf16", "qmatmul_bf16"}})
	if _, err := dev.Alloc(1000); err != nil { // left for Close
		t.Fatal(err)
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if after := mtl.LiveObjects(); after != before {
		t.Errorf("live Metal objects %q after Close, %q before", after, before)
	}
}

// TestSimSplitWithinMaxBufferLength lowers the simulated device's
// maxBufferLength, which now refuses any larger buffer: the backend's split
// buffers must all fit, and kernels over them match the CPU.
func TestSimSplitWithinMaxBufferLength(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	dev.dev.SetMaxBufferLength(uint64(4 * dev.page))
	dev.maxLen = 4 * dev.page
	m := mapFile(t, 16*dev.page+300)
	b, err := dev.WrapHost(m)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(b)
	if n := len(b.(*buffer).mtl); n < 4 {
		t.Fatalf("%d Metal buffers, want a split", n)
	}
	checkNoCopy(t, dev, b, m, []int{0, 2, dev.page - 2, 2*dev.page + 6, 9 * dev.page})
	if _, err := dev.Alloc(4*dev.page + 1); err == nil {
		t.Error("Alloc over maxBufferLength succeeded")
	}
}

// TestSimRefusedBufferIsAnError: a backend that planned with a larger
// maxBufferLength than the device has gets newBufferWithBytesNoCopy's nil,
// and WrapHost says so.
func TestSimRefusedBufferIsAnError(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	dev.dev.SetMaxBufferLength(uint64(2 * dev.page))
	dev.maxLen = 8 * dev.page // out of step with the device, on purpose
	m := mapFile(t, 6*dev.page)
	if b, err := dev.WrapHost(m); err == nil || !strings.Contains(err.Error(), "refused") {
		if err == nil {
			dev.Free(b)
		}
		t.Errorf("WrapHost over the device's maxBufferLength: %v, want refused", err)
	}
}

// TestSimKernelFaultReported: a dispatch whose kernel runs past its buffers
// (n larger than the buffers) fails its command buffer on the simulated GPU;
// the backend reports the MTLCommandBufferErrorDomain error at the next Read.
func TestSimKernelFaultReported(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	a, _ := dev.Alloc(64)
	defer dev.Free(a)
	args := []backend.Arg{backend.Buf(a, 0), backend.Buf(a, 0), backend.Buf(a, 0), backend.Int(1 << 20)}
	grid, group := kernels.Launch("add_bf16", args)
	enc := dev.Encoder()
	enc.Dispatch("add_bf16", grid, group, args...)
	if err := enc.Submit(); err != nil {
		t.Logf("Submit already reported it: %v", err)
		return
	}
	err := dev.Read(a, 0, make([]byte, 4))
	var nsErr *mtl.NSError
	if !errors.As(err, &nsErr) || nsErr.Domain != "MTLCommandBufferErrorDomain" {
		t.Fatalf("Read after a faulting kernel: %v, want an MTLCommandBufferErrorDomain error", err)
	}
	if err := dev.Read(a, 0, make([]byte, 4)); err != nil {
		t.Errorf("the failure was reported twice: %v", err)
	}
}

// TestSimReadAsyncWaitsForTheWorkBefore: an asynchronous read returns the
// bytes as the work before it left them, though work committed after it
// overwrites them before the host waits; and it counts as a host sync.
func TestSimReadAsyncWaitsForTheWorkBefore(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	b, err := dev.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	fill := func(v int) {
		t.Helper()
		args := []backend.Arg{backend.Buf(b, 0), backend.Int(16), backend.Int(v)} // dst, N, value
		grid, group := kernels.Launch("fill_u32", args)
		e := dev.Encoder()
		e.Dispatch("fill_u32", grid, group, args...)
		if err := e.Submit(); err != nil {
			t.Fatal(err)
		}
	}
	fill(7)
	syncs := dev.Counters().HostSyncs
	r, err := dev.ReadAsync(b, 4, 8)
	if err != nil {
		t.Fatal(err)
	}
	fill(9) // committed after the read: not what it returns
	got, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 8 || got[0] != 7 || got[4] != 7 {
		t.Errorf("read %v, want the words 7, 7", got)
	}
	if n := dev.Counters().HostSyncs - syncs; n != 1 {
		t.Errorf("%d host syncs, want 1", n)
	}
	if _, err := dev.ReadAsync(b, 2, 4); err == nil {
		t.Error("a read at a byte offset inside a word was taken")
	}
}
