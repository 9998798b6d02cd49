//go:build !darwin

package metal

import (
	"strings"
	"testing"
)

// TestNeedsMacOSWithoutSimulator: off macOS, without BAGEL_METAL_SIM=1, New
// says Metal needs macOS (and names the simulator's switch).
func TestNeedsMacOSWithoutSimulator(t *testing.T) {
	t.Setenv("BAGEL_METAL_SIM", "")
	if _, err := New(); err == nil || !strings.Contains(err.Error(), "only available on macOS") {
		t.Errorf("New() error = %v, want one saying Metal is only available on macOS", err)
	}
}
