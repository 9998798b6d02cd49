package engine

import "golang.org/x/sys/unix"

// systemMemory returns the Mac's unified memory in bytes. Available is unknown
// (0): macOS has no honest free-memory figure, it compresses and purges on
// demand. The GPU's share is asked of Metal (budget_metal_darwin.go).
func systemMemory() (total, available uint64) {
	total, err := unix.SysctlUint64("hw.memsize")
	if err != nil {
		return 0, 0
	}
	return total, 0
}
