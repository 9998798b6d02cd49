//go:build !darwin || metalsim

package metal

import (
	"runtime"
	"strings"
	"testing"

	"bagel/backend"
	"bagel/kernels"
)

// TestSimThreadgroupMemoryLimitRefusesPipeline lowers the simulated device's
// threadgroup memory below rms_norm_bf16's 128 bytes: the backend's pipeline
// creation fails, Submit reports it naming the kernel, and nothing runs. A
// kernel without threadgroup memory still runs on the same device.
func TestSimThreadgroupMemoryLimitRefusesPipeline(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	if kernels.MetalThreadgroupBytes("rms_norm_bf16") != 128 {
		t.Fatalf("rms_norm_bf16 has %d bytes of threadgroup memory; the test expects 128", kernels.MetalThreadgroupBytes("rms_norm_bf16"))
	}
	dev.dev.SetMaxThreadgroupMemoryLength(64)
	const n = 64
	x, _ := dev.Alloc(2 * n)
	w, _ := dev.Alloc(2 * n)
	out, _ := dev.Alloc(2 * n)
	args := []backend.Arg{backend.Buf(x, 0), backend.Buf(w, 0), backend.Buf(out, 0), backend.Int(1), backend.Int(n), backend.Float(1e-6)}
	grid, group := kernels.Launch("rms_norm_bf16", args)
	enc := dev.Encoder()
	enc.Dispatch("rms_norm_bf16", grid, group, args...)
	err := enc.Submit()
	if err == nil || !strings.Contains(err.Error(), "rms_norm_bf16") || !strings.Contains(err.Error(), "exceeds the maximum threadgroup memory allowed (64)") {
		t.Errorf("Submit: %v, want the pipeline refused for its threadgroup memory", err)
	}
	if c := dev.Counters(); c.CommandBuffers != 0 {
		t.Errorf("%d command buffers committed for a refused pipeline", c.CommandBuffers)
	}

	addArgs := []backend.Arg{backend.Buf(x, 0), backend.Buf(w, 0), backend.Buf(out, 0), backend.Int(n)}
	grid, group = kernels.Launch("add_bf16", addArgs)
	enc = dev.Encoder()
	enc.Dispatch("add_bf16", grid, group, addArgs...)
	if err := enc.Submit(); err != nil {
		t.Errorf("add_bf16 (no threadgroup memory): %v", err)
	}
	if err := dev.Synchronize(); err != nil {
		t.Error(err)
	}
}
