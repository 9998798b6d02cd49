package ui

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"bagel/engine"
	"bagel/hub"
	"bagel/server"
)

// The Local server (File › Local server…): bagel serve's APIs — OpenAI's,
// Anthropic's and Ollama's — over the model loaded in the window, for Claude
// Code, Codex, Continue and the SDKs. It serves while its switch is on and a
// model is loaded, on 127.0.0.1 only (the server refuses other hosts' names
// and web pages; no key is needed on loopback), follows the model as it is
// replaced, and stops with the window. The chat and the server share the
// engine, which takes one generation at a time: a reply in the window waits
// for a server request under way, and the other way round.

// serverLogSize is how many requests the log keeps.
const serverLogSize = 100

// localServer is the server's state; it belongs to the Fyne thread.
type localServer struct {
	srv              *server.Server // nil: not serving
	addr             string         // host:port while serving
	model            string         // the id it serves
	stop             context.CancelFunc
	done             chan struct{} // closed once Serve returned
	err              error         // why it is not serving though switched on
	running, waiting int
	parallel         int              // replies generated at once
	batch            *engine.Parallel // the engine's batches, when parallel > 1
	rate             float64          // tokens a second, the replies together (rateEvery)
	log              []server.Entry   // newest last
	view             *serverView      // the dialog, while open
}

// startServer serves the loaded model when the switch is on; a port that
// cannot be used is shown, and the switch stays on for the next model.
func (a *App) startServer() {
	ls := &a.server
	if !a.settings.ServerOn || a.eng == nil || ls.srv != nil {
		a.refreshServer()
		return
	}
	port := a.settings.serverPort()
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		ls.err = fmt.Errorf("port %d cannot be used: %w. Another program may be using it: choose another port", port, unwrapOp(err))
		a.refreshServer()
		return
	}
	model := hub.DisplayName(a.modelDir)
	var eng server.Engine = a.eng
	var batch *engine.Parallel
	parallel := max(1, a.settings.ServerParallel)
	if a.batch != nil && a.batch.Limit() >= parallel {
		// One batch for the chats and the server, they decode together: a
		// request of its own (even one at a time) would wait for the
		// engine's turn, and the chats' new replies for it.
		eng, batch = a.batch, a.batch
	} else if parallel > 1 {
		p, err := a.eng.Parallel(parallel, 0)
		if err != nil {
			ln.Close()
			ls.err = fmt.Errorf("%d replies at once: %w", parallel, err)
			a.refreshServer()
			return
		}
		eng, batch = p, p
	}
	var srv *server.Server
	srv, err = server.New(eng, model, server.Options{
		Parallel: parallel,
		Log:      func(e server.Entry) { a.do(func() { a.serverLogged(e) }) },
		Busy: func(running, waiting int) {
			a.do(func() {
				if a.server.srv == srv {
					a.server.running, a.server.waiting = running, waiting
					a.refreshServer()
				}
			})
		},
	})
	if err != nil {
		ln.Close()
		ls.err = err
		a.refreshServer()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ctx, ln)
	}()
	*ls = localServer{srv: srv, addr: ln.Addr().String(), model: model, parallel: parallel, batch: batch, stop: cancel, done: done, log: ls.log, view: ls.view}
	if batch != nil {
		go a.measureRate(ctx, srv, batch)
	}
	a.refreshServer()
}

// unwrapOp drops net's "listen tcp 127.0.0.1:N:" prefix: the message names
// the port already.
func unwrapOp(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

// stopServer stops serving (the generation under way is stopped) and returns
// a wait for its requests to end: the engine must stay open until then.
func (a *App) stopServer() (wait func()) {
	ls := &a.server
	ls.err = nil
	if ls.srv == nil {
		a.refreshServer()
		return func() {}
	}
	ls.srv.Close()
	ls.stop()
	done := ls.done
	*ls = localServer{log: ls.log, view: ls.view}
	a.refreshServer()
	return func() { <-done }
}

// serverLogged adds a finished request to the log (of this server or one
// stopped since: the log outlives a model change).
func (a *App) serverLogged(e server.Entry) {
	ls := &a.server
	ls.log = append(ls.log, e)
	if len(ls.log) > serverLogSize {
		ls.log = ls.log[len(ls.log)-serverLogSize:]
	}
	a.refreshServer()
}

// setServerOn is the switch: on, it serves (now, or once a model loads);
// off, it stops. The choice is kept for the next start.
func (a *App) setServerOn(on bool) {
	a.settings.ServerOn = on
	a.saveSettings()
	if on {
		a.startServer()
	} else {
		a.stopServer()
	}
	a.win.SetMainMenu(a.mainMenu())
}

// serverURL is the base address clients are given.
func (a *App) serverURL() string {
	if a.server.addr != "" {
		return "http://" + a.server.addr
	}
	return fmt.Sprintf("http://127.0.0.1:%d", a.settings.serverPort())
}

// serverStatus says what the server is doing, in a line.
func (a *App) serverStatus() string {
	ls := &a.server
	switch {
	case !a.settings.ServerOn:
		return "Off. Turn it on to let other apps on this computer use the loaded model."
	case ls.err != nil:
		return "Not serving: " + ls.err.Error()
	case ls.srv == nil:
		return "On: load a model to serve it."
	}
	if ls.parallel > 1 {
		line := fmt.Sprintf("Serving %s · %d generating (up to %d at once, stepped together) · %d waiting", ls.model, ls.running, ls.parallel, ls.waiting)
		if ls.running > 0 && ls.rate > 0 {
			line += fmt.Sprintf(" · %.1f tok/s together", ls.rate)
		}
		return line
	}
	return fmt.Sprintf("Serving %s · %d generating · %d waiting", ls.model, ls.running, ls.waiting)
}

// logLine is one request as the log shows it.
func logLine(e server.Entry) string {
	line := fmt.Sprintf("%s  %s  %s  %d", e.Time.Format(time.TimeOnly), e.Endpoint, e.Client, e.Status)
	if e.PromptTokens > 0 || e.GeneratedTokens > 0 {
		line += fmt.Sprintf("  prompt %d (reused %d) · reply %d", e.PromptTokens, e.ReusedTokens, e.GeneratedTokens)
		if e.TokensPerSecond > 0 {
			line += fmt.Sprintf(" · %.1f tok/s", e.TokensPerSecond)
		}
	}
	return line
}

// rateEvery is how often the Local server's rate of all replies together is
// measured while they are stepped together.
const rateEvery = 500 * time.Millisecond

// measureRate keeps a.server.rate, the tokens a second that srv's batches
// send all together, until ctx ends (the server stops).
func (a *App) measureRate(ctx context.Context, srv *server.Server, batch *engine.Parallel) {
	tick := time.NewTicker(rateEvery)
	defer tick.Stop()
	last, at := batch.Tokens(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			n := batch.Tokens()
			rate := float64(n-last) / now.Sub(at).Seconds()
			last, at = n, now
			a.do(func() {
				if a.server.srv == srv && a.server.rate != rate {
					a.server.rate = rate
					a.refreshServer()
				}
			})
		}
	}
}
