//go:build !darwin

package metal

import (
	"strings"
	"testing"
)

func TestStubSaysMacOSOnly(t *testing.T) {
	if _, err := New(); err == nil || !strings.Contains(err.Error(), "only available on macOS") {
		t.Errorf("New() error = %v, want one saying Metal is only available on macOS", err)
	}
}
