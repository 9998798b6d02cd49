//go:build !metalsim

package metal_test

import (
	"errors"
	"strings"
	"testing"

	"bagel/engine"
	"bagel/internal/testmodel"
)

// TestAutoPicksMetal: on macOS, Backend "auto" opens Metal.
func TestAutoPicksMetal(t *testing.T) {
	e, err := engine.Load(testmodel.Weights(t, "tiny-dense"), engine.Options{Backend: "auto", ContextLength: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if strings.Contains(e.BackendReason, "metal unavailable") && metalMissing(errors.New(e.BackendReason)) {
		t.Skipf("no Metal: %s", e.BackendReason)
	}
	if !strings.HasPrefix(e.BackendReason, "auto: metal") {
		t.Errorf("auto chose %q (%s), want metal", e.BackendName, e.BackendReason)
	}
}
