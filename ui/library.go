package ui

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"bagel/assets"
	"bagel/engine"
	"bagel/hub"
)

// recommendedModel is the placeholder of the download box: the model the app
// is tuned for.
const recommendedModel = "mlx-community/Qwen3.5-35B-A3B-4bit"

// library is the Models dialog: the models on this computer (the Hugging Face
// cache, LM Studio's folder, the recent folders) with Load, Show (in the file
// manager) and, for the Hub cache, Delete; and a download box that fetches
// ORG/NAME from the Hub into its cache and loads it when done.
type library struct {
	a        *App
	dlg      dialog.Dialog
	list     *fyne.Container // the local models' rows
	found    *fyne.Container // the Hub search's results
	search   *widget.Button
	closed   bool                 // the dialog has closed: late answers are dropped
	open     func(*url.URL) error // shows a folder: the app's OpenURL (tests record it)
	name     *widget.Entry
	start    *widget.Button
	pause    *widget.Button
	cancel   *widget.Button
	paused   atomic.Bool // the download in progress was stopped to resume later, not cancelled
	progress *widget.ProgressBar
	status   *widget.Label
	stop     context.CancelFunc    // of the download in progress; nil when none
	confirm  *dialog.ConfirmDialog // "download a model that does not fit?", while asked (tests answer it)
}

// showLibrary opens the Models dialog.
func (a *App) showLibrary() {
	l := &library{a: a}
	l.name = widget.NewEntry()
	l.name.SetPlaceHolder(recommendedModel + " (Download), or words to search for")
	l.start = widget.NewButtonWithIcon("Download", theme.DownloadIcon(), l.download)
	l.start.Importance = widget.HighImportance
	l.cancel = widget.NewButton("Cancel", func() {
		if l.stop != nil {
			l.stop()
		}
	})
	l.cancel.Disable()
	l.pause = widget.NewButtonWithIcon("Pause", theme.MediaPauseIcon(), func() {
		if l.stop != nil {
			l.paused.Store(true)
			l.stop()
		}
	})
	l.pause.Disable()
	l.search = widget.NewButtonWithIcon("Search", theme.SearchIcon(), l.searchHub)
	// Enter searches (the costly Download takes its button).
	l.name.OnSubmitted = func(string) {
		if !l.search.Disabled() {
			l.searchHub()
		}
	}
	l.found = container.NewVBox()
	l.progress = widget.NewProgressBar()
	l.progress.Hide()
	l.status = widget.NewLabel("Downloads go to the Hugging Face cache (" + hub.CacheDir() + "), shared with mlx-lm.")
	l.status.Wrapping = fyne.TextWrapWord
	l.status.Importance = widget.LowImportance

	l.open = a.fyne.OpenURL
	l.list = container.NewVBox()
	l.fill()
	content := container.NewBorder(
		container.NewVBox(
			widget.NewLabelWithStyle("Download from Hugging Face", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
			container.NewBorder(nil, nil, nil, container.NewHBox(l.search, l.start, l.pause, l.cancel), l.name),
			l.progress, l.status,
		), nil, nil, nil,
		container.NewVScroll(container.NewVBox(l.found,
			widget.NewLabelWithStyle("On this computer", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
			l.list, l.remoteRows())))
	l.dlg = dialog.NewCustom("Models", "Close", content, a.win)
	onClosed := func() {
		l.closed = true
		if l.stop != nil { // closing the dialog pauses a download in progress
			l.paused.Store(true)
			l.stop()
		}
	}
	// A download cut short is resumed by the same button, which says so
	// while the box names it.
	l.name.OnChanged = func(text string) {
		if p := a.settings.PendingDownload; p != "" && strings.TrimSpace(text) == p {
			l.start.SetText("Resume")
		} else {
			l.start.SetText("Download")
		}
	}
	if p := a.settings.PendingDownload; p != "" {
		l.name.SetText(p)
		l.status.SetText("The download of " + p + " stopped before it finished (paused, or Bagel closed); Resume goes on from where it stopped.")
	}
	l.dlg.Resize(fyne.NewSize(720, 520))
	a.lib = l
	a.showDialog(l.dlg, onClosed)
}

// fill lists the models on this computer, afresh, then works out off the UI
// thread whether each runnable one fits this machine's memory at the context
// length of the settings, and adds that to its row.
func (l *library) fill() {
	l.list.RemoveAll()
	var runnable []hub.LocalModel
	var infos []*widget.Label
	for _, m := range l.models() {
		row, info, runs := l.row(m)
		l.list.Add(row)
		if runs {
			runnable, infos = append(runnable, m), append(infos, info)
		}
	}
	if len(l.list.Objects) == 0 {
		l.list.Add(widget.NewLabel("No models found in the Hugging Face cache or LM Studio's folder yet."))
	}
	if len(runnable) == 0 {
		return
	}
	a := l.a
	ctxLen, backend := a.settings.ContextLength, a.settings.Backend
	a.goSafe("estimating the models' memory", func() {
		budget := a.memoryBudget(backend)
		for i, m := range runnable {
			verdict := "cannot be read: "
			if mem, err := engine.Estimate(m.Dir, ctxLen); err == nil {
				verdict, _ = budget.Verdict(mem)
			} else {
				verdict += err.Error()
			}
			info := infos[i]
			a.do(func() { info.SetText(info.Text + " · " + verdict) })
		}
	})
}

// models are the local models the dialog lists: the demo first (when this
// installation has one), then the Hub cache, LM Studio's folder and the
// recent folders.
func (l *library) models() []hub.LocalModel {
	found := hub.Library(hub.CacheDir(), hub.LMStudioDir(), l.a.settings.Recent)
	demo := demoDir()
	if demo == "" {
		return found
	}
	out := []hub.LocalModel{hub.Describe(assets.DemoName, demo, "demo, trained on two public-domain books")}
	for _, m := range found {
		if !isDemo(m.Dir) {
			out = append(out, m)
		}
	}
	return out
}

// errNotDownloaded is the answer No to "download a model that does not fit?".
var errNotDownloaded = errors.New("not downloaded")

// checkFit is the download's memory check, on its goroutine: a model that
// fits (or is tight) goes ahead with its verdict in the status line; one that
// does not fit asks first, and No stops it before anything is written.
func (l *library) checkFit(ctx context.Context, name string, ctxLen int, backend string) func([]byte, int64) error {
	a := l.a
	return func(config []byte, n int64) error {
		mem, err := engine.EstimateConfig(config, n, ctxLen)
		if err != nil {
			return fmt.Errorf("%s: config.json: %w", name, err)
		}
		verdict, tooBig := a.memoryBudget(backend).Verdict(mem)
		if !tooBig {
			a.do(func() {
				l.status.SetText(fmt.Sprintf("%s (%.1f GB): %s. Downloading…", name, float64(n)/1e9, verdict))
			})
			return nil
		}
		answer := make(chan bool, 1)
		a.do(func() {
			l.confirm = dialog.NewConfirm("This model does not fit in memory",
				fmt.Sprintf("%s %s at a context length of %d tokens.\n\nDownload it anyway?", name, strings.TrimPrefix(verdict, "does not fit: "), effectiveContext(ctxLen)),
				func(ok bool) { answer <- ok }, a.win)
			a.showDanger(l.confirm) // costly: No is the plain choice
		})
		select {
		case ok := <-answer:
			if !ok {
				return errNotDownloaded
			}
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// row is one local model: its name, where it is, its size, Load or why not,
// Show, and Delete for what the Hub cache holds (Bagel deletes nothing else).
// It returns the detail label and whether the model can be loaded.
func (l *library) row(m hub.LocalModel) (fyne.CanvasObject, *widget.Label, bool) {
	size := fmt.Sprintf("%.1f GB", float64(m.Bytes)/1e9)
	if m.Bytes < 100e6 {
		size = fmt.Sprintf("%.1f MB", float64(m.Bytes)/1e6)
	}
	detail := fmt.Sprintf("%s · %s · %s", m.Source, size, m.ModelType)
	if m.Vision {
		detail += " · sees images"
	}
	load := widget.NewButton("Load", func() {
		l.dlg.Hide()
		l.a.openModel(m.Dir)
	})
	runs := false
	switch {
	case m.Problem != "":
		detail += " · " + m.Problem
		load.Disable()
	case !engine.SupportedModelType(m.ModelType):
		detail += " · not a model type Bagel runs"
		load.Disable()
	default:
		runs = true
	}
	show := widget.NewButtonWithIcon("", theme.FolderOpenIcon(), func() {
		if err := l.open(&url.URL{Scheme: "file", Path: filepath.ToSlash(m.Dir)}); err != nil {
			l.status.SetText(sentence("Showing " + m.Dir + ": " + err.Error()))
		}
	})
	buttons := container.NewHBox(show, load)
	if m.Repo != "" {
		buttons.Add(widget.NewButtonWithIcon("", theme.DeleteIcon(), func() { l.confirmDelete(m) }))
	}
	info := widget.NewLabel(detail)
	info.Importance = widget.LowImportance
	name := widget.NewLabel(m.Name)
	if inUse := l.a.eng != nil && filepath.Clean(l.a.modelDir) == filepath.Clean(m.Dir); inUse {
		name.SetText(m.Name + " (in use)")
		name.TextStyle = fyne.TextStyle{Bold: true}
		load.SetText("Loaded")
		load.Disable()
	}
	return container.NewBorder(nil, nil, nil, buttons, container.NewVBox(name, info)), info, runs
}

// confirmDelete asks, then deletes m's repository from the Hub cache. The
// model in use (or one loading) and a download in progress are refused: their
// files are open.
func (l *library) confirmDelete(m hub.LocalModel) {
	a := l.a
	cache := hub.CacheDir()
	dir, err := hub.RepoDir(cache, m.Repo)
	switch {
	case err != nil:
		l.status.SetText(sentence(err.Error()))
		return
	case l.stop != nil:
		l.status.SetText("A download is running; wait for it or cancel it before deleting a model.")
		return
	case a.loading:
		l.status.SetText("A model is loading; wait for it before deleting a model.")
		return
	case inFolder(a.modelDir, dir):
		l.status.SetText(m.Repo + " is the model in use; load another one before deleting it.")
		return
	}
	msg := fmt.Sprintf("Delete %s from the Hugging Face cache (%s)?\n\nEvery revision of it is removed (%.1f GB in this one). "+
		"mlx-lm and other apps that share the cache lose it too. This cannot be undone.", m.Repo, cache, float64(m.Bytes)/1e9)
	a.confirmDanger("Delete model", msg, func(ok bool) {
		if !ok {
			return
		}
		l.status.SetText("Deleting " + m.Repo + "…")
		a.goSafe("deleting a model", func() {
			err := hub.Delete(cache, m.Repo)
			a.do(func() {
				if err != nil {
					l.status.SetText(sentence(err.Error()))
				} else {
					l.status.SetText("Deleted " + m.Repo + ".")
				}
				a.forgetModelsIn(dir)
				l.fill()
			})
		})
	})
}

// forgetModelsIn drops the recent models (and the last model) inside dir, a
// folder that no longer exists.
func (a *App) forgetModelsIn(dir string) {
	a.settings.Recent = slices.DeleteFunc(a.settings.Recent, func(d string) bool { return inFolder(d, dir) })
	if inFolder(a.settings.LastModel, dir) {
		a.settings.LastModel = ""
	}
	a.saveSettings()
	a.bar.refresh()
	a.chat.refreshEmpty()
	a.win.SetMainMenu(a.mainMenu())
}

// inFolder reports whether path is dir or inside it.
func inFolder(path, dir string) bool {
	if path == "" {
		return false
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// searchHub lists the Hub's MLX models whose name holds the box's text, most
// downloaded first, each with Download. Whether a model's type runs here is
// known for sure only from its config.json, read when it is downloaded; the
// list marks what the Hub's tags say.
func (l *library) searchHub() {
	a := l.a
	query := strings.TrimSpace(l.name.Text)
	if query == "" {
		query = "Qwen3.5"
	}
	l.search.Disable()
	l.status.SetText("Searching the Hub for “" + query + "”…")
	a.goSafe("searching the Hub", func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		models, err := hub.New().Search(ctx, query, hub.SearchOptions{Limit: 20})
		a.do(func() {
			if l.closed {
				return
			}
			l.search.Enable()
			l.found.RemoveAll()
			switch {
			case err != nil:
				l.status.SetText(sentence(err.Error()))
			case len(models) == 0:
				l.status.SetText("No MLX model on the Hub matches “" + query + "”.")
			default:
				if len(models) == 1 {
					l.status.SetText("1 MLX model on the Hub matches “" + query + "”.")
				} else {
					l.status.SetText(fmt.Sprintf("%d MLX models on the Hub match “%s”, most downloaded first.", len(models), query))
				}
				var infos []*widget.Label
				var runnable []hub.ModelSummary
				for _, m := range models {
					row, info := l.result(m)
					l.found.Add(row)
					if slices.ContainsFunc(m.Tags, engine.SupportedModelType) {
						infos, runnable = append(infos, info), append(runnable, m)
					}
				}
				l.sizeResults(runnable, infos)
			}
		})
	})
}

// sizeResults adds to each runnable result its size and whether it fits this
// machine at the settings' context length (its config.json and file sizes
// from the Hub, the estimate a download checks), off the UI thread.
func (l *library) sizeResults(models []hub.ModelSummary, infos []*widget.Label) {
	a := l.a
	ctxLen, backend := a.settings.ContextLength, a.settings.Backend
	a.goSafe("sizing the search results", func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		client, budget := hub.New(), a.memoryBudget(backend)
		for i, m := range models {
			p, err := client.Preview(ctx, m.ID, engine.SupportedModelType)
			if err != nil {
				continue
			}
			text := fmt.Sprintf(" · %.1f GB", float64(p.Bytes)/1e9)
			if mem, err := engine.EstimateConfig(p.Config, p.Bytes, ctxLen); err == nil {
				verdict, _ := budget.Verdict(mem)
				text += " · " + verdict
			}
			info := infos[i]
			a.do(func() {
				if !l.closed {
					info.SetText(info.Text + text)
				}
			})
		}
	})
}

// result is one search result: its name, downloads, what its tags say of its
// type, and Download.
func (l *library) result(m hub.ModelSummary) (fyne.CanvasObject, *widget.Label) {
	detail := fmt.Sprintf("%d downloads · ", m.Downloads)
	if i := slices.IndexFunc(m.Tags, engine.SupportedModelType); i >= 0 {
		detail += m.Tags[i] + ", a type Bagel runs"
	} else {
		detail += "no model type Bagel runs among its tags (checked from config.json when downloaded)"
	}
	get := widget.NewButtonWithIcon("Download", theme.DownloadIcon(), func() {
		l.name.SetText(m.ID)
		l.download()
	})
	info := widget.NewLabel(detail)
	info.Importance = widget.LowImportance
	info.Wrapping = fyne.TextWrapWord
	return container.NewBorder(nil, nil, nil, get, container.NewVBox(widget.NewLabel(m.ID), info)), info
}

// download fetches the named model (the placeholder when the box is empty)
// and loads it; progress is shown at most four times a second, and at most one
// update waits for the UI thread.
func (l *library) download() {
	a := l.a
	name := strings.TrimSpace(l.name.Text)
	if name == "" {
		// The placeholder names a 20 GB model: an empty box downloads
		// nothing.
		l.status.SetText("Type the model to download as ORG/NAME (for example " + recommendedModel + "), or words and Search.")
		a.win.Canvas().Focus(l.name)
		return
	}
	repo, rev, _ := strings.Cut(name, "@")
	ctx, cancel := context.WithCancel(context.Background())
	l.stop = cancel
	l.paused.Store(false)
	l.start.Disable()
	l.search.Disable()
	l.cancel.Enable()
	l.pause.Enable()
	a.settings.PendingDownload = name
	a.saveSettings()
	var done, total int64 // the last progress shown
	l.progress.SetValue(0)
	l.progress.Show()
	l.status.SetText("Asking the Hub for " + name + "…")
	// The download goroutines record the latest progress; a ticker shows it at
	// most four times a second, with at most one update waiting for the UI
	// thread, and the last figures before a stall are shown too.
	var latest atomic.Pointer[hub.Progress]
	var posting atomic.Bool
	finished := make(chan struct{})
	a.goSafe("showing a download's progress", func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		var shown *hub.Progress
		var speed downloadSpeed
		for {
			var now time.Time
			select {
			case <-finished:
				return
			case now = <-tick.C:
			}
			p := latest.Load()
			if p != nil {
				speed.add(now, p.Done)
			}
			if p == nil || p == shown || !posting.CompareAndSwap(false, true) {
				continue
			}
			shown = p
			line := fmt.Sprintf("%s: %.2f of %.2f GB", name, float64(p.Done)/1e9, float64(p.Total)/1e9)
			if rate := speed.describe(p.Total); rate != "" {
				line += " · " + rate
			}
			if p.File != "" {
				line += " · " + p.File
			}
			a.do(func() {
				defer posting.Store(false)
				if l.stop == nil {
					return // the download ended meanwhile: its own message stands
				}
				done, total = p.Done, p.Total
				l.progress.SetValue(float64(p.Done) / float64(max(p.Total, 1)))
				l.status.SetText(line)
			})
		}
	})
	ctxLen, backend := a.settings.ContextLength, a.settings.Backend
	check := l.checkFit(ctx, name, ctxLen, backend)
	a.goSafe("downloading a model", func() {
		dir, err := hub.New().Download(ctx, hub.CacheDir(), repo, hub.DownloadOptions{Revision: rev, Runs: engine.SupportedModelType, Check: check,
			Paused:   l.paused.Load,
			Progress: func(p hub.Progress) { latest.Store(&p) }})
		close(finished)
		cancelled := ctx.Err() != nil
		cancel() // release the context's resources
		a.do(func() {
			l.stop = nil
			l.start.Enable()
			l.search.Enable()
			l.cancel.Disable()
			l.pause.Disable()
			if !(cancelled && l.paused.Load()) { // finished, failed, refused or cancelled: nothing to offer later
				a.settings.PendingDownload = ""
				a.saveSettings()
			}
			a.chat.refreshEmpty() // a paused download shows there (pausedDownloadItems)
			switch {
			case errors.Is(err, errNotDownloaded):
				l.progress.Hide()
				l.status.SetText(name + " was not downloaded: it does not fit this machine's memory.")
			case cancelled && l.paused.Load():
				l.status.SetText(fmt.Sprintf("Paused at %.2f of %.2f GB; Resume goes on with %s from there, now or after a restart.", float64(done)/1e9, float64(total)/1e9, name))
				l.start.SetText("Resume")
			case cancelled && err != nil:
				l.progress.Hide()
				l.status.SetText("Cancelled; the partial files were removed.")
			case err != nil:
				l.progress.Hide()
				l.status.SetText(sentence(err.Error()))
			case a.ready() || a.loading:
				// A model in use is not replaced without asking.
				l.progress.SetValue(1)
				l.status.SetText("Downloaded " + name + ".")
				current := a.modelName()
				a.confirm("Load "+name+"?", "Downloaded "+name+". Load it now, in place of "+current+"? (Otherwise it waits under Models.)", func(ok bool) {
					if ok {
						l.dlg.Hide()
						a.openModel(dir)
					}
				})
			default:
				l.progress.SetValue(1)
				l.status.SetText("Downloaded " + name + "; loading it.")
				l.dlg.Hide()
				a.openModel(dir)
			}
		})
	})
}

// effectiveContext is the context length a setting of n gives (0: the
// engine's default), for messages that name it.
func effectiveContext(n int) int {
	if n <= 0 {
		return engine.DefaultContextLength
	}
	return n
}

// pausedDownloadItems are what the empty chat says of a download that was
// paused or cut short (its partial files kept in the Hub cache): its name and
// a Resume button, which opens the Models dialog and goes on with it. None
// while the dialog is open or nothing is pending.
func (a *App) pausedDownloadItems() []fyne.CanvasObject {
	p := a.settings.PendingDownload
	if p == "" || (a.lib != nil && !a.lib.closed) {
		return nil
	}
	note := widget.NewLabel("The download of " + p + " is paused; what was fetched is kept.")
	note.Alignment = fyne.TextAlignCenter
	note.Wrapping = fyne.TextWrapWord
	resume := widget.NewButtonWithIcon("Resume the download", theme.DownloadIcon(), func() {
		a.showLibrary()
		if l := a.lib; l != nil && strings.TrimSpace(l.name.Text) == p {
			l.download()
		}
	})
	return []fyne.CanvasObject{note, container.NewCenter(resume)}
}
