package ui

import (
	"slices"

	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"
)

// The app's dialogs go through showDialog, which keeps them in opening order
// so that Esc closes the one on top as its Cancel or Close button would
// (Fyne's dialogs take no key of their own). A file chooser is tracked too.

// showDialog shows d and tracks it until it closes; onClosed (may be nil)
// runs when it does, however it was closed.
func (a *App) showDialog(d dialog.Dialog, onClosed func()) {
	a.dialogs = append(a.dialogs, d)
	d.SetOnClosed(func() {
		a.dialogs = slices.DeleteFunc(a.dialogs, func(x dialog.Dialog) bool { return x == d })
		if onClosed != nil {
			onClosed()
		}
	})
	d.Show()
}

// confirm asks a yes/no question in a tracked dialog; Esc answers no, Enter
// yes (enterOnTop).
func (a *App) confirm(title, message string, answer func(bool)) {
	a.showDialog(dialog.NewConfirm(title, message, answer, a.win), nil)
}

// enterOnTop answers the dialog on top as Enter should: a plain question
// yes, a danger one (confirmDanger) no — its Yes takes a click. It reports
// whether a confirmation was on top.
func (a *App) enterOnTop() bool {
	n := len(a.dialogs)
	if n == 0 {
		return false
	}
	c, ok := a.dialogs[n-1].(*dialog.ConfirmDialog)
	if !ok {
		return false
	}
	if a.danger[c] {
		c.Dismiss()
	} else {
		c.Confirm()
	}
	return true
}

// confirmDanger asks before something that cannot be undone or costs much:
// its Yes is marked as danger, so No is the plain choice (and Esc answers
// no).
func (a *App) confirmDanger(title, message string, answer func(bool)) *dialog.ConfirmDialog {
	d := dialog.NewConfirm(title, message, answer, a.win)
	a.showDanger(d)
	return d
}

// showDanger shows the confirmation d with its Yes marked as danger, so that
// No is the plain choice: Esc and Enter answer no.
func (a *App) showDanger(d *dialog.ConfirmDialog) {
	d.SetConfirmImportance(widget.DangerImportance)
	if a.danger == nil {
		a.danger = map[*dialog.ConfirmDialog]bool{}
	}
	a.danger[d] = true
	a.showDialog(d, func() { delete(a.danger, d) })
}

// closeTopDialog closes the dialog on top as Cancel would (a confirmation
// answers no, a form is not submitted); false when none is open.
func (a *App) closeTopDialog() bool {
	n := len(a.dialogs)
	if n == 0 {
		return false
	}
	a.dialogs[n-1].Dismiss()
	return true
}
