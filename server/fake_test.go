package server

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"bagel/engine"
)

// piece is one token of a scripted reply.
type piece struct {
	text     string
	thinking bool
}

// fakeEngine replies with a script, as engine.Engine's channel does: one
// event a token, Done last (reason "cancelled" once ctx ends), or an Error.
type fakeEngine struct {
	script []piece
	ctxLen int
	err    error         // returned before any token
	gate   chan struct{} // when set, each token waits for a value

	mu        sync.Mutex
	reqs      []engine.Request
	cancelled int // generations that ended by their context
}

func (f *fakeEngine) ContextLength() int { return f.ctxLen }

// ToolCallPrefix is Qwen3.5's (the fake's replies use its format).
func (f *fakeEngine) ToolCallPrefix(name string) (string, error) {
	if name == "" {
		return "<tool_call>\n<function=", nil
	}
	return "<tool_call>\n<function=" + name + ">\n", nil
}

// PromptTokens counts a token a word of the messages, and one an image
// (its pad, as the engine's template writes one).
func (f *fakeEngine) PromptTokens(req engine.Request) ([]int32, error) {
	n := 0
	for _, m := range req.Messages {
		n += len(strings.Fields(m.Content))
		for _, p := range m.Parts {
			n += len(strings.Fields(p.Text))
			if p.Image {
				n++
			}
		}
	}
	return make([]int32, n), nil
}

func (f *fakeEngine) Generate(ctx context.Context, req engine.Request) <-chan engine.Event {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	script, gate := f.script, f.gate
	f.mu.Unlock()
	out := make(chan engine.Event, 1)
	go func() {
		defer close(out)
		if f.err != nil {
			out <- engine.Event{Kind: engine.EventError, Err: f.err}
			return
		}
		st := engine.Stats{PromptTokens: 12, ReusedPromptTokens: 5}
		done := func(reason string) {
			if reason == engine.ReasonCancelled {
				f.mu.Lock()
				f.cancelled++
				f.mu.Unlock()
			}
			out <- engine.Event{Kind: engine.EventDone, Reason: reason, Stats: st}
		}
		for _, p := range script {
			if req.MaxTokens > 0 && st.GeneratedTokens == req.MaxTokens {
				done(engine.ReasonLength)
				return
			}
			if gate != nil {
				select {
				case <-gate:
				case <-ctx.Done():
					done(engine.ReasonCancelled)
					return
				}
			}
			st.GeneratedTokens++
			ev := engine.Event{Kind: engine.EventToken, Text: p.text, Thinking: p.thinking, Token: int32(st.GeneratedTokens)}
			if req.Logprobs { // the piece is its token; the others are "x", "y", …
				lp := &engine.TokenLogprobs{TokenLogprob: engine.TokenLogprob{Token: ev.Token, Bytes: []byte(p.text), Logprob: -0.25}}
				for i := range req.TopLogprobs {
					lp.Top = append(lp.Top, engine.TokenLogprob{Token: int32(1000 + i), Bytes: []byte{byte('x' + i)}, Logprob: -0.25 * float64(i+1)})
				}
				ev.Logprobs = lp
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				done(engine.ReasonCancelled)
				return
			}
			if ctx.Err() != nil {
				done(engine.ReasonCancelled)
				return
			}
		}
		done(engine.ReasonStop)
	}()
	return out
}

// reply changes the script of the generations to come.
func (f *fakeEngine) reply(script []piece, gate chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script, f.gate = script, gate
}

func (f *fakeEngine) requests() []engine.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]engine.Request(nil), f.reqs...)
}

func (f *fakeEngine) cancels() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cancelled
}

// hello is a reply with its reasoning first.
var hello = []piece{{"The user greets.", true}, {" Reply kindly.", true}, {"Hello", false}, {", world", false}, {"!", false}}

// serve starts a server over eng on an httptest listener (a loopback address).
func serve(t *testing.T, eng Engine, opt Options) *httptest.Server {
	t.Helper()
	ts, _ := serveBoth(t, eng, opt)
	return ts
}

// serveBoth is serve, with the Server for a test that looks inside.
func serveBoth(t *testing.T, eng Engine, opt Options) (*httptest.Server, *Server) {
	t.Helper()
	s, err := New(eng, "tiny", opt)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	return ts, s
}

// EncodeImagesContext takes each PNG (its signature checked, nothing more)
// as an image of four tokens; anything else is not an image, named by its
// place as the engine names it.
func (f *fakeEngine) EncodeImagesContext(_ context.Context, datas [][]byte) ([]*engine.Image, error) {
	var out []*engine.Image
	for i, data := range datas {
		if _, err := f.ImageTokenCount(data); err != nil {
			return nil, fmt.Errorf("image %d: %w", i+1, err)
		}
		out = append(out, &engine.Image{Tokens: 4, MergedRows: 2, MergedCols: 2})
	}
	return out, nil
}

// ImageTokenCount is four for a PNG.
func (f *fakeEngine) ImageTokenCount(data []byte) (int, error) {
	if !strings.HasPrefix(string(data), "\x89PNG\r\n\x1a\n") {
		return 0, errors.New("image: not a PNG, JPEG, GIF or WebP file")
	}
	return 4, nil
}
