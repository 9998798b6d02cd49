package ui

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"bagel/engine"
	"bagel/hub"
	"bagel/internal/testmodel"
)

// hubRepo is the model the fake Hub of the library tests serves.
const hubRepo = "bagel-test/tiny-moe"

// libraryHarness is a window whose Hub is a fake serving hubRepo, with an empty
// Hugging Face cache (returned) and an empty home (no LM Studio folder).
func libraryHarness(t *testing.T) (*harness, string) {
	cache := t.TempDir()
	t.Setenv("HF_ENDPOINT", testmodel.FakeHub(t, "tiny-moe", hubRepo).URL)
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HOME", t.TempDir())
	s := testSettings()
	return newHarness(t, &s, "", ""), cache
}

// TestLibraryDownloadsAndLoads: the Models dialog downloads a model from the
// (fake) Hub into the Hugging Face cache and loads it; the next time, it lists
// it under "On this computer"; a name the Hub does not have says so.
func TestLibraryDownloadsAndLoads(t *testing.T) {
	h, cache := libraryHarness(t)

	h.a.showLibrary()
	if text := h.dialogText(); !strings.Contains(text, "No models found") {
		t.Errorf("empty library: %q", text)
	}
	test.Type(h.a.lib.name, "bagel-test/missing")
	test.Tap(h.a.lib.start)
	h.waitFor("the refusal", func() bool { return !h.a.lib.start.Disabled() })
	if !strings.Contains(h.a.lib.status.Text, "not found on the Hub") {
		t.Errorf("status %q, want one saying the Hub has no such model", h.a.lib.status.Text)
	}

	// A search after a failed download still fills the dialog's result list.
	h.a.lib.name.SetText("TINY")
	test.Tap(h.a.lib.search)
	h.waitFor("the search", func() bool { return strings.Contains(h.a.lib.status.Text, "1 MLX model on the Hub matches") })
	if text := h.dialogText(); !strings.Contains(text, "42 downloads") {
		t.Errorf("the search's result is not in the dialog after a failed download: %q", text)
	}

	h.a.lib.name.SetText(hubRepo)
	test.Tap(h.a.lib.start)
	h.waitFor("the model to load", func() bool { return !h.a.loading && h.a.eng != nil })
	if !strings.HasPrefix(h.a.modelDir, cache) {
		t.Errorf("loaded %s, want a folder of the cache %s", h.a.modelDir, cache)
	}
	h.a.showLibrary()
	if text := h.dialogText(); !strings.Contains(text, hubRepo) || !strings.Contains(text, "Hub cache") {
		t.Errorf("library after the download: %q", text)
	}
	// The row says whether the model fits this machine's memory.
	h.waitFor("the memory verdict", func() bool { return strings.Contains(h.dialogText(), "fits: needs about") })
	h.a.lib.dlg.Hide()
}

// TestLibraryShowsAndDeletes: a Hub-cache model's row shows its folder and
// deletes it after a confirmation, but not while it is the model in use;
// the deleted model leaves the library and the recent models.
func TestLibraryShowsAndDeletes(t *testing.T) {
	h, cache := libraryHarness(t)
	h.a.showLibrary()
	h.a.lib.name.SetText(hubRepo)
	test.Tap(h.a.lib.start)
	h.waitFor("the model to load", func() bool { return !h.a.loading && h.a.eng != nil })
	loaded := h.a.modelDir

	h.a.showLibrary()
	var opened []string
	h.a.lib.open = func(u *url.URL) error { opened = append(opened, u.Path); return nil }
	test.Tap(libraryButton(t, h.a.lib, theme.FolderOpenIcon()))
	if len(opened) != 1 || opened[0] != loaded {
		t.Errorf("Show opened %v, want %s", opened, loaded)
	}
	test.Tap(libraryButton(t, h.a.lib, theme.DeleteIcon()))
	if !strings.Contains(h.a.lib.status.Text, "the model in use") {
		t.Errorf("deleting the model in use: status %q", h.a.lib.status.Text)
	}

	h.a.unloadModel()
	test.Tap(libraryButton(t, h.a.lib, theme.DeleteIcon()))
	if text := h.dialogText(); !strings.Contains(text, "Delete "+hubRepo+" from the Hugging Face cache") {
		t.Fatalf("confirmation: %q", text)
	}
	test.Tap(dialogButton(t, h, "Yes"))
	h.waitFor("the delete", func() bool { return strings.HasPrefix(h.a.lib.status.Text, "Deleted") })
	dir, _ := hub.RepoDir(cache, hubRepo)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is still there (%v)", dir, err)
	}
	if slices.Contains(h.a.settings.Recent, loaded) {
		t.Errorf("the recent models still hold the deleted %s", loaded)
	}
	if rows := h.a.lib.list.Objects; len(rows) != 1 || !isLabel(rows[0], "No models found") {
		t.Errorf("library after the delete: %d rows, want the one saying none is found", len(rows))
	}
	h.a.lib.dlg.Hide()
}

// libraryButton is the one button with icon in the library's rows.
func libraryButton(t *testing.T, l *library, icon fyne.Resource) *widget.Button {
	t.Helper()
	var found []*widget.Button
	for _, o := range test.LaidOutObjects(l.list) {
		if b, ok := o.(*widget.Button); ok && b.Icon != nil && b.Icon.Name() == icon.Name() {
			found = append(found, b)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d buttons with the icon %s in the library, want 1", len(found), icon.Name())
	}
	return found[0]
}

// dialogButton is the button labelled text in the top dialog.
func dialogButton(t *testing.T, h *harness, text string) *widget.Button {
	t.Helper()
	for _, o := range test.LaidOutObjects(h.a.win.Canvas().Overlays().Top()) {
		if b, ok := o.(*widget.Button); ok && b.Text == text {
			return b
		}
	}
	t.Fatalf("no %q button in the top dialog", text)
	return nil
}

func isLabel(o fyne.CanvasObject, prefix string) bool {
	l, ok := o.(*widget.Label)
	return ok && strings.HasPrefix(l.Text, prefix)
}

// TestLibrarySearches: the search lists the Hub's matching models, says when
// none matches, and a result's Download fetches and loads it.
func TestLibrarySearches(t *testing.T) {
	h, cache := libraryHarness(t)
	h.a.showLibrary()
	l := h.a.lib

	l.name.SetText("no such words")
	test.Tap(l.search)
	h.waitFor("the search", func() bool { return !l.search.Disabled() })
	if !strings.HasPrefix(l.status.Text, "No MLX model on the Hub matches") || len(l.found.Objects) != 0 {
		t.Errorf("a search without matches: status %q, %d results", l.status.Text, len(l.found.Objects))
	}

	l.name.SetText("TINY")
	test.Tap(l.search)
	h.waitFor("the search", func() bool { return !l.search.Disabled() })
	if len(l.found.Objects) != 1 {
		t.Fatalf("%d results (status %q), want the one model", len(l.found.Objects), l.status.Text)
	}
	// Its size and fit follow, from the Hub's config.json and file sizes.
	h.waitFor("the result's size and fit", func() bool {
		for _, o := range test.LaidOutObjects(l.found) {
			if lb, ok := o.(*widget.Label); ok && strings.Contains(lb.Text, " GB · fits") {
				return true
			}
		}
		return false
	})
	var text []string
	var get *widget.Button
	for _, o := range test.LaidOutObjects(l.found) {
		switch o := o.(type) {
		case *widget.Label:
			text = append(text, o.Text)
		case *widget.Button:
			get = o
		}
	}
	if got := strings.Join(text, " | "); !strings.Contains(got, hubRepo) || !strings.Contains(got, "42 downloads · qwen3_5_moe, a type Bagel runs") {
		t.Errorf("the result reads %q", got)
	}
	if get == nil {
		t.Fatal("the result has no Download button")
	}
	test.Tap(get)
	h.waitFor("the model to load", func() bool { return !h.a.loading && h.a.eng != nil })
	if !strings.HasPrefix(h.a.modelDir, cache) {
		t.Errorf("loaded %s, want a folder of the cache %s", h.a.modelDir, cache)
	}
}

// TestLibraryAsksBeforeADownloadThatDoesNotFit: on a machine too small for the
// model, Download asks first (the estimate from config.json and the file
// sizes); No leaves the cache empty, Yes downloads (and the load asks again).
func TestLibraryAsksBeforeADownloadThatDoesNotFit(t *testing.T) {
	h, cache := libraryHarness(t)
	h.a.memoryBudget = func(string) engine.MemoryBudget { return engine.MemoryBudget{Total: 1 << 20, Source: "a test machine"} }
	h.a.settings.ContextLength = 0 // the model's default
	h.a.showLibrary()
	l := h.a.lib

	l.name.SetText(hubRepo)
	test.Tap(l.start)
	h.waitFor("the question", func() bool { return l.confirm != nil })
	if text := h.dialogText(); !strings.Contains(text, "of 1.0 MiB of a test machine") ||
		!strings.Contains(text, fmt.Sprintf("at a context length of %d tokens", engine.DefaultContextLength)) {
		t.Errorf("the question reads %q (the settings' context is the default: its length, not 0)", text)
	}
	l.confirm.Hide() // No
	h.waitFor("the refusal", func() bool { return !l.start.Disabled() })
	if !strings.Contains(l.status.Text, "was not downloaded: it does not fit") {
		t.Errorf("status %q", l.status.Text)
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("the refused download left %d entries in the cache", len(entries))
	}

	l.confirm = nil
	test.Tap(l.start)
	h.waitFor("the question", func() bool { return l.confirm != nil })
	l.confirm.Confirm()
	// Downloaded; loading it asks again, as for any model that does not fit.
	h.waitFor("the load's question", func() bool { return strings.Contains(h.dialogText(), "Load it anyway?") })
	if entries, _ := os.ReadDir(cache); len(entries) == 0 {
		t.Error("the accepted download left nothing in the cache")
	}
}

// TestLibraryPausesAndResumes: Pause stops a download and keeps its partial
// files; the main window then shows it paused, and the Models dialog opened
// later (as after a restart) offers to resume it; the main window's Resume
// finishes and loads it.
func TestLibraryPausesAndResumes(t *testing.T) {
	h, cache := libraryHarness(t)
	upstream := os.Getenv("HF_ENDPOINT")
	stall := make(chan struct{}) // closed: serve the weights whole
	var stalling atomic.Bool
	stalling.Store(true)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Get(upstream + r.URL.String())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if !strings.HasSuffix(r.URL.Path, ".safetensors") || !stalling.Load() || r.Header.Get("Range") != "" {
			from := 0
			if rg := r.Header.Get("Range"); rg != "" {
				from, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"))
				w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, len(body)-1, len(body)))
				w.WriteHeader(http.StatusPartialContent)
			}
			w.Write(body[from:])
			return
		}
		// Half the weights, then nothing until the client gives up.
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-stall:
		}
	}))
	defer proxy.Close()
	defer close(stall)
	t.Setenv("HF_ENDPOINT", proxy.URL)

	h.a.showLibrary()
	l := h.a.lib
	l.name.SetText(hubRepo)
	test.Tap(l.start)
	h.waitFor("half the weights", func() bool { return l.progress.Value > 0.3 })
	test.Tap(l.pause)
	h.waitFor("the pause", func() bool { return !l.start.Disabled() })
	if !strings.HasPrefix(l.status.Text, "Paused at") || h.a.settings.PendingDownload != hubRepo {
		t.Fatalf("status %q, pending %q", l.status.Text, h.a.settings.PendingDownload)
	}
	if parts, _ := filepath.Glob(filepath.Join(cache, "models--*", "blobs", "*.incomplete")); len(parts) == 0 {
		t.Fatal("the pause kept no partial file")
	}
	l.dlg.Hide()
	h.pump()
	// The main window says so, with a Resume button.
	if b := welcomeButton(h, "Resume the download"); b == nil {
		t.Fatal("the empty chat does not show the paused download")
	}

	stalling.Store(false)
	h.a.showLibrary() // as after a restart: the pending download is offered
	l = h.a.lib
	if l.name.Text != hubRepo || !strings.Contains(l.status.Text, "Resume goes on") || l.start.Text != "Resume" {
		t.Fatalf("the dialog offers %q: %q, button %q", l.name.Text, l.status.Text, l.start.Text)
	}
	l.name.SetText("other/model")
	if l.start.Text != "Download" {
		t.Errorf("another name: the button says %q", l.start.Text)
	}
	l.name.SetText(hubRepo)
	l.dlg.Hide()
	h.pump()
	test.Tap(welcomeButton(h, "Resume the download")) // the main window's Resume goes on with it
	h.waitFor("the model to load", func() bool { return !h.a.loading && h.a.eng != nil })
	if h.a.settings.PendingDownload != "" {
		t.Errorf("pending download %q after it finished", h.a.settings.PendingDownload)
	}
	if h.a.chat.refreshEmpty(); welcomeButton(h, "Resume the download") != nil {
		t.Error("the finished download still shows as paused")
	}
	// The model in use is marked, its Load spent.
	h.a.showLibrary()
	if text := h.dialogText(); !strings.Contains(text, " (in use)") {
		t.Errorf("the dialog does not mark the model in use:\n%s", text)
	}
}

// TestLibraryEmptyBoxAndEnter: Download with an empty box downloads nothing
// (its placeholder names a 20 GB model) and says what to type; Enter in the
// box searches.
func TestLibraryEmptyBoxAndEnter(t *testing.T) {
	h, cache := libraryHarness(t)
	h.a.showLibrary()
	l := h.a.lib
	test.Tap(l.start)
	if l.stop != nil || !strings.HasPrefix(l.status.Text, "Type the model to download") || h.a.settings.PendingDownload != "" {
		t.Errorf("an empty box: download started %v, status %q, pending %q", l.stop != nil, l.status.Text, h.a.settings.PendingDownload)
	}
	h.pump()
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("an empty box wrote %d entries to the cache", len(entries))
	}
	l.name.SetText("TINY")
	l.name.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	h.waitFor("the search", func() bool { return len(l.found.Objects) == 1 })
}

// TestLibraryAsksBeforeReplacingTheModel: a download that finishes while a
// model is loaded asks before loading it in its place; No keeps the model.
func TestLibraryAsksBeforeReplacingTheModel(t *testing.T) {
	h, _ := libraryHarness(t)
	loaded := h.loadModel("tiny-moe")
	h.a.showLibrary()
	l := h.a.lib
	l.name.SetText(hubRepo)
	test.Tap(l.start)
	h.waitFor("the question", func() bool { return strings.Contains(h.dialogText(), "Load "+hubRepo+"?") })
	if !strings.Contains(h.dialogText(), "in place of "+h.a.modelName()) {
		t.Errorf("the question reads %q", h.dialogText())
	}
	h.a.closeTopDialog() // No
	h.pump()
	if h.a.modelDir != loaded || h.a.loading {
		t.Errorf("after No: model %q (loading %v), want %q kept", h.a.modelDir, h.a.loading, loaded)
	}
}

// welcomeButton is the empty chat's button whose text is text, nil if none.
func welcomeButton(h *harness, text string) *widget.Button {
	h.a.chat.refreshEmpty()
	for _, o := range test.LaidOutObjects(h.a.chat.welcome) {
		if b, ok := o.(*widget.Button); ok && b.Text == text {
			return b
		}
	}
	return nil
}
