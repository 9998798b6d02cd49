package engine

import (
	"fmt"
	"runtime"
	"strings"

	"bagel/backend"
	// The backends register themselves (backend.Register) from the files built for
	// the OS they run on: cpu everywhere, cuda on linux, metal on darwin (and
	// elsewhere on the Metal simulator when BAGEL_METAL_SIM=1).
	_ "bagel/cpu"
	_ "bagel/cuda"
	_ "bagel/metal"
)

// BackendNames are the values of Options.Backend.
var BackendNames = []string{"auto", "cpu", "cuda", "metal"}

// BackendsHere are the values of Options.Backend this build can open on this
// OS: auto, cpu, and the GPU backends registered here (cuda on Linux, metal on
// macOS), whether or not a device answers. The settings offer these.
func BackendsHere() []string {
	out := []string{"auto", "cpu"}
	for _, n := range []string{"cuda", "metal"} {
		if _, ok := backend.Lookup(n); ok {
			out = append(out, n)
		}
	}
	return out
}

// openDevice picks the backend: an explicit name, or for "auto" Metal on macOS,
// CUDA where the driver is, else the CPU. It returns the reason of the choice,
// shown in the stats, and the kind it opened (cpu, cuda, metal).
func openDevice(name string, threads int) (dev backend.Device, kind, reason string, err error) {
	opt := backend.Options{Threads: threads}
	switch name {
	case "", "auto":
		order := []string{"cuda"}
		if runtime.GOOS == "darwin" {
			order = []string{"metal"}
		}
		var why []string
		for _, n := range order {
			open, ok := backend.Lookup(n)
			if !ok {
				why = append(why, n+" not built into this binary")
				continue
			}
			dev, err := open(opt)
			if err == nil {
				return dev, n, "auto: " + n + " available", nil
			}
			why = append(why, fmt.Sprintf("%s unavailable: %v", n, err))
		}
		dev, err := openCPU(opt)
		if err != nil {
			return nil, "", "", err
		}
		return dev, "cpu", fmt.Sprintf("auto: CPU (%s)", strings.Join(why, "; ")), nil
	case "cpu":
		dev, err := openCPU(opt)
		if err != nil {
			return nil, "", "", err
		}
		return dev, "cpu", "chosen: cpu", nil
	case "cuda", "metal":
		open, ok := backend.Lookup(name)
		if !ok {
			return nil, "", "", fmt.Errorf("backend %s is not available on %s/%s", name, runtime.GOOS, runtime.GOARCH)
		}
		dev, err := open(opt)
		if err != nil {
			return nil, "", "", fmt.Errorf("backend %s: %w", name, err)
		}
		return dev, name, "chosen: " + name, nil
	}
	return nil, "", "", fmt.Errorf("unknown backend %q (want one of auto, cpu, cuda, metal)", name)
}

// openCPU opens the reference backend, which every build registers.
func openCPU(opt backend.Options) (backend.Device, error) {
	open, ok := backend.Lookup("cpu")
	if !ok {
		return nil, fmt.Errorf("backend cpu is not registered (bagel/cpu not linked)")
	}
	return open(opt)
}
