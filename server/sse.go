package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// writeStall is how long a streamed reply's piece may wait for its client
// to take it. A client that stops reading (a process paused, a connection
// stalled) would otherwise hold its generation, and with it the engine: the
// requests behind it and the app's chats, which share the engine, until its
// reply ended. Past this its request ends as if the client had left.
var writeStall = 30 * time.Second

// streamWriter writes a streamed reply's pieces, each flushed at once and
// given writeStall to leave.
type streamWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newStreamWriter(w http.ResponseWriter) streamWriter {
	return streamWriter{w: w, rc: http.NewResponseController(w)}
}

// write sends b to the client now; false when the client is gone or did
// not take it within writeStall.
func (s streamWriter) write(b []byte) bool {
	if err := s.rc.SetWriteDeadline(time.Now().Add(writeStall)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return false
	}
	if _, err := s.w.Write(b); err != nil {
		return false
	}
	err := s.rc.Flush()
	return err == nil || errors.Is(err, http.ErrNotSupported)
}

// sseStream writes server-sent events, as all three streaming APIs do: the
// headers once, just before the first event (so a request the engine
// refuses before any event still gets its status and error), each event
// flushed at once (streamWriter).
type sseStream struct {
	w       http.ResponseWriter
	out     streamWriter
	started bool
}

func newSSE(w http.ResponseWriter) *sseStream {
	return &sseStream{w: w, out: newStreamWriter(w)}
}

// open writes the headers; true only the first time (the caller then
// writes its stream's opening events).
func (s *sseStream) open() bool {
	if s.started {
		return false
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	return true
}

// send writes v as one event named name ("": a data line alone, as
// OpenAI's chat stream has it); false when the client is gone (or stalled:
// streamWriter).
func (s *sseStream) send(name string, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	if name != "" {
		return s.out.write(fmt.Appendf(nil, "event: %s\ndata: %s\n\n", name, b))
	}
	return s.out.write(fmt.Appendf(nil, "data: %s\n\n", b))
}

// done writes OpenAI's closing "data: [DONE]".
func (s *sseStream) done() { s.out.write([]byte("data: [DONE]\n\n")) }
