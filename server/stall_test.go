package server

import (
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// smallBuffers accepts connections whose send buffers are small, so that a
// client that stops reading stalls the server's writes within a few kB.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// TestStalledStreamFreesTheEngine: a streaming client that stops reading
// (its process paused) holds its generation only writeStall: then its
// request ends as if it had left (its generation cancelled), and the
// request behind it, which waited for the engine, is answered. On each
// streaming API.
func TestStalledStreamFreesTheEngine(t *testing.T) {
	defer func(d time.Duration) { writeStall = d }(writeStall)
	writeStall = 300 * time.Millisecond
	long := make([]piece, 200000) // far more than the connection's buffers hold
	for i := range long {
		long[i] = piece{text: "word ", thinking: false}
	}
	for _, api := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"tiny","stream":true,"messages":[{"role":"user","content":"Talk."}]}`},
		{"/v1/messages", `{"model":"tiny","stream":true,"max_tokens":300000,"messages":[{"role":"user","content":"Talk."}]}`},
		{"/v1/responses", `{"model":"tiny","stream":true,"input":"Talk."}`},
		{"/api/chat", `{"model":"tiny","messages":[{"role":"user","content":"Talk."}]}`},
	} {
		t.Run(strings.TrimPrefix(api.path, "/"), func(t *testing.T) {
			f := &fakeEngine{script: long, ctxLen: 1 << 20}
			s, err := New(f, "tiny", Options{})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewUnstartedServer(s.Handler())
			ts.Listener = smallBuffers{ts.Listener}
			ts.Start()
			defer func() { ts.Close(); s.Close() }()
			conn, err := net.Dial("tcp", ts.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.(*net.TCPConn).SetReadBuffer(4096)
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
				api.path, len(api.body), api.body) // and never reads
			for deadline := time.Now().Add(10 * time.Second); len(f.requests()) == 0; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the stalled request never reached the engine")
				}
			}
			f.reply(hello, nil)
			answered := make(chan int)
			go func() {
				resp, _ := post(t, ts.URL, "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}]}`)
				answered <- resp.StatusCode
			}()
			select {
			case code := <-answered:
				if code != 200 {
					t.Errorf("the request behind the stalled one: status %d", code)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the request behind a stalled stream was never answered")
			}
			if f.cancels() == 0 {
				t.Error("the stalled stream's generation was not cancelled")
			}
		})
	}
}
