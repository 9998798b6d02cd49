package engine

import (
	"fmt"
	"runtime"

	"github.com/dustin/go-humanize"
)

// MemoryBudget is the memory a model may take on a backend, for the check
// that warns before a load that will not fit.
type MemoryBudget struct {
	Total     uint64 // bytes; 0: unknown (no check)
	Available uint64 // of Total, free now where the system tells (system RAM on Linux); 0: unknown
	Source    string // where Total comes from, e.g. "CUDA device memory (NVIDIA H200)"
}

// gpuBudgets ask a GPU backend for its budget without opening the device, by
// name; their files register them beside gpuOpeners' (cuda on linux, metal on
// darwin). They return the bytes and where the figure comes from.
var gpuBudgets = map[string]func() (uint64, string, error){}

// DeviceMemory returns the budget of backend (a value of Options.Backend):
// the GPU's memory on CUDA, Metal's recommendedMaxWorkingSetSize on Metal, the
// system RAM on the CPU. "auto" looks where Load would. A GPU that cannot be
// asked falls back to the system RAM, and Source says why.
func DeviceMemory(backend string) MemoryBudget {
	names := []string{backend}
	if backend == "" || backend == "auto" {
		names = []string{"cuda"}
		if runtime.GOOS == "darwin" {
			names = []string{"metal"}
		}
	}
	why := ""
	for _, name := range names {
		probe, ok := gpuBudgets[name]
		if !ok {
			continue
		}
		total, source, err := probe()
		if err == nil && total > 0 {
			return MemoryBudget{Total: total, Source: source}
		}
		// The reason itself is the load's to report; the warning only names
		// the figure it used instead.
		why = fmt.Sprintf(" (%s unavailable)", name)
	}
	total, available := systemMemory()
	return MemoryBudget{Total: total, Available: available, Source: "system RAM" + why}
}

// Verdict says whether a model needing mem fits the budget: it fits, it is
// tight (over 80% of the memory, or over what is free now), or it does not fit
// (tooBig); with the figures, e.g. "fits: needs about 5.0 GiB of 16 GiB of
// system RAM".
func (b MemoryBudget) Verdict(mem Memory) (verdict string, tooBig bool) {
	need := uint64(mem.Weights + mem.Cache)
	figures := fmt.Sprintf("needs about %s of %s of %s", humanize.IBytes(need), humanize.IBytes(b.Total), b.Source)
	switch {
	case b.Total == 0:
		return "needs about " + humanize.IBytes(need), false
	case need > b.Total:
		return "does not fit: " + figures, true
	case need > b.Total/10*8 || b.Available > 0 && need > b.Available:
		return "tight: " + figures, false
	}
	return "fits: " + figures, false
}
