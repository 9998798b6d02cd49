// Package par splits a loop's index range over goroutines: the CPU
// backend's kernels, and the host's share of reading an image (a 1024²
// image's pixels and position table are 11 million values to convert,
// about 70 ms on one core, a few on sixteen).
package par

import (
	"runtime"
	"sync"
)

// For runs fn over [0, n) cut into workers contiguous ranges, each on its
// own goroutine (inline when workers ≤ 1), and returns when all are done.
// A panic in a worker is raised again in the caller, where the engine's
// recover sees it; left in the worker it would end the process.
func For(workers, n int, fn func(lo, hi int)) {
	workers = min(workers, n)
	if workers <= 1 {
		fn(0, n)
		return
	}
	var (
		wg     sync.WaitGroup
		once   sync.Once
		failed any
	)
	for w := range workers {
		lo, hi := n*w/workers, n*(w+1)/workers
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					once.Do(func() { failed = r })
				}
			}()
			fn(lo, hi)
		})
	}
	wg.Wait()
	if failed != nil {
		panic(failed)
	}
}

// Each is For over n items on every core, ranges of at least grain items
// (so that a small loop stays on one goroutine).
func Each(n, grain int, fn func(lo, hi int)) {
	For(min(runtime.GOMAXPROCS(0), n/max(grain, 1)), n, fn)
}
