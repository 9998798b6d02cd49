package engine

import (
	"os"
	"testing"
)

// TestMain runs the decode pipeline on the CPU backend for the engine's
// tests (pipelineAtDispatch): its logic is what they test there, as on the
// GPUs. A CPU engine outside these tests decodes without it.
func TestMain(m *testing.M) {
	pipelineAtDispatch = true
	os.Exit(m.Run())
}
