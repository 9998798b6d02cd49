package server

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// sseStream writes server-sent events, as all three streaming APIs do: the
// headers once, just before the first event (so a request the engine
// refuses before any event still gets its status and error), each event
// flushed at once.
type sseStream struct {
	w       http.ResponseWriter
	flusher http.Flusher
	started bool
}

func newSSE(w http.ResponseWriter) *sseStream {
	f, _ := w.(http.Flusher)
	return &sseStream{w: w, flusher: f}
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
// OpenAI's chat stream has it); false when the client is gone.
func (s *sseStream) send(name string, v any) bool {
	b, err := json.Marshal(v)
	if err == nil {
		if name != "" {
			_, err = fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b)
		} else {
			_, err = fmt.Fprintf(s.w, "data: %s\n\n", b)
		}
	}
	s.flush()
	return err == nil
}

// done writes OpenAI's closing "data: [DONE]".
func (s *sseStream) done() {
	fmt.Fprint(s.w, "data: [DONE]\n\n")
	s.flush()
}

func (s *sseStream) flush() {
	if s.flusher != nil {
		s.flusher.Flush()
	}
}
