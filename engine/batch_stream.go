package engine

import (
	"context"
	"sync"
)

// A batched reply's events reach its reader through a queue the batch never
// waits on: a reader that stops reading (a client paused or stalled on its
// connection, a window behind a modal dialog) must not stall the replies
// stepping beside it. A goroutine a reply (pump) hands the events on in
// order; the queue holds at most the reply's own events (its token limit,
// its context). A cancel drops what the reader has not taken but the final
// event, which always finds a place (as Generate's generation.send).

// streamBuffer is the events a batched reply's channel holds beyond its
// queue: a reader reading in bursts (a window drawing at its frame rate)
// takes several at once.
const streamBuffer = 16

// eventQueue is a batched reply's events not yet handed to its reader.
type eventQueue struct {
	mu     sync.Mutex
	events []Event
	closed bool          // no more will come
	ready  chan struct{} // (one place) events came, or the queue closed
}

func newEventQueue() *eventQueue { return &eventQueue{ready: make(chan struct{}, 1)} }

// push queues ev without waiting.
func (q *eventQueue) push(ev Event) {
	q.mu.Lock()
	q.events = append(q.events, ev)
	q.mu.Unlock()
	q.wake()
}

// close says no more events will come.
func (q *eventQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wake()
}

func (q *eventQueue) wake() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take waits for events or the end: the events queued, and whether the
// queue has closed.
func (q *eventQueue) take() ([]Event, bool) {
	for {
		q.mu.Lock()
		events, closed := q.events, q.closed
		q.events = nil
		q.mu.Unlock()
		if len(events) > 0 || closed {
			return events, closed
		}
		<-q.ready
	}
}

// pump hands q's events to out in order until q closes, then closes out
// and releases the reply's context (cancel). Once ctx is done (the caller
// cancelled or left), tokens are dropped and the final event takes a place
// in out without waiting.
func (q *eventQueue) pump(ctx context.Context, cancel context.CancelFunc, out chan Event) {
	defer cancel()
	defer close(out)
	for {
		events, closed := q.take()
		for _, ev := range events {
			deliver(ctx, out, ev)
		}
		if closed {
			return
		}
	}
}

// deliver hands ev to out, or, once ctx is done, the final event alone
// without waiting (an event still in out is a token made before the
// cancel: the final event takes its place; only the pump sends on out).
func deliver(ctx context.Context, out chan Event, ev Event) {
	if ctx.Err() == nil {
		select {
		case out <- ev:
			return
		case <-ctx.Done():
		}
	}
	if ev.Kind == EventDone || ev.Kind == EventError {
		select {
		case <-out:
		default:
		}
		out <- ev
	}
}
