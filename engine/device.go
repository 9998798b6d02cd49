package engine

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// deviceLoop runs every device call of an engine on one goroutine locked to its OS
// thread: the CUDA context and Metal autorelease pools belong to a thread, and a
// call from elsewhere fails (CUDA_ERROR_INVALID_CONTEXT). Other goroutines hand it
// closures through work.
type deviceLoop struct {
	work chan func()
	done chan struct{}
}

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

// stop ends the goroutine after the work already handed to it.
func (d *deviceLoop) stop() {
	close(d.work)
	<-d.done
}
