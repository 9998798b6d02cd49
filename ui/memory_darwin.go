package ui

import "golang.org/x/sys/unix"

// machineMemory returns the Mac's unified memory in bytes, and as "available"
// the part the GPU may use: Metal's recommendedMaxWorkingSetSize is about three
// quarters of unified memory on Apple silicon. (macOS has no honest free-memory
// figure: it compresses and purges on demand.)
func machineMemory() (total, available uint64) {
	total, err := unix.SysctlUint64("hw.memsize")
	if err != nil {
		return 0, 0
	}
	return total, total / 4 * 3
}
