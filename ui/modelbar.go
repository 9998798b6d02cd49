package ui

import (
	"bagel/engine"

	"path/filepath"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// modelBar is the strip at the top: the loaded model and its backend, the
// model actions, and a progress bar while a model is checked or loaded.
type modelBar struct {
	a        *App
	root     fyne.CanvasObject
	name     *middleLabel
	detail   *widget.Label
	open     *widget.Button
	recent   *widget.Button
	unload   *widget.Button
	cancel   *widget.Button // shown while a model is checked or loaded
	progress *widget.ProgressBar
	busy     *widget.ProgressBarInfinite
	// lastReply is how fast the last reply went, shown after the model's
	// details until the next one starts or another model loads.
	lastReply string
}

func newModelBar(a *App) *modelBar {
	b := &modelBar{a: a}
	b.name = newMiddleLabel(fyne.TextStyle{Bold: true})
	b.detail = widget.NewLabel("")
	b.detail.Importance = widget.LowImportance
	b.detail.Truncation = fyne.TextTruncateEllipsis
	b.open = widget.NewButtonWithIcon("Open model folder…", theme.FolderOpenIcon(), a.chooseModelFolder)
	b.recent = widget.NewButtonWithIcon("Recent", theme.HistoryIcon(), b.showRecent)
	b.unload = widget.NewButtonWithIcon("Unload", theme.MediaStopIcon(), a.unloadModel)
	b.cancel = widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), a.cancelLoading)
	b.cancel.Hide()
	settings := widget.NewButtonWithIcon("Settings", theme.SettingsIcon(), a.showSettings)
	b.progress = widget.NewProgressBar()
	b.progress.Hide()
	b.busy = widget.NewProgressBarInfinite()
	b.busy.Stop()
	b.busy.Hide()
	buttons := container.NewHBox(b.open, b.recent, b.unload, b.cancel, settings)
	// The progress takes the detail's place (empty while busy), so the bar
	// keeps its height and the window does not jump when a load starts. The
	// name takes what it needs, up to 60% of the room, and gives way (a
	// middle ellipsis) before the window grows.
	middle := container.New(&nameDetailLayout{name: b.name}, b.name, container.NewStack(b.detail, b.progress, b.busy))
	row := container.NewBorder(nil, nil, widget.NewIcon(theme.ComputerIcon()), buttons, middle)
	b.root = container.NewVBox(row, widget.NewSeparator())
	return b
}

// refresh shows the current model (or its absence) and hides the progress.
func (b *modelBar) refresh() {
	a := b.a
	b.progress.Hide()
	b.busy.Stop()
	b.busy.Hide()
	b.cancel.Hide()
	switch {
	case a.remote != nil:
		b.name.SetText(a.modelName())
		detail := "remote, on " + a.remote.client.Host() + " · figures measured here, over the network"
		if b.lastReply != "" {
			detail = b.lastReply + " · " + detail
		}
		b.detail.SetText(detail)
	case a.eng != nil:
		b.name.SetText(a.modelName())
		detail := a.eng.BackendName + " · " + humanCount(a.eng.ContextLength()) + " context · " + memoryText(a.eng.Memory())
		if ok, _ := a.eng.CanReadImages(); ok {
			detail += " · sees images: drop one on the window"
		}
		if b.lastReply != "" {
			detail = b.lastReply + " · " + detail
		}
		b.detail.SetText(detail)
	default:
		b.name.SetText("No model loaded")
		b.detail.SetText("drop an MLX model folder on the window, or open one")
	}
	b.open.Enable()
	b.unload.Disable()
	if a.ready() {
		b.unload.Enable()
	}
	if len(a.settings.Recent) > 0 {
		b.recent.Enable()
	} else {
		b.recent.Disable()
	}
}

// showBusy shows a stage and its progress (fraction < 0: not measurable).
func (b *modelBar) showBusy(text string, fraction float64) {
	b.name.SetText(text)
	b.detail.SetText("")
	b.unload.Disable()
	b.cancel.Show()
	if fraction < 0 {
		b.progress.Hide()
		b.busy.Show()
		b.busy.Start()
		return
	}
	b.busy.Stop()
	b.busy.Hide()
	b.progress.SetValue(fraction)
	b.progress.Show()
}

// showRecent pops up the recent models under the button.
func (b *modelBar) showRecent() {
	menu := fyne.NewMenu("", b.a.recentItems()...)
	pos := fyne.CurrentApp().Driver().AbsolutePositionForObject(b.recent)
	widget.ShowPopUpMenuAtPosition(menu, b.a.win.Canvas(), pos.Add(fyne.NewPos(0, b.recent.Size().Height)))
}

// recentItems are the recent models as menu items (the loaded one marked).
func (a *App) recentItems() []*fyne.MenuItem {
	var items []*fyne.MenuItem
	for _, dir := range a.settings.Recent {
		item := fyne.NewMenuItem(modelLabel(dir)+"  —  "+filepath.Dir(dir), func() { a.openModel(dir) })
		item.Checked = dir == a.modelDir
		items = append(items, item)
	}
	if len(items) == 0 {
		item := fyne.NewMenuItem("No recent models", nil)
		item.Disabled = true
		items = append(items, item)
	}
	return items
}

// showActivity puts what a streaming reply is doing, and how fast, in the
// detail line, where the eye is while reading the reply: users of the
// rivals ask for the speed next to the status, not only in a panel that may
// be hidden.
func (b *modelBar) showActivity(v perfView) {
	b.lastReply = ""
	b.detail.SetText(activityText(v))
}

// showFinished shows the model's details again, led by how fast the reply
// that just finished went.
func (b *modelBar) showFinished(v perfView) {
	b.lastReply = replySpeedText(v.Stats)
	b.refresh()
}

// activityText is a streaming reply's phase and speeds: the prompt's
// progress and rate while it is read, then the decode rate now and the time
// to the first token.
func activityText(v perfView) string {
	st := v.Stats
	text := v.Phase
	switch {
	case st.GeneratedTokens == 0 && st.PrefillTokensPerSec > 0:
		text += " · prompt " + rate(st.PrefillTokensPerSec) + " tok/s"
	case st.GeneratedTokens > 0:
		if v.DecodeNow > 0 {
			text += " · " + rate(v.DecodeNow) + " tok/s"
		}
		if st.TimeToFirstToken > 0 {
			text += " · first token " + duration(st.TimeToFirstToken)
		}
	}
	return text
}

// replySpeedText sums up a finished reply's speeds for the detail line;
// empty when it made no token.
func replySpeedText(st engine.Stats) string {
	if st.GeneratedTokens == 0 {
		return ""
	}
	text := "last reply " + rate(st.DecodeTokensPerSec) + " tok/s"
	if st.TimeToFirstToken > 0 {
		text += ", first token " + duration(st.TimeToFirstToken)
	}
	return text
}

// nameDetailLayout puts the model's name then its detail on one row: the
// name at its full width when there is room (at most 60% of the row), the
// detail in the rest; both shrink (ellipses) rather than widen the window.
type nameDetailLayout struct{ name *middleLabel }

func (l *nameDetailLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	full := l.name.measure(l.name.full)
	w := min(full, 0.6*size.Width)
	objs[0].Move(fyne.NewPos(0, 0))
	objs[0].Resize(fyne.NewSize(w, size.Height))
	objs[1].Move(fyne.NewPos(w, 0))
	objs[1].Resize(fyne.NewSize(max(0, size.Width-w), size.Height))
}

func (l *nameDetailLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	a, b := objs[0].MinSize(), objs[1].MinSize()
	return fyne.NewSize(a.Width+b.Width, max(a.Height, b.Height))
}
