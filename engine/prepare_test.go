package engine

import (
	"errors"
	"strings"
	"testing"

	"bagel/backend"
)

// preparing is a device that readies its kernels on first use.
type preparing struct {
	backend.Device
	calls int
	err   error
}

func (p *preparing) Prepare() error { p.calls++; return p.err }

// TestLoadPreparesTheKernels: a device that compiles its kernels on first use
// does it during the load, under a stage of its own, and a failure there is
// the load's error, naming what failed.
func TestLoadPreparesTheKernels(t *testing.T) {
	var stages []string
	progress := func(_ float64, stage string) { stages = append(stages, stage) }
	dev := &preparing{}
	if err := prepareKernels(dev, progress); err != nil || dev.calls != 1 {
		t.Fatalf("prepare: %v after %d calls, want nil after 1", err, dev.calls)
	}
	if len(stages) != 1 || !strings.Contains(stages[0], "GPU kernels") {
		t.Errorf("stages %q, want one naming the GPU kernels", stages)
	}
	dev.err = errors.New("cuda: the embedded PTX was built from other kernel sources")
	err := prepareKernels(dev, progress)
	if err == nil || !strings.Contains(err.Error(), "preparing the GPU kernels") || !errors.Is(err, dev.err) {
		t.Errorf("failed prepare: %v, want it wrapped, naming the stage", err)
	}
	stages = nil
	if err := prepareKernels(struct{ backend.Device }{}, progress); err != nil || len(stages) != 0 {
		t.Errorf("a device without kernels to prepare: %v, stages %q", err, stages)
	}
}
