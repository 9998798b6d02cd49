package ui

import (
	"fmt"
	"runtime/debug"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"
)

// showError puts an error in front of the user as a dialog: a title saying what
// failed and the error's sentence (which names the file and the problem). Long
// messages wrap and scroll rather than stretch the window.
func (a *App) showError(title string, err error) {
	a.showMessage(title, sentence(err.Error()))
}

// showMessage is a dialog with a title, a wrapped text and a Close button.
func (a *App) showMessage(title, text string) {
	label := widget.NewLabel(text)
	label.Wrapping = fyne.TextWrapWord
	label.Selectable = true // so it can be copied into a bug report
	var body fyne.CanvasObject = label
	if strings.Count(text, "\n") > 12 || len(text) > 1200 {
		scroll := container.NewVScroll(label)
		scroll.SetMinSize(fyne.NewSize(520, 300))
		body = scroll
	}
	d := dialog.NewCustom(title, "Close", body, a.win)
	d.Resize(fyne.NewSize(560, 0))
	a.showDialog(d, nil)
}

// sentence capitalises the first letter of an error message for a dialog,
// unless the message starts with a file name or path ("config.json: ...").
func sentence(s string) string {
	first, _, _ := strings.Cut(s, " ")
	if s == "" || strings.ContainsAny(first, "./\\_") {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// goSafe runs f on a new goroutine; a panic there becomes an error dialog
// instead of ending the app (and with it, the chat being written).
func (a *App) goSafe(what string, f func()) {
	go func() {
		defer func() {
			if r := recover(); r != nil {
				err := fmt.Errorf("internal error while %s: %v\n\n%s", what, r, debug.Stack())
				a.do(func() { a.showError("Something went wrong", err) })
			}
		}()
		f()
	}()
}
