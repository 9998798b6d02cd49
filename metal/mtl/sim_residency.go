//go:build !darwin || metalsim

package mtl

import (
	"fmt"
	"slices"
	"strings"
)

// Residency sets (macOS 15). A set's allocations become resident for a
// queue's command buffers once the set is committed and attached to the queue
// (addResidencySet); requestResidency after a commit makes them resident
// ahead of use instead of when the next command buffer is committed.
//
// Metal raises no error for a buffer missing from the sets: a buffer bound
// with setBuffer is made resident for its command buffer anyway, at a cost
// per command buffer that the set exists to avoid (and an allocation used
// only indirectly would fault). So the simulator does not fail such work by
// default; it records each case as a violation, checked when a command
// buffer is committed, that tests assert on (Device.ResidencyViolations). In
// strict mode (Device.SetStrictResidency) a violation also fails the command
// buffer, so a test stops at the first one.
//
// The checks apply to a queue with a set attached, and to a buffer that is a
// member of some set of the device (its owner meant it to be resident through
// a set). A queue without sets, using buffers in none, is Metal's older
// per-command-buffer residency and is not checked.

// residencyLog is what the checks found on one device.
type residencyLog struct {
	violations []string
	checked    int  // buffer uses checked against a queue's attached sets
	strict     bool // a violation fails its command buffer
}

// ResidencySet is a simulated MTLResidencySet.
type ResidencySet struct{ s *simResidencySet }

type simResidencySet struct {
	object
	dev       *simDevice
	members   map[*simBuffer]struct{} // as added and removed; pending until Commit
	committed map[*simBuffer]struct{} // as of the last Commit: what residency applies to
	unasked   bool                    // committed since the last requestResidency
}

// newSimResidencySet makes an empty set of dev; callers hold sim.mu.
func newSimResidencySet(dev *simDevice) ResidencySet {
	s := &simResidencySet{object: newObject("MTLResidencySet"), dev: dev,
		members: map[*simBuffer]struct{}{}, committed: map[*simBuffer]struct{}{}}
	track(&s.object)
	dev.sets = append(dev.sets, s)
	return ResidencySet{s}
}

// AddAllocation adds a buffer; takes effect at the next Commit.
func (s ResidencySet) AddAllocation(b Buffer) {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	s.s.use("addAllocation")
	b.b.use("addAllocation of a buffer")
	s.s.members[b.b] = struct{}{}
}

// RemoveAllocation removes a buffer; takes effect at the next Commit.
func (s ResidencySet) RemoveAllocation(b Buffer) {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	s.s.use("removeAllocation")
	b.b.use("removeAllocation of a buffer")
	delete(s.s.members, b.b)
}

// Commit applies the added and removed allocations.
func (s ResidencySet) Commit() {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	s.s.use("commit")
	s.s.committed = make(map[*simBuffer]struct{}, len(s.s.members))
	for b := range s.s.members {
		s.s.committed[b] = struct{}{}
	}
	s.s.unasked = true
}

// RequestResidency asks for the committed allocations to be made resident
// now; it applies to what was committed, so it counts only after Commit.
func (s ResidencySet) RequestResidency() {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	s.s.use("requestResidency")
	s.s.unasked = false
}

// Release gives up ownership. (A queue the set is attached to holds its own
// reference.)
func (s ResidencySet) Release() {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	s.s.releaseRef()
}

// releaseRef drops a reference; the last takes the set off its device.
// Callers hold sim.mu.
func (s *simResidencySet) releaseRef() {
	if s.release() {
		s.dev.sets = slices.DeleteFunc(s.dev.sets, func(x *simResidencySet) bool { return x == s })
	}
}

// IsNil reports whether s is no set.
func (s ResidencySet) IsNil() bool { return s.s == nil }

// AddResidencySet attaches s to the queue: its committed allocations are
// resident for every command buffer of the queue. The queue keeps a reference
// until it is deallocated.
func (q CommandQueue) AddResidencySet(s ResidencySet) {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	q.q.use("addResidencySet")
	s.s.use("addResidencySet of a set")
	if slices.Contains(q.q.sets, s.s) {
		return
	}
	s.s.retain()
	q.q.sets = append(q.q.sets, s.s)
}

// AttachedResidencySets counts the sets attached to the queue. Simulator only.
func (q CommandQueue) AttachedResidencySets() int {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	q.q.use("attachedResidencySets")
	return len(q.q.sets)
}

// SetStrictResidency makes a residency violation fail its command buffer
// (with an MTLCommandBufferErrorDomain error) besides being recorded.
// Simulator only.
func (d Device) SetStrictResidency(strict bool) {
	defer sim.mu.Unlock()
	d.lock("setStrictResidency").residency.strict = strict
}

// ResidencyViolations lists what the residency checks found so far, one line
// per buffer use in a committed command buffer. Simulator only.
func (d Device) ResidencyViolations() []string {
	defer sim.mu.Unlock()
	return slices.Clone(d.lock("residencyViolations").residency.violations)
}

// ResidencyChecks counts the buffer uses checked against a queue's attached
// sets (none while no set is attached). Simulator only.
func (d Device) ResidencyChecks() int {
	defer sim.mu.Unlock()
	return d.lock("residencyChecks").residency.checked
}

// checkResidency records the residency violations of c, being committed to
// q, and returns them. Callers hold sim.mu.
func (q *simQueue) checkResidency(c *simCommandBuffer) []string {
	var found []string
	for _, s := range q.sets {
		if s.unasked {
			found = append(found, fmt.Sprintf("a residency set attached to the queue was committed without requestResidency after it, so its allocations are made resident only now, at the commit of a command buffer (%s)", dispatchNames(c)))
		}
	}
	seen := map[*simBuffer]bool{}
	for _, d := range c.dispatches {
		for i, arg := range d.args {
			if arg.buf == nil || seen[arg.buf] {
				continue
			}
			seen[arg.buf] = true
			if why := q.whyNotResident(arg.buf); why != "" {
				found = append(found, fmt.Sprintf("%s: argument %d (%s), a buffer of %d bytes, %s", d.kernel, i, d.sig.Params[i].Name, len(arg.buf.mem), why))
			}
		}
	}
	q.dev.residency.violations = append(q.dev.residency.violations, found...)
	return found
}

// whyNotResident says why b is not resident through the queue's sets, or ""
// when it is, or when residency sets do not concern it. Callers hold sim.mu.
func (q *simQueue) whyNotResident(b *simBuffer) string {
	var inSet, inAttachedPending bool
	for _, s := range q.dev.sets {
		_, member := s.committed[b]
		_, pending := s.members[b]
		inSet = inSet || member || pending
		if slices.Contains(q.sets, s) {
			inAttachedPending = inAttachedPending || pending
		}
	}
	if len(q.sets) == 0 && !inSet {
		return "" // Metal's per-command-buffer residency: not checked
	}
	if len(q.sets) > 0 {
		q.dev.residency.checked++
	}
	for _, s := range q.sets {
		if _, ok := s.committed[b]; ok {
			return ""
		}
	}
	switch {
	case inAttachedPending:
		return "was added to the queue's residency set but the set was not committed since"
	case inSet:
		return "is in a residency set not attached to the queue (addResidencySet)"
	}
	return "is in none of the queue's residency sets"
}

// dispatchNames lists the kernels of c, for messages.
func dispatchNames(c *simCommandBuffer) string {
	var names []string
	for _, d := range c.dispatches {
		names = append(names, d.kernel)
	}
	return strings.Join(names, ", ")
}
