package testmodel

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
)

// FakeHubCommit is the commit FakeHub serves.
const FakeHubCommit = "0123456789abcdef0123456789abcdef01234567"

// FakeHub serves the named test model (with its tokenizer) as repo from a
// stand-in for the Hugging Face Hub: the model info API with the files' git
// object ids, the search API (repo when its name contains the query), and
// resolve URLs. Anything else is 404. It closes with the test.
func FakeHub(t testing.TB, name, repo string) *httptest.Server {
	t.Helper()
	return FakeHubRepos(t, map[string]string{repo: Dir(t, name)})
}

// FakeHubRepos is FakeHub for several repositories, each served from the
// files of its folder (repo → folder).
func FakeHubRepos(t testing.TB, repos map[string]string) *httptest.Server {
	t.Helper()
	files := map[string]map[string][]byte{}
	for repo, src := range repos {
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		files[repo] = map[string][]byte{}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			files[repo][e.Name()] = data
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/models" {
			found := []map[string]any{}
			for repo := range files {
				if strings.Contains(strings.ToLower(repo), strings.ToLower(r.URL.Query().Get("search"))) {
					found = append(found, map[string]any{"id": repo, "downloads": 42, "tags": []string{"mlx", "safetensors", "qwen3_5_moe"}})
				}
			}
			json.NewEncoder(w).Encode(found)
			return
		}
		for repo, fs := range files {
			resolve := "/" + repo + "/resolve/" + FakeHubCommit + "/"
			switch {
			case r.URL.Path == "/api/models/"+repo+"/revision/main":
				var sib []map[string]any
				for name, data := range fs {
					h := sha1.New()
					fmt.Fprintf(h, "blob %d\x00", len(data))
					h.Write(data)
					sib = append(sib, map[string]any{"rfilename": name, "size": len(data), "blobId": hex.EncodeToString(h.Sum(nil))})
				}
				json.NewEncoder(w).Encode(map[string]any{"id": repo, "sha": FakeHubCommit, "siblings": sib})
				return
			case strings.HasPrefix(r.URL.Path, resolve):
				w.Write(fs[strings.TrimPrefix(r.URL.Path, resolve)])
				return
			}
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}
