package engine

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

func TestDeviceMemory(t *testing.T) {
	ram := DeviceMemory("cpu")
	if ram.Source != "system RAM" {
		t.Errorf("cpu budget from %q, want system RAM", ram.Source)
	}
	if runtime.GOOS == "linux" && (ram.Total == 0 || ram.Available == 0 || ram.Available > ram.Total) {
		t.Errorf("system RAM on Linux: %+v", ram)
	}

	// A GPU's own figure wins; one that cannot be asked falls back to the RAM
	// and says why.
	gpuBudgets["test-gpu"] = func() (uint64, string, error) { return 80 << 30, "test GPU memory", nil }
	gpuBudgets["test-broken"] = func() (uint64, string, error) { return 0, "", errors.New("no driver") }
	defer delete(gpuBudgets, "test-gpu")
	defer delete(gpuBudgets, "test-broken")
	if b := DeviceMemory("test-gpu"); b != (MemoryBudget{Total: 80 << 30, Source: "test GPU memory"}) {
		t.Errorf("GPU budget %+v", b)
	}
	b := DeviceMemory("test-broken")
	if b.Total != ram.Total || b.Source != "system RAM (test-broken unavailable)" {
		t.Errorf("a GPU that cannot be asked gives %+v", b)
	}
	auto := DeviceMemory("auto")
	t.Logf("auto: %+v", auto)
	if auto.Total == 0 && ram.Total != 0 {
		t.Errorf("auto gives no budget: %+v", auto)
	}
	if strings.Contains(DeviceMemory("cpu").Source, "(") {
		t.Error("the CPU's budget names a GPU")
	}
}

func TestMemoryVerdict(t *testing.T) {
	gib := uint64(1 << 30)
	for _, c := range []struct {
		weights, cache int64
		budget         MemoryBudget
		want           string
	}{
		{4 << 30, 1 << 30, MemoryBudget{Total: 16 * gib, Source: "system RAM"}, "fits: needs about 5.0 GiB of 16 GiB of system RAM"},
		{12 << 30, 1 << 30, MemoryBudget{Total: 16 * gib, Source: "system RAM"}, "tight: needs about 13 GiB of 16 GiB"},
		{4 << 30, 1 << 30, MemoryBudget{Total: 16 * gib, Available: 4 * gib, Source: "system RAM"}, "tight:"},
		{20 << 30, 1 << 30, MemoryBudget{Total: 16 * gib, Source: "Metal"}, "does not fit: needs about 21 GiB of 16 GiB of Metal"},
		{4 << 30, 0, MemoryBudget{}, "needs about 4.0 GiB"},
	} {
		if got, tooBig := c.budget.Verdict(Memory{Weights: c.weights, Cache: c.cache}); !strings.HasPrefix(got, c.want) || tooBig != strings.HasPrefix(c.want, "does not fit") {
			t.Errorf("%d+%d bytes in %+v: %q (too big %v), want %q…", c.weights, c.cache, c.budget, got, tooBig, c.want)
		}
	}
}
