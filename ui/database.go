package ui

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"bagel/store"
)

// A chat database that cannot be opened (corrupt, read-only, from a newer
// Bagel) must not stop the app with one line on stderr: the window opens on a
// stand-in database in a temporary folder, and the first thing it shows says
// what is wrong and where the file is, and offers to move the file aside and
// start fresh, or to quit. The file is never deleted.

// dbProblem is the chat database New could not open.
type dbProblem struct {
	path    string
	err     error
	tempDir string // the stand-in database's folder, removed once it is replaced
}

// openStore opens the chat database at path; when it cannot, it opens a
// stand-in in a temporary folder and returns the problem.
func openStore(path string) (*store.Store, *dbProblem, error) {
	s, err := store.Open(path)
	if err == nil {
		return s, nil, nil
	}
	tmp, terr := os.MkdirTemp("", "bagel-chats-")
	if terr != nil {
		return nil, nil, err
	}
	stand, serr := store.Open(filepath.Join(tmp, "chats.db"))
	if serr != nil {
		os.RemoveAll(tmp)
		return nil, nil, err
	}
	return stand, &dbProblem{path: path, err: err, tempDir: tmp}, nil
}

// showDatabaseProblem asks what to do about the chat database that did not
// open: move it aside (renamed beside itself, with its -wal and -shm files)
// and start with a new one, or quit.
func (a *App) showDatabaseProblem() {
	p := a.dbProblem
	text := widget.NewLabel(fmt.Sprintf("Bagel could not open its saved chats:\n\n%s\n\nThe file is %s. "+
		"Bagel can move it aside (it stays beside the new one, renamed, and nothing is deleted) and start with no chats, "+
		"or quit so that you can look at it first. Until then, chats are not saved.", sentence(p.err.Error()), p.path))
	text.Wrapping = fyne.TextWrapWord
	text.Selectable = true
	body := container.NewGridWrap(fyne.NewSize(520, 220), text)
	var d *dialog.CustomDialog
	moveAside := widget.NewButton("Move aside and start fresh", func() {
		d.Hide()
		if err := a.moveDatabaseAside(); err != nil {
			a.showError("The chat database could not be moved aside", err)
		}
	})
	moveAside.Importance = widget.HighImportance
	quit := widget.NewButton("Quit", func() {
		d.Hide()
		a.win.Close()
	})
	d = dialog.NewCustomWithoutButtons("The saved chats cannot be opened", body, a.win)
	d.SetButtons([]fyne.CanvasObject{quit, moveAside})
	a.showDialog(d, nil)
}

// moveDatabaseAside renames the broken database (and its -wal and -shm
// files) to PATH.broken-TIME, opens a new one at its path in place of the
// stand-in, and shows its (no) chats.
func (a *App) moveDatabaseAside() error {
	p := a.dbProblem
	aside := fmt.Sprintf("%s.broken-%s", p.path, time.Now().Format("20060102-150405"))
	if err := os.Rename(p.path, aside); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("renaming %s: %w (quit, and move or repair it by hand)", p.path, err)
	}
	for _, ext := range []string{"-wal", "-shm"} {
		if err := os.Rename(p.path+ext, aside+ext); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("renaming %s: %w", p.path+ext, err)
		}
	}
	fresh, err := store.Open(p.path)
	if err != nil {
		return err
	}
	a.store.Close()
	os.RemoveAll(p.tempDir)
	a.store, a.dbProblem = fresh, nil
	a.drafts = map[int64]string{}
	a.conv, a.msgs = nil, nil
	a.reloadConversations()
	a.showConversation(nil, nil)
	a.showMessage("Started with no chats", "The old chat database is kept as "+aside+".")
	return nil
}
