//go:build !darwin || metalsim

package metal

import (
	"runtime"
	"strings"
	"testing"

	"bagel/backend"
	"bagel/internal/gputest"
	"bagel/kernels"
	"bagel/switches"
)

// TestSimResidencySwitchChangesWhatTheQueueSees runs the small kernel cases
// with the residency-set switch on and off, the simulator strict (a residency
// violation fails its command buffer). On: one set is attached to the queue
// and every buffer every dispatch used was checked and found in it,
// committed. Off: no set is attached and nothing is checked.
func TestSimResidencySwitchChangesWhatTheQueueSees(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer switches.Reset()
	for _, on := range []bool{true, false} {
		if err := switches.Set(residencySwitch, on); err != nil {
			t.Fatal(err)
		}
		dev := openOrSkip(t)
		dev.dev.SetStrictResidency(true)
		gputest.Run(t, dev, gputest.Options{Small: true})
		attached, checks, violations := dev.queue.AttachedResidencySets(), dev.dev.ResidencyChecks(), dev.dev.ResidencyViolations()
		t.Logf("switch %v: %d sets attached, %d buffer uses checked, %d violations", on, attached, checks, len(violations))
		for _, v := range violations {
			t.Errorf("switch %v: %s", on, v)
		}
		switch {
		case on && (attached != 1 || checks == 0):
			t.Errorf("switch on: %d sets attached, %d uses checked; want 1 and every use", attached, checks)
		case !on && (attached != 0 || checks != 0):
			t.Errorf("switch off: %d sets attached, %d uses checked; want none", attached, checks)
		}
	}
}

// TestSimResidencyCatchesAMissedCommit: a buffer allocated after the last
// residency commit and used without the commit Submit makes (here skipped on
// purpose) is reported by the simulator, naming the kernel and argument.
func TestSimResidencyCatchesAMissedCommit(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	if on, why := dev.ResidencySet(); !on {
		t.Skipf("no residency set: %s", why)
	}
	const n = 64
	a, _ := dev.Alloc(2 * n)
	out, _ := dev.Alloc(2 * n)
	args := []backend.Arg{backend.Buf(a, 0), backend.Buf(a, 0), backend.Buf(out, 0), backend.Int(n)}
	grid, group := kernels.Launch("add_bf16", args)
	enc := dev.Encoder()
	enc.Dispatch("add_bf16", grid, group, args...)
	dev.residencyNew = false // the bug: Submit believes the set is up to date
	if err := enc.Submit(); err != nil {
		t.Fatal(err)
	}
	if err := dev.Synchronize(); err != nil {
		t.Fatal(err)
	}
	v := dev.dev.ResidencyViolations()
	if len(v) != 2 || !strings.Contains(v[0], "add_bf16: argument 0 (a)") || !strings.Contains(v[0], "not committed") {
		t.Errorf("violations %q, want a and out reported as added but not committed", v)
	}
}
