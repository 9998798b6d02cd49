//go:build !darwin || metalsim

package mtl

import (
	"errors"
	"strings"
	"testing"

	"bagel/kernels"
)

// TestSimPipelineThreadgroupMemory: a pipeline whose kernel's threadgroup
// arrays exceed the device's maxThreadgroupMemoryLength is refused with an
// NSError when it is created; at the default 32 KiB every kernel is built.
func TestSimPipelineThreadgroupMemory(t *testing.T) {
	dev := openSim(t)
	opts := NewCompileOptions()
	defer opts.Release()
	lib, err := dev.NewLibraryWithSource(kernels.MetalSource(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Release()
	build := func(kernel string) error {
		fn := lib.NewFunctionWithName(kernel)
		if fn.IsNil() {
			t.Fatalf("%s not in the library", kernel)
		}
		defer fn.Release()
		p, err := dev.NewComputePipelineStateWithFunction(fn)
		if err == nil {
			p.Release()
		}
		return err
	}
	for _, name := range kernels.Names() {
		if err := build(name); err != nil {
			t.Errorf("%s at the default limit: %v", name, err)
		}
	}

	// rms_norm_bf16 has 128 bytes of threadgroup memory.
	dev.SetMaxThreadgroupMemoryLength(64)
	err = build("rms_norm_bf16")
	var nsErr *NSError
	if !errors.As(err, &nsErr) || !strings.Contains(err.Error(), "threadgroup memory size (128) exceeds the maximum threadgroup memory allowed (64)") {
		t.Errorf("rms_norm_bf16 with a 64-byte limit: %v, want an NSError naming 128 and 64 bytes", err)
	}
	if err := build("add_bf16"); err != nil { // no threadgroup memory
		t.Errorf("add_bf16 with a 64-byte limit: %v", err)
	}
}
