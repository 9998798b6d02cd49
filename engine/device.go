package engine

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// deviceLoop runs every device call of an engine on one goroutine locked to its OS
// thread: the CUDA context and Metal autorelease pools belong to a thread, and a
// call from elsewhere fails (CUDA_ERROR_INVALID_CONTEXT). Other goroutines hand it
// closures through work.
type deviceLoop struct {
	work chan func()
	done chan struct{}
	// mu orders do against stop: a generation still running when the model is
	// closed (the app switches models mid-reply) gets ErrClosed, not a panic.
	mu      sync.RWMutex
	stopped bool
	// calls counts the closures handed to the goroutine (do).
	calls atomic.Int64
}

// ErrClosed is returned by an engine call after Close.
var ErrClosed = errors.New("the model was unloaded")

func newDeviceLoop() *deviceLoop {
	d := &deviceLoop{work: make(chan func()), done: make(chan struct{})}
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(d.done)
		for f := range d.work {
			f()
		}
	}()
	return d
}

// do runs f on the device goroutine and waits for it. A panic inside f (a shape
// mismatch in ops is a programmer error that panics) becomes an error, so the app
// never dies from one.
func (d *deviceLoop) do(f func() error) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.stopped {
		return ErrClosed
	}
	d.calls.Add(1)
	result := make(chan error, 1)
	d.work <- func() {
		defer func() {
			if r := recover(); r != nil {
				result <- fmt.Errorf("internal error on the device goroutine: %v\n%s", r, debug.Stack())
			}
		}()
		result <- f()
	}
	return <-result
}

// stop runs release on the device goroutine as its last work, after the work
// already handed to it, and ends the goroutine; from then on do returns
// ErrClosed. Idempotent (release runs once).
func (d *deviceLoop) stop(release func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return
	}
	d.stopped = true
	if release != nil {
		finished := make(chan struct{})
		d.work <- func() {
			defer close(finished)
			defer func() { _ = recover() }() // a failing release must not keep the goroutine
			release()
		}
		<-finished
	}
	close(d.work)
	<-d.done
}
