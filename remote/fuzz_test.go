package remote

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"bagel/engine"
)

// replayer answers every request with one status, content type and body.
type replayer struct {
	status int
	ctype  string
	body   string
}

func (r replayer) RoundTrip(req *http.Request) (*http.Response, error) {
	h := http.Header{}
	h.Set("Content-Type", r.ctype)
	return &http.Response{StatusCode: r.status, Status: http.StatusText(r.status), Header: h,
		Body: io.NopCloser(strings.NewReader(r.body)), Request: req}, nil
}

// FuzzRemoteStream reads any answer a server may send (a stream of events,
// an error page, a half-written chunk): the reply must end, at once, with
// one Done or one Error that names what went wrong, and nothing after it.
func FuzzRemoteStream(f *testing.F) {
	for _, seed := range []struct {
		status uint8
		body   string
	}{
		{0, "data: {\"choices\":[{\"delta\":{\"content\":\"Par\"}}]}\n\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n"},
		{0, "data: {\"choices\":[{\"delta\":{\"content\":\"<think>hm</think>\\nYes\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"reasoning\":\"r\"},\"finish_reason\":\"length\"}]}\n\n"},
		{0, ": keep-alive\n\nevent: x\ndata: {\"error\":{\"message\":\"out of memory\"}}\n\n"},
		{0, "data: {oops\n\n"},
		{1, `{"error":{"message":"Invalid API key"}}`},
		{3, `<html><head><title>502 Bad Gateway</title></head></html>`},
	} {
		f.Add(seed.status, seed.body)
	}
	statuses := []int{200, 401, 404, 502, 429, 500}
	think := hi
	think.EnableThinking = true
	f.Fuzz(func(t *testing.T, status uint8, body string) {
		code := statuses[int(status)%len(statuses)]
		c, err := New("http://127.0.0.1:1", "", "m")
		if err != nil {
			t.Fatal(err)
		}
		c.http = &http.Client{Transport: replayer{code, "text/event-stream", body}}
		for _, req := range []engine.Request{hi, think} {
			var finals []engine.Event
			after := 0
			deadline := time.After(10 * time.Second)
			events := c.Generate(context.Background(), req)
		read:
			for {
				select {
				case ev, ok := <-events:
					if !ok {
						break read
					}
					switch {
					case ev.Kind == engine.EventDone || ev.Kind == engine.EventError:
						finals = append(finals, ev)
					case len(finals) > 0:
						after++
					}
				case <-deadline:
					t.Fatalf("status %d, body %q: the reply did not end", code, body)
				}
			}
			if len(finals) != 1 || after > 0 {
				t.Fatalf("status %d, body %q: %d final events, %d events after; want one, last", code, body, len(finals), after)
			}
			if ev := finals[0]; ev.Kind == engine.EventError && strings.TrimSpace(ev.Err.Error()) == "" {
				t.Fatalf("status %d, body %q: an error without a message", code, body)
			}
			if code != 200 && finals[0].Kind != engine.EventError {
				t.Fatalf("status %d, body %q: ended %v; want an error", code, body, finals[0].Kind)
			}
		}
	})
}
