//go:build !darwin || metalsim

package mtl

import (
	"errors"
	"strings"
	"testing"
)

// residencyCase is one add_bf16 command buffer on a fresh queue, with the
// residency set prepared by setup (nil: no set made).
type residencyCase struct {
	dev      Device
	q        CommandQueue
	a, b, c  Buffer
	violated []string
	status   uint64
	err      error
}

// runResidencyCase makes three buffers, lets setup arrange residency, then
// commits one dispatch over them and waits for it.
func runResidencyCase(t *testing.T, strict bool, setup func(r *residencyCase)) residencyCase {
	t.Helper()
	dev := openSim(t)
	dev.SetStrictResidency(strict)
	p := addPipeline(t, dev)
	r := residencyCase{dev: dev, q: dev.NewCommandQueueWithMaxCommandBufferCount(4)}
	defer r.q.Release()
	const n = 64
	r.a, r.b, r.c = bf16Buffer(t, dev, n, 0), bf16Buffer(t, dev, n, 0), bf16Buffer(t, dev, n, 0)
	defer r.a.Release()
	defer r.b.Release()
	defer r.c.Release()
	if setup != nil {
		setup(&r)
	}
	cb := encodeAdd(dev, r.q, p, r.a, r.b, r.c, n)
	defer cb.Release()
	cb.Commit()
	cb.WaitUntilCompleted()
	r.violated, r.status, r.err = dev.ResidencyViolations(), cb.Status(), cb.Error()
	return r
}

// newSet makes a residency set holding bufs, released at the end of the test
// (after the command buffer: a set nobody holds is no set).
func newSet(t *testing.T, dev Device, bufs ...Buffer) ResidencySet {
	t.Helper()
	s, err := dev.NewResidencySetWithDescriptor(4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Release)
	for _, b := range bufs {
		s.AddAllocation(b)
	}
	return s
}

// TestSimResidencyFollowed: every buffer in a committed, requested set
// attached to the queue is no violation, and each use was checked.
func TestSimResidencyFollowed(t *testing.T) {
	var checks int
	r := runResidencyCase(t, true, func(r *residencyCase) {
		s := newSet(t, r.dev, r.a, r.b, r.c)
		s.Commit()
		s.RequestResidency()
		r.q.AddResidencySet(s)
		if n := r.q.AttachedResidencySets(); n != 1 {
			t.Errorf("%d sets attached, want 1", n)
		}
	})
	checks = r.dev.ResidencyChecks()
	if len(r.violated) != 0 || r.status != StatusCompleted || checks != 3 {
		t.Errorf("violations %q, status %s, %d checks: want none, completed, 3", r.violated, CommandBufferStatus(r.status), checks)
	}
}

// TestSimResidencyNoSetsNotChecked: a queue without sets and buffers in none
// is Metal's per-command-buffer residency; nothing is checked.
func TestSimResidencyNoSetsNotChecked(t *testing.T) {
	r := runResidencyCase(t, true, nil)
	if len(r.violated) != 0 || r.status != StatusCompleted || r.dev.ResidencyChecks() != 0 {
		t.Errorf("violations %q, status %s, %d checks: want none, completed, 0", r.violated, CommandBufferStatus(r.status), r.dev.ResidencyChecks())
	}
}

// TestSimResidencyViolations breaks each rule once and requires the one
// violation naming it; in strict mode the command buffer fails with it.
func TestSimResidencyViolations(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, r *residencyCase)
		want  string
	}{
		{"buffer not added", func(t *testing.T, r *residencyCase) {
			s := newSet(t, r.dev, r.a, r.b) // c missing
			s.Commit()
			s.RequestResidency()
			r.q.AddResidencySet(s)
		}, "argument 2 (out), a buffer of 128 bytes, is in none of the queue's residency sets"},
		{"added after the commit", func(t *testing.T, r *residencyCase) {
			s := newSet(t, r.dev, r.a, r.b)
			s.Commit()
			s.RequestResidency()
			r.q.AddResidencySet(s)
			s.AddAllocation(r.c) // and no Commit
		}, "argument 2 (out), a buffer of 128 bytes, was added to the queue's residency set but the set was not committed since"},
		{"set not attached", func(t *testing.T, r *residencyCase) {
			s := newSet(t, r.dev, r.a, r.b, r.c)
			s.Commit()
			s.RequestResidency() // no AddResidencySet
		}, "argument 0 (a), a buffer of 128 bytes, is in a residency set not attached to the queue (addResidencySet)"},
		{"no requestResidency", func(t *testing.T, r *residencyCase) {
			s := newSet(t, r.dev, r.a, r.b, r.c)
			s.RequestResidency() // before the commit: does not count
			s.Commit()
			r.q.AddResidencySet(s)
		}, "committed without requestResidency"},
	}
	for _, c := range cases {
		for _, strict := range []bool{false, true} {
			r := runResidencyCase(t, strict, func(r *residencyCase) { c.setup(t, r) })
			if len(r.violated) == 0 || !strings.Contains(r.violated[0], c.want) {
				t.Errorf("%s: violations %q, want the first to contain %q", c.name, r.violated, c.want)
				continue
			}
			if c.name == "set not attached" && len(r.violated) != 3 {
				t.Errorf("%s: %d violations, want one per buffer (3): %q", c.name, len(r.violated), r.violated)
			}
			var nsErr *NSError
			switch {
			case !strict && (r.status != StatusCompleted || r.err != nil):
				t.Errorf("%s: not strict, yet status %s, error %v", c.name, CommandBufferStatus(r.status), r.err)
			case strict && (r.status != StatusError || !errors.As(r.err, &nsErr) || !strings.Contains(nsErr.Description, c.want)):
				t.Errorf("%s: strict, status %s, error %v: want an error naming the violation", c.name, CommandBufferStatus(r.status), r.err)
			}
		}
	}
}
