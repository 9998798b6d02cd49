package ui

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"bagel/engine"
	"bagel/internal/testmodel"
	"bagel/store"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

// harness runs an App on Fyne's test driver against the real engine (CPU
// backend, tiny test model). Updates the app posts from its goroutines queue up
// and run on the test goroutine when the test waits, so widgets are only ever
// touched from one goroutine, as in the real app.
type harness struct {
	t         testing.TB
	a         *App
	configDir string
	dataDir   string
	mu        sync.Mutex
	queue     []func()

	// A held reply stops at its first words (hold) until the test releases
	// it or the app stops it; released is closed by release.
	holding  bool
	released chan struct{}

	// synthetic, when set, replaces the engine's events of the next replies
	// (the engine's own are drained): a stream of any speed and length.
	synthetic func(ctx context.Context) <-chan engine.Event

	// tapped counts the token events of the engine's streams (passed on or
	// drained), and ended the streams that ended.
	tapped, ended atomic.Int64
}

// testSettings keep replies short so the whole UI suite stays quick on two cores.
func testSettings() Settings {
	s := DefaultSettings()
	s.Backend = "cpu"
	s.MaxTokens = 12
	s.ContextLength = 512
	s.Thinking = false
	s.Seed = 1
	s.ManualTitles = true // the tests that want a model's title turn it on
	return s
}

// newHarness starts an app whose config and data live in configDir and dataDir
// ("" : new temporary folders), with s saved as its settings first (nil: keep
// the file there).
func newHarness(t testing.TB, s *Settings, configDir, dataDir string) *harness {
	t.Helper()
	test.NewTempApp(t)
	if configDir == "" {
		configDir = t.TempDir()
	}
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	h := &harness{t: t, configDir: configDir, dataDir: dataDir}
	if s != nil {
		if err := s.Save(configDir + "/settings.json"); err != nil {
			t.Fatal(err)
		}
	}
	a, err := New(fyne.CurrentApp(), Options{ConfigDir: configDir, DataDir: dataDir, RunOnMain: h.post, TapEvents: h.tap})
	if err != nil {
		t.Fatal(err)
	}
	h.a = a
	t.Cleanup(h.close)
	t.Cleanup(h.release) // runs before h.close (last registered, first run): no reply stays held
	return h
}

// hold makes the replies that start from now on stop after their first words
// (the first text outside thinking) until release or until the app stops them:
// a test sees a reply mid-stream however fast the engine is, and a reply meant
// to be stopped cannot finish first.
func (h *harness) hold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.holding {
		h.holding, h.released = true, make(chan struct{})
	}
}

// release lets held replies go on, and the next ones run freely.
func (h *harness) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.holding {
		h.holding = false
		close(h.released)
	}
}

// tap is the app's Options.TapEvents: it passes every event on and, while
// holding, waits after a reply's first words.
func (h *harness) tap(ctx context.Context, events <-chan engine.Event) <-chan engine.Event {
	h.mu.Lock()
	holding, released, synthetic := h.holding, h.released, h.synthetic
	h.mu.Unlock()
	count := func(ev engine.Event) {
		if ev.Kind == engine.EventToken && ev.Token >= 0 {
			h.tapped.Add(1)
		}
	}
	if synthetic != nil {
		go func() {
			defer h.ended.Add(1)
			for ev := range events {
				count(ev)
			}
		}()
		return synthetic(ctx)
	}
	out := make(chan engine.Event)
	go func() {
		defer close(out)
		defer h.ended.Add(1)
		for ev := range events {
			count(ev)
			out <- ev
			if holding && ev.Kind == engine.EventToken && ev.Text != "" && !ev.Thinking {
				holding = false
				select {
				case <-released:
				case <-ctx.Done():
				}
			}
		}
	}()
	return out
}

func (h *harness) post(f func()) {
	h.mu.Lock()
	h.queue = append(h.queue, f)
	h.mu.Unlock()
}

// pump runs what the app's goroutines posted so far.
func (h *harness) pump() {
	for {
		h.mu.Lock()
		q := h.queue
		h.queue = nil
		h.mu.Unlock()
		if len(q) == 0 {
			return
		}
		for _, f := range q {
			f()
		}
	}
}

// waitFor pumps until cond holds. The limit is generous: it only turns a hang
// into a failure, it measures nothing.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		h.pump()
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (h *harness) close() {
	if h.a.store == nil {
		return
	}
	h.a.shutdown()
	h.pump()
}

// loadModel loads a fresh copy of the named test model and waits for it.
func (h *harness) loadModel(name string) string {
	h.t.Helper()
	dir := testmodel.Dir(h.t, name)
	h.a.openModel(dir)
	h.waitFor("the model to load", func() bool { return !h.a.loading && h.a.eng != nil })
	if h.a.modelDir != dir {
		h.t.Fatalf("loaded %q, want %q", h.a.modelDir, dir)
	}
	return dir
}

// typeAndSend types text into the composer and presses Enter.
func (h *harness) typeAndSend(text string) {
	h.t.Helper()
	c := h.a.composer.entry
	h.a.win.Canvas().Focus(c)
	test.Type(c, text)
	c.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	if h.a.anyGen() == nil {
		h.t.Fatalf("Enter did not start a reply (composer holds %q)", c.Text)
	}
}

// waitReplyDone waits for the running reply to finish and returns it as saved.
func (h *harness) waitReplyDone() store.Message {
	h.t.Helper()
	h.waitFor("the reply to finish", func() bool { return h.a.anyGen() == nil })
	msgs, err := h.a.store.Messages(h.a.conv.ID)
	if err != nil {
		h.t.Fatal(err)
	}
	last := msgs[len(msgs)-1]
	if last.Role != store.RoleAssistant {
		h.t.Fatalf("the chat ends with a %s message", last.Role)
	}
	return last
}

// lastView is the view of the chat's last message on screen.
func (h *harness) lastView() *messageView {
	h.t.Helper()
	if len(h.a.msgs) == 0 {
		h.t.Fatal("no messages on screen")
	}
	v := h.a.chat.views[h.a.msgs[len(h.a.msgs)-1].ID]
	if v == nil {
		h.t.Fatal("the last message has no view")
	}
	return v
}

// dialogText is the text of the top dialog, "" when none is open.
func (h *harness) dialogText() string {
	top := h.a.win.Canvas().Overlays().Top()
	if top == nil {
		return ""
	}
	var b strings.Builder
	for _, o := range test.LaidOutObjects(top) {
		switch o := o.(type) {
		case *widget.Label:
			b.WriteString(o.Text + "\n")
		case *canvas.Text:
			b.WriteString(o.Text + "\n")
		case *widget.RichText:
			b.WriteString(o.String() + "\n")
		}
	}
	return b.String()
}
