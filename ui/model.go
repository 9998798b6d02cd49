package ui

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"bagel/engine"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
	"github.com/dustin/go-humanize"
)

// openModel checks the folder dir and estimates its memory off the UI thread,
// then loads it — after a warning when it will not fit. A folder that is not a
// model leaves the current model loaded and shows why.
func (a *App) openModel(dir string) {
	if a.loading {
		a.showMessage("A model is loading", "Wait for it to finish, then choose the model again.")
		return
	}
	a.loading = true
	a.loadGen++
	gen := a.loadGen
	a.bar.showBusy("Checking "+modelLabel(dir)+"…", -1)
	a.composer.refresh()
	ctxLen, backend := a.settings.ContextLength, a.settings.Backend
	if m, ok := a.settings.Models[dir]; ok {
		ctxLen = m.ContextLength // what the load will use (loadModel recalls it)
	}
	a.goSafe("checking a model folder", func() {
		mem, err := engine.Estimate(dir, ctxLen)
		var budget engine.MemoryBudget
		if err == nil {
			budget = a.memoryBudget(backend)
		}
		a.do(func() {
			if gen != a.loadGen {
				return // cancelled: a stalled read ended after the user gave up on it
			}
			a.loading = false
			if err != nil {
				if a.settings.LastModel == dir { // moved or deleted: do not retry at every start
					a.settings.LastModel = ""
					a.saveSettings()
				}
				a.bar.refresh()
				a.composer.refresh()
				a.showError("This folder cannot be loaded", naming(dir, err))
				return
			}
			if warning := fitWarning(mem, budget); warning != "" {
				a.bar.refresh()
				a.composer.refresh()
				a.confirm("This model may not fit in memory", warning+"\n\nLoad it anyway?", func(ok bool) {
					if ok {
						a.loadModel(dir, "")
					}
				})
				return
			}
			a.loadModel(dir, "")
		})
	})
}

// fitWarning compares the estimate with the backend's memory budget; "" when
// it fits or the budget is unknown.
func fitWarning(mem engine.Memory, budget engine.MemoryBudget) string {
	need := uint64(mem.Weights + mem.Cache)
	what := fmt.Sprintf("It needs about %s (weights %s, cache %s for the context length).",
		humanize.IBytes(need), humanize.IBytes(uint64(mem.Weights)), humanize.IBytes(uint64(mem.Cache)))
	switch {
	case budget.Total == 0:
		return ""
	case need > budget.Total:
		return what + fmt.Sprintf(" %s: %s in all. Loading will fail or swap heavily; a smaller quantization or context length fits better.", upperFirst(budget.Source), humanize.IBytes(budget.Total))
	case budget.Available > 0 && need > budget.Available:
		return what + fmt.Sprintf(" Only %s of the %s of %s is free now: expect swapping; close other apps or lower the context length.", humanize.IBytes(budget.Available), humanize.IBytes(budget.Total), budget.Source)
	}
	return ""
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// loadModel replaces the loaded model with dir: it stops a generation (its
// reply is saved, marked stopped), closes the old engine and loads the new one,
// all off the UI thread, with the progress on the model bar. When the load
// fails and fallback is set, that model is loaded again.
func (a *App) loadModel(dir, fallback string) {
	a.leaveRemote()
	a.loading = true
	old, oldDir := a.eng, a.modelDir
	if fallback == "" && oldDir != dir {
		fallback = oldDir
	}
	a.eng, a.modelDir, a.batch = nil, "", nil
	gens := a.cancelReplies()
	serverDone := a.stopServer() // it serves the next model once loaded
	a.bar.lastReply = ""         // of the model being replaced
	a.bar.showBusy("Loading "+modelLabel(dir)+"…", 0)
	a.composer.refresh()
	a.perf.showModel("", 0, engine.Memory{}, "loading "+modelLabel(dir))
	stop := make(chan struct{})
	a.loadGen++
	a.stopLoad = sync.OnceFunc(func() { close(stop) })
	if isDemo(dir) {
		a.settings.seedDemo(dir)
	}
	if a.settings.recallFor(dir) { // this model's own sampling and context length
		a.saveSettings()
		a.composer.think.SetChecked(a.settings.Thinking)
	}
	opt := engine.Options{
		Backend:       a.settings.Backend,
		ContextLength: a.settings.ContextLength,
		// The prompt cache's megabytes (0: the engine's default).
		PromptCacheBytes: int64(a.settings.PromptCacheMB) << 20,
		// Several chats answering at once take the batched steps' kernels
		// (Settings › Replies at once; applies at the next load).
		Replies:  a.settings.ChatParallel,
		Progress: a.loadProgress(dir),
		Cancel:   stop,
	}
	a.goSafe("loading a model", func() {
		for _, g := range gens {
			<-g.done
		}
		serverDone()
		if old != nil {
			old.Close()
		}
		e, err := engine.Load(dir, opt)
		a.do(func() { a.modelLoaded(dir, e, err, fallback) })
	})
}

// cancelLoading is the model bar's Cancel: it stops a load between layers (the
// previous model, if there was one, loads again), or gives up on a folder
// check that does not answer (a stalled network mount), leaving things as
// they were before it.
func (a *App) cancelLoading() {
	if !a.loading {
		return
	}
	if a.stopLoad != nil {
		a.stopLoad()
		a.bar.showBusy("Cancelling…", -1)
		return
	}
	a.loadGen++ // the check's answer, whenever it comes, is dropped
	a.loading = false
	a.bar.refresh()
	a.composer.refresh()
}

// loadProgress returns the engine's progress callback: it runs on the loading
// goroutine and posts to the model bar at most every 50 ms, a new stage at once.
func (a *App) loadProgress(dir string) func(float64, string) {
	var th progressThrottle
	name := modelLabel(dir)
	return func(fraction float64, stage string) {
		if th.show(fraction, stage, time.Now()) {
			a.do(func() {
				if a.loading {
					a.bar.showBusy(fmt.Sprintf("Loading %s: %s…", name, stage), fraction)
				}
			})
		}
	}
}

func (a *App) modelLoaded(dir string, e *engine.Engine, err error, fallback string) {
	a.loading = false
	a.stopLoad = nil
	if a.store == nil { // the window closed while loading
		if e != nil {
			e.Close()
		}
		return
	}
	restore := a.restoreOnFailure
	a.restoreOnFailure = nil
	if err != nil && restore != nil && !errors.Is(err, engine.ErrLoadCancelled) {
		// A reload for new model settings failed: the settings go back and
		// the model loads again as it was.
		a.settings.Backend, a.settings.ContextLength = restore.Backend, restore.ContextLength
		a.saveSettings()
		a.showError("The model could not be loaded with the new settings",
			fmt.Errorf("%w\n\nThe backend and the context length are back to what they were (%s, %s), and %s loads again.",
				naming(dir, err), restore.Backend, contextLabel(restore.ContextLength), modelLabel(dir)))
		a.loadModel(dir, "")
		return
	}
	if err != nil {
		// A cancelled load says nothing; a failed one says why. Either way
		// the previous model, if there was one, loads again.
		if !errors.Is(err, engine.ErrLoadCancelled) {
			msg := naming(dir, err)
			if fallback != "" {
				msg = fmt.Errorf("%w\n\nLoading the previous model, %s, again.", msg, filepath.Base(fallback))
			}
			a.showError("The model could not be loaded", msg)
		}
		if fallback != "" {
			a.loadModel(fallback, "")
			return
		}
		a.bar.refresh()
		a.composer.refresh()
		a.perf.showModel("", 0, engine.Memory{}, "no model loaded")
		return
	}
	a.eng, a.modelDir = e, dir
	a.setupBatch()
	a.settings.LastModel = dir
	a.settings.addRecent(dir)
	a.saveSettings()
	a.bar.refresh()
	a.composer.refresh()
	a.chat.refreshEmpty()
	a.win.SetMainMenu(a.mainMenu())
	a.perf.showModel(e.BackendName, e.ContextLength(), e.Memory(), "ready · "+e.BackendReason)
	a.startServer()
	if len(a.dialogs) == 0 { // ready to type into, unless a dialog is up
		a.win.Canvas().Focus(a.composer.entry)
	}
	a.countTokensSoon()
}

// unloadModel frees the model (stopping a generation first) without loading
// another; the app then waits for a model to be dropped or chosen.
func (a *App) unloadModel() {
	if a.remote != nil && !a.loading {
		a.leaveRemote()
		a.bar.refresh()
		a.composer.refresh()
		a.chat.refreshEmpty()
		a.perf.showModel("", 0, engine.Memory{}, "no model loaded")
		return
	}
	if a.loading || a.eng == nil {
		return
	}
	old := a.eng
	a.eng, a.modelDir, a.batch = nil, "", nil
	a.settings.LastModel = ""
	a.saveSettings()
	gens := a.cancelReplies()
	serverDone := a.stopServer()
	a.bar.refresh()
	a.composer.refresh()
	a.chat.refreshEmpty()
	a.perf.showModel("", 0, engine.Memory{}, "no model loaded")
	a.goSafe("unloading the model", func() {
		for _, g := range gens {
			<-g.done
		}
		serverDone()
		old.Close()
	})
}

// dropped takes what is dropped on the window: images go into the
// composer for the next message (images.go); otherwise the first item opens
// as a model, a model folder or a file of one (config.json, a safetensors
// shard, the tokenizer files). Any other file is refused by name: its folder
// is not a model folder (a document dropped from Downloads must not make
// Bagel try to load Downloads).
func (a *App) dropped(uris []fyne.URI) {
	if len(uris) == 0 {
		return
	}
	if imageFile(filepath.Base(uris[0].Path())) {
		for _, u := range uris {
			if imageFile(filepath.Base(u.Path())) {
				a.attachImage(u.Path())
			}
		}
		return
	}
	path := uris[0].Path()
	info, err := os.Stat(path)
	if err != nil {
		a.showError("The dropped item cannot be read", err)
		return
	}
	if !info.IsDir() {
		if !modelFile(filepath.Base(path)) {
			a.showError("Not a model", fmt.Errorf("%s is a file: drop a model folder (one with config.json and .safetensors files), or its config.json", filepath.Base(path)))
			return
		}
		path = filepath.Dir(path)
	}
	a.openModel(path)
}

// imageFile tells an image file by its name.
func imageFile(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".png", ".jpg", ".jpeg", ".gif", ".webp", ".heic", ".heif", ".bmp", ".tif", ".tiff":
		return true
	}
	return false
}

// modelFile tells a file a model folder holds from any other.
func modelFile(name string) bool {
	switch name {
	case "config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json",
		"chat_template.jinja", "model.safetensors.index.json":
		return true
	}
	return strings.HasSuffix(name, ".safetensors")
}

// chooseModelFolder shows the folder dialog, starting beside the last model.
func (a *App) chooseModelFolder() {
	d := dialog.NewFolderOpen(func(folder fyne.ListableURI, err error) {
		if err != nil {
			a.showError("The folder cannot be opened", err)
			return
		}
		if folder != nil {
			a.openModel(folder.Path())
		}
	}, a.win)
	start := a.modelDir
	if start == "" && len(a.settings.Recent) > 0 {
		start = a.settings.Recent[0]
	}
	if start != "" {
		if loc, err := storage.ListerForURI(storage.NewFileURI(filepath.Dir(start))); err == nil {
			d.SetLocation(loc)
		}
	}
	d.Resize(fyne.NewSize(760, 520))
	a.showDialog(d, nil)
}

// modelName is the loaded model's folder name.
func (a *App) modelName() string {
	if a.remote != nil {
		return a.remote.client.Model()
	}
	if a.modelDir == "" {
		return ""
	}
	return modelLabel(a.modelDir)
}

// naming makes sure an error about a model folder names the folder.
func naming(dir string, err error) error {
	if strings.Contains(err.Error(), dir) {
		return err
	}
	return fmt.Errorf("%s: %w", dir, err)
}

// errNoModel is the sentence shown when a reply is asked for without a model.
var errNoModel = errors.New("no model is loaded: drop an MLX model folder (for example Qwen3.5-35B-A3B-4bit) on the window, or use Open model folder…")

// contextLabel names a context length setting for messages.
func contextLabel(n int) string {
	if n <= 0 {
		return "the model's default context"
	}
	return fmt.Sprintf("%d tokens of context", n)
}

// progressThrottle keeps the load's progress from redrawing the bar more
// than every 50 ms, but never drops a new stage or the end: a stage that
// takes long (the first run's kernel compile) must show while it runs.
type progressThrottle struct {
	mu    sync.Mutex
	last  time.Time
	stage string
}

// show reports whether the bar should show fraction and stage at now.
func (t *progressThrottle) show(fraction float64, stage string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if fraction < 1 && stage == t.stage && now.Sub(t.last) < 50*time.Millisecond {
		return false
	}
	t.last, t.stage = now, stage
	return true
}
