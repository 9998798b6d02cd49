package cli

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

	"bagel/internal/testmodel"
)

// TestPullModelsAndResolve pulls the tiny test model from a fake Hub into a
// fresh cache, lists it, and scores with -m ORG/NAME.
func TestPullModelsAndResolve(t *testing.T) {
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
	const repo, commit = "bagel-test/tiny-moe", "0123456789abcdef0123456789abcdef01234567"
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
	defer srv.Close()
	cache := t.TempDir()
	t.Setenv("HF_ENDPOINT", srv.URL)
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HOME", t.TempDir()) // no LM Studio folder

	code, out, stderr := runCLI("pull", repo)
	if code != 0 || !strings.HasPrefix(strings.TrimSpace(out), cache) {
		t.Fatalf("pull: exit %d, %q, %s", code, out, stderr)
	}
	code, out, stderr = runCLI("models")
	if code != 0 || !strings.Contains(out, repo) || !strings.Contains(out, "runs") {
		t.Errorf("models: exit %d, %q, %s", code, out, stderr)
	}
	code, out, stderr = runCLI("score", "-m", repo, "--ids", "1,2,3", "--backend", "cpu")
	if code != 0 || strings.Count(out, "\n") != 3 {
		t.Errorf("score -m %s: exit %d, %q, %s", repo, code, out, stderr)
	}
	if code, _, stderr := runCLI("score", "-m", "bagel-test/absent", "--ids", "1"); code != 1 || !strings.Contains(stderr, "bagel pull bagel-test/absent") {
		t.Errorf("absent model: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCLI("pull", "bagel-test/absent"); code != 1 || !strings.Contains(stderr, "not found on the Hub") {
		t.Errorf("pull of a missing repo: exit %d, %s", code, stderr)
	}
}
