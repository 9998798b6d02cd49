package engine

import (
	"fmt"
	"runtime"

	"bagel/backend"
	"bagel/cpu"
)

// BackendNames are the values of Options.Backend.
var BackendNames = []string{"auto", "cpu", "cuda", "metal"}

// gpuOpeners are the GPU backends compiled into this binary, by name; their files
// register them (cuda on linux, metal on darwin).
var gpuOpeners = map[string]func() (backend.Device, error){}

// openDevice picks the backend: an explicit name, or for "auto" Metal on macOS,
// CUDA where the driver is, else the CPU. It returns the reason of the choice,
// shown in the stats.
func openDevice(name string, threads int) (backend.Device, string, error) {
	switch name {
	case "", "auto":
		order := []string{"cuda"}
		if runtime.GOOS == "darwin" {
			order = []string{"metal"}
		}
		var why []string
		for _, n := range order {
			open, ok := gpuOpeners[n]
			if !ok {
				why = append(why, n+" not built into this binary")
				continue
			}
			dev, err := open()
			if err == nil {
				return dev, "auto: " + n + " available", nil
			}
			why = append(why, fmt.Sprintf("%s unavailable: %v", n, err))
		}
		return cpu.New(threads), fmt.Sprintf("auto: CPU (%s)", join(why)), nil
	case "cpu":
		return cpu.New(threads), "chosen: cpu", nil
	case "cuda", "metal":
		open, ok := gpuOpeners[name]
		if !ok {
			return nil, "", fmt.Errorf("backend %s is not available on %s/%s", name, runtime.GOOS, runtime.GOARCH)
		}
		dev, err := open()
		if err != nil {
			return nil, "", fmt.Errorf("backend %s: %w", name, err)
		}
		return dev, "chosen: " + name, nil
	}
	return nil, "", fmt.Errorf("unknown backend %q (want one of auto, cpu, cuda, metal)", name)
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += "; "
		}
		out += x
	}
	return out
}
