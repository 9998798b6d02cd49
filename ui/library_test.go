package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"bagel/internal/testmodel"
)

// TestLibraryDownloadsAndLoads: the Models dialog downloads a model from the
// (fake) Hub into the Hugging Face cache and loads it; the next time, it lists
// it under "On this computer"; a name the Hub does not have says so.
func TestLibraryDownloadsAndLoads(t *testing.T) {
	const repo = "bagel-test/tiny-moe"
	srv := testmodel.FakeHub(t, "tiny-moe", repo)
	cache := t.TempDir()
	t.Setenv("HF_ENDPOINT", srv.URL)
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HOME", t.TempDir())
	s := testSettings()
	h := newHarness(t, &s, "", "")

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

	h.a.lib.name.SetText(repo)
	test.Tap(h.a.lib.start)
	h.waitFor("the model to load", func() bool { return !h.a.loading && h.a.eng != nil })
	if !strings.HasPrefix(h.a.modelDir, cache) {
		t.Errorf("loaded %s, want a folder of the cache %s", h.a.modelDir, cache)
	}
	h.a.showLibrary()
	if text := h.dialogText(); !strings.Contains(text, repo) || !strings.Contains(text, "Hub cache") {
		t.Errorf("library after the download: %q", text)
	}
	h.a.lib.dlg.Hide()
}
