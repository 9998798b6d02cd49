package cuda

import (
	"runtime"
	"testing"
)

// TestTotalMemory: the context-free query agrees with the opened device.
func TestTotalMemory(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	n, name, err := TotalMemory(0)
	if err != nil || n != dev.memory || name != dev.Name() {
		t.Fatalf("TotalMemory(0) = %d, %q, %v; the device has %d, %q", n, name, err, dev.memory, dev.Name())
	}
	if _, _, err := TotalMemory(1 << 20); err == nil {
		t.Error("TotalMemory of a GPU that does not exist gave no error")
	}
}
