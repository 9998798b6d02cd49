package ui

import (
	"fmt"
	"os"
	"path/filepath"
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

// showAlreadyRunning says that another Bagel uses this data folder, and offers
// to quit or go on anyway.
func (a *App) showAlreadyRunning(dataDir string) {
	a.confirm("Bagel is already running",
		fmt.Sprintf("Another Bagel window is open on the same chats (%s). Two at once each show a chat list the other one changes.\n\nQuit this one? (Switch to the other window to go on there.)", dataDir),
		func(quit bool) {
			if quit {
				a.win.Close()
			}
		})
}
