package ui

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"bagel/internal/testmodel"
)

// fakeHub serves the tiny test model as repo from a Hugging Face Hub stand-in.
func fakeHub(t *testing.T, repo string) *httptest.Server {
	src := testmodel.Dir(t, "tiny-moe")
	entries, _ := os.ReadDir(src)
	files := map[string][]byte{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = data
	}
	const commit = "0123456789abcdef0123456789abcdef01234567"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/models/"+repo+"/revision/main":
			var sib []map[string]any
			for name, data := range files {
				h := sha1.New()
				fmt.Fprintf(h, "blob %d\x00", len(data))
				h.Write(data)
				sib = append(sib, map[string]any{"rfilename": name, "size": len(data), "blobId": hex.EncodeToString(h.Sum(nil))})
			}
			json.NewEncoder(w).Encode(map[string]any{"id": repo, "sha": commit, "siblings": sib})
		case strings.HasPrefix(r.URL.Path, "/"+repo+"/resolve/"+commit+"/"):
			w.Write(files[strings.TrimPrefix(r.URL.Path, "/"+repo+"/resolve/"+commit+"/")])
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestLibraryDownloadsAndLoads: the Models dialog downloads a model from the
// (fake) Hub into the Hugging Face cache and loads it; the next time, it lists
// it under "On this computer"; a name the Hub does not have says so.
func TestLibraryDownloadsAndLoads(t *testing.T) {
	const repo = "bagel-test/tiny-moe"
	srv := fakeHub(t, repo)
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
