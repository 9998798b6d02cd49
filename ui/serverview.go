package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// serverView is the Local server dialog: the switch and its port, the
// addresses to give clients (the OpenAI one with a copy button), what the
// server is doing, and the newest requests first.
type serverView struct {
	on        *widget.Check
	port      *widget.Entry
	parallel  *widget.Select
	addresses *widget.Label
	copy      *widget.Button
	status    *widget.Label
	log       *widget.List
	lines     []string // the log, newest first, as the list shows it
}

// showServer opens the Local server dialog.
func (a *App) showServer() {
	v := &serverView{}
	a.server.view = v
	v.port = widget.NewEntry()
	v.port.SetText(strconv.Itoa(a.settings.serverPort()))
	v.port.Validator = func(s string) error {
		_, err := parsePort(s)
		return err
	}
	v.parallel = widget.NewSelect(parallelChoices, func(s string) {
		n := parallelOf(s)
		if n != max(1, a.settings.ServerParallel) {
			a.settings.ServerParallel = n
			a.saveSettings()
		}
	})
	v.parallel.SetSelected(parallelChoice(a.settings.ServerParallel))
	v.on = widget.NewCheck("Serve the loaded model to other apps on this computer", nil)
	v.on.SetChecked(a.settings.ServerOn)
	v.on.OnChanged = func(on bool) {
		if on == a.settings.ServerOn {
			return
		}
		if on {
			port, err := parsePort(v.port.Text)
			if err != nil {
				v.on.SetChecked(false)
				a.showError("The server cannot start", err)
				return
			}
			a.settings.ServerPort = port
		}
		a.setServerOn(on)
	}
	v.addresses = widget.NewLabel("")
	v.addresses.Wrapping = fyne.TextWrapWord
	v.copy = widget.NewButtonWithIcon("Copy the OpenAI address", theme.ContentCopyIcon(), nil)
	v.copy.OnTapped = func() {
		a.fyne.Clipboard().SetContent(a.serverURL() + "/v1")
		v.copy.SetText("Copied " + a.serverURL() + "/v1")
		time.AfterFunc(2*time.Second, func() {
			a.do(func() { v.copy.SetText("Copy the OpenAI address") })
		})
	}
	v.status = widget.NewLabel("")
	v.status.Wrapping = fyne.TextWrapWord
	v.log = widget.NewList(func() int { return len(v.lines) },
		func() fyne.CanvasObject { return widget.NewLabel("") },
		func(i widget.ListItemID, o fyne.CanvasObject) { o.(*widget.Label).SetText(v.lines[i]) })
	top := container.NewVBox(v.on,
		container.NewBorder(nil, nil, widget.NewLabel("Port"), nil, v.port),
		container.NewBorder(nil, nil, widget.NewLabel("Requests at once"), nil, v.parallel),
		v.addresses, container.NewHBox(v.copy), v.status, widget.NewLabelWithStyle("Requests, newest first", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
	content := container.NewBorder(top, nil, nil, nil, v.log)
	d := dialog.NewCustom("Local server", "Close", content, a.win)
	d.Resize(fyne.NewSize(760, 560))
	a.refreshServer()
	a.showDialog(d, func() {
		if a.server.view == v {
			a.server.view = nil
		}
	})
}

// parallelChoices are the Requests at once the dialog offers: one (each
// reply with speculative decoding, one after another) or
// several stepped together (engine.Parallel).
var parallelChoices = []string{"1 (one after another)", "2 (stepped together)", "4 (stepped together)", "8 (stepped together)"}

// parallelOf is the count a choice names.
func parallelOf(choice string) int {
	n, _ := strconv.Atoi(strings.Fields(choice)[0])
	return max(1, n)
}

// parallelChoice is the choice for a setting (the nearest offered below it).
func parallelChoice(n int) string {
	best := parallelChoices[0]
	for _, c := range parallelChoices {
		if parallelOf(c) <= max(1, n) {
			best = c
		}
	}
	return best
}

// parsePort reads the port entry.
func parsePort(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("the port %q is not a number from 1 to 65535", strings.TrimSpace(s))
	}
	return n, nil
}

// refreshServer shows the server's state in its dialog, when open.
func (a *App) refreshServer() {
	v := a.server.view
	if v == nil {
		return
	}
	v.on.SetChecked(a.settings.ServerOn)
	if a.settings.ServerOn {
		v.port.Disable() // the port and the requests at once are chosen while the server is off
		v.parallel.Disable()
	} else {
		v.port.Enable()
		v.parallel.Enable()
	}
	url := a.serverURL()
	v.addresses.SetText(fmt.Sprintf("OpenAI API (Codex, Continue, the openai SDKs): %s/v1\n"+
		"Anthropic API (Claude Code: ANTHROPIC_BASE_URL): %s\nOllama API: %s", url, url, url))
	v.status.SetText(a.serverStatus())
	v.lines = v.lines[:0]
	for i := len(a.server.log) - 1; i >= 0; i-- {
		v.lines = append(v.lines, logLine(a.server.log[i]))
	}
	v.log.Refresh()
}
