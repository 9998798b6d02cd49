package hub

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzModelInfo serves arbitrary model-info answers (and a fixed body for
// every file) and downloads from them: no answer panics the client or puts
// anything outside the cache, however its names are spelled.
func FuzzModelInfo(f *testing.F) {
	for _, seed := range []string{
		`{"sha": "0123456789abcdef0123456789abcdef01234567", "siblings": [{"rfilename": "config.json", "size": 2, "blobId": "0123456789abcdef0123456789abcdef01234567"}]}`,
		`{"sha": "../../../x", "siblings": []}`,
		`{"sha": "0123456789abcdef0123456789abcdef01234567", "siblings": [{"rfilename": "../../x", "size": 2, "blobId": "../../y"}]}`,
		`{"sha": "0123456789abcdef0123456789abcdef01234567", "siblings": [{"rfilename": "a", "size": 2, "lfs": {"sha256": "/etc/passwd", "size": 2}}]}`,
		`[1, 2]`, `{"sha": 5}`, `{`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, info string) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/api/models/") {
				w.Write([]byte(info))
				return
			}
			w.Write([]byte("{}"))
		}))
		defer srv.Close()
		root := t.TempDir()
		cache := filepath.Join(root, "cache")
		c := &Client{Endpoint: srv.URL, HTTP: &http.Client{}, Retries: 0, Backoff: time.Millisecond}
		c.Download(context.Background(), cache, "org/name", DownloadOptions{})
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if e.Name() != "cache" {
				t.Fatalf("the download wrote %s beside the cache for the answer %q", e.Name(), info)
			}
		}
	})
}
