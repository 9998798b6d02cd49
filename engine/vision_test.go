package engine

import (
	"testing"

	"bagel/internal/testmodel"
)

// TestVisionStatusOfTheTestModels: the test models are text only, and say so.
func TestVisionStatusOfTheTestModels(t *testing.T) {
	e, err := Load(testmodel.Weights(t, "tiny-dense"), Options{Backend: "cpu", ContextLength: 32})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if present, status := e.VisionStatus(); present || status != "no vision tower (text only)" {
		t.Errorf("VisionStatus = %v %q", present, status)
	}
}
