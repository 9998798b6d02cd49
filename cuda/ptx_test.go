package cuda

import (
	"strings"
	"testing"

	"bagel/kernels"
)

// TestEmbeddedPTXIsCurrent fails when kernels/ changed after the embedded PTX
// was built: run `make ptx` on a machine with NVRTC (the GPU machine).
func TestEmbeddedPTXIsCurrent(t *testing.T) {
	if got, want := EmbeddedPTXHash(), kernels.SourceHash(); got != want {
		t.Fatalf("cuda/ptx was built from kernel sources %.12s, kernels/ is now %.12s: run `make ptx`", got, want)
	}
	for _, name := range kernels.Names() {
		if !strings.Contains(EmbeddedPTX(), ".entry "+name+"(") {
			t.Errorf("embedded PTX lacks kernel %s", name)
		}
	}
}
