package gputest

import (
	"slices"
	"testing"

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

// TestHarnessAgainstCPU runs the small cases with the CPU reference as the
// device under test: every case must pass with zero error, which checks the
// cases, the poisoning and the comparison themselves.
func TestHarnessAgainstCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	for _, r := range Run(t, cpu.New(0), Options{Small: true}) {
		if r.Err != 0 {
			t.Errorf("%s [%s]: CPU against CPU differs: %g", r.Kernel, r.Shape, r.Err)
		}
	}
}
