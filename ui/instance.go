package ui

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// One app a data folder: a second Bagel on the same chats would show lists
// that the other one changes behind its back. The first holds a lock on
// DATA/bagel.lock for as long as it runs (released when the process ends,
// however it ends); a second one finds it held and says so first thing.

// lockDataDir takes the data folder's lock; held is false when another app
// holds it (f is then closed and nil).
func lockDataDir(dataDir string) (f *os.File, held bool, err error) {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, false, err
	}
	f, err = os.OpenFile(filepath.Join(dataDir, "bagel.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false, err
	}
	if !tryLock(f) {
		f.Close()
		return nil, false, nil
	}
	return f, true, nil
}

// showAlreadyRunning says that another Bagel uses this data folder — brought
// to the front when it answered, opening the model this one was given —
// and offers to quit or go on anyway.
func (a *App) showAlreadyRunning(dataDir string) {
	raised := raiseOther(dataDir, a.openAtStart)
	what := "Switch to the other window to go on there."
	if raised {
		what = "The other window has been brought to the front."
		if a.openAtStart != "" {
			what = "The other window has been brought to the front, and opens " + a.openAtStart + "."
		}
	}
	a.confirm("Bagel is already running",
		fmt.Sprintf("Another Bagel window is open on the same chats (%s). Two at once each show a chat list the other one changes.\n\n%s Quit this one?", dataDir, what),
		func(quit bool) {
			if quit {
				a.win.Close()
			}
		})
}

// The app that holds a data folder listens on DATA/bagel.sock for a second
// one's requests, a line each: "raise" (show the window, in front) and
// "open DIR" (open that model folder too).

// listenForOthers serves the data folder's socket until the app shuts down.
func (a *App) listenForOthers(dataDir string) {
	path := filepath.Join(dataDir, "bagel.sock")
	os.Remove(path) // a socket left by an app that did not end cleanly: this one holds the lock now
	ln, err := net.Listen("unix", path)
	if err != nil {
		return // a second app then only says that this one runs
	}
	a.othersListener = ln
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return // closed at shutdown
			}
			go a.serveOther(conn)
		}
	}()
}

// serveOther reads a second app's requests (a few lines, a second at most).
func (a *App) serveOther(conn net.Conn) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Second))
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "raise":
			a.do(func() {
				a.raised++
				a.win.Show()
				a.win.RequestFocus()
			})
		case strings.HasPrefix(line, "open "):
			dir := strings.TrimPrefix(line, "open ")
			if st, err := os.Stat(dir); err == nil && st.IsDir() {
				a.do(func() { a.openModel(dir) })
			}
		}
	}
}

// raiseOther asks the app holding dataDir to come to the front (and open
// model, when given); false when it does not answer.
func raiseOther(dataDir, model string) bool {
	conn, err := net.DialTimeout("unix", filepath.Join(dataDir, "bagel.sock"), time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Second))
	msg := "raise\n"
	if model != "" {
		msg += "open " + model + "\n"
	}
	_, err = conn.Write([]byte(msg))
	return err == nil
}
