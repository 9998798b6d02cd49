package par

import (
	"sync/atomic"
	"testing"
)

// TestForCoversTheRangeOnce: every index is visited exactly once, for
// worker counts below, at and above n.
func TestForCoversTheRangeOnce(t *testing.T) {
	for _, workers := range []int{0, 1, 3, 7, 20} {
		const n = 7
		var seen [n]atomic.Int32
		For(workers, n, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				seen[i].Add(1)
			}
		})
		for i := range seen {
			if c := seen[i].Load(); c != 1 {
				t.Fatalf("%d workers: index %d visited %d times", workers, i, c)
			}
		}
	}
}

// TestForCarriesAPanicBack: a worker's panic reaches the caller.
func TestForCarriesAPanicBack(t *testing.T) {
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want the worker's panic", r)
		}
	}()
	For(4, 100, func(lo, hi int) {
		if lo == 0 {
			panic("boom")
		}
	})
	t.Fatal("For returned after a worker panicked")
}

// TestEachKeepsSmallLoopsInline: fewer items than a grain run on the
// caller's goroutine, in one range.
func TestEachKeepsSmallLoopsInline(t *testing.T) {
	calls := 0
	Each(10, 100, func(lo, hi int) {
		calls++
		if lo != 0 || hi != 10 {
			t.Fatalf("range [%d, %d), want [0, 10)", lo, hi)
		}
	})
	if calls != 1 {
		t.Fatalf("%d calls, want 1", calls)
	}
}
