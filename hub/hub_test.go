package hub

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeHub serves one repository as the Hub does: the info API, and resolve
// URLs that redirect LFS files to a second host (the CDN) serving Range
// requests, with faults a test can turn on.
type fakeHub struct {
	t      *testing.T
	repo   string
	commit string
	files  map[string][]byte // path → content
	lfs    map[string]bool   // paths stored in LFS
	hub    *httptest.Server
	cdn    *httptest.Server

	mu          sync.Mutex
	dropAfter   int  // drop the next LFS transfer after this many bytes (0: off)
	badChecksum bool // serve a wrong byte in LFS files
	status      int  // answer every API call with this status (0: off)
	busy        int  // answer this many requests with 429 first
	stallAfter  int  // send this many bytes of each LFS transfer, then nothing until the client leaves (0: off)
	extra       int  // bytes past its listed size sent with sub/tokenizer_config.json (-1: without end)
	requests    []string
	rangeFrom   []int // the start of every Range request to the CDN
	// mangle, when set, rewrites the info API's answer (a hostile Hub);
	// headers are added to every resolve answer.
	mangle  func(info map[string]any)
	headers map[string]string
	auth    []string // the Authorization header of every request to the Hub
}

func newFakeHub(t *testing.T) *fakeHub {
	f := &fakeHub{t: t, repo: "mlx-community/tiny-test", commit: strings.Repeat("c", 40),
		files: map[string][]byte{
			"config.json":               []byte(`{"model_type": "qwen3_5_moe"}`),
			"model.safetensors":         bytesOf(300_000, 7),
			"sub/tokenizer_config.json": []byte(`{}`),
		},
		lfs: map[string]bool{"model.safetensors": true}}
	f.cdn = httptest.NewServer(http.HandlerFunc(f.serveCDN))
	f.hub = httptest.NewServer(http.HandlerFunc(f.serveHub))
	t.Cleanup(func() { f.hub.Close(); f.cdn.Close() })
	return f
}

func bytesOf(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31) ^ seed
	}
	return b
}

func (f *fakeHub) client() *Client {
	return &Client{Endpoint: f.hub.URL, HTTP: &http.Client{}, Retries: 3, Backoff: time.Millisecond}
}

func (f *fakeHub) serveHub(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.URL.Path)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	status, busy := f.status, f.busy
	if busy > 0 {
		f.busy--
	}
	f.mu.Unlock()
	if busy > 0 {
		w.Header().Set("Retry-After", "0")
		http.Error(w, "slow down", http.StatusTooManyRequests)
		return
	}
	if status != 0 {
		http.Error(w, "no", status)
		return
	}
	switch {
	case r.URL.Path == "/api/models":
		json.NewEncoder(w).Encode([]map[string]any{{"id": f.repo, "downloads": 42, "tags": []string{"mlx"}, "q": r.URL.RawQuery}})
	case r.URL.Path == "/api/models/"+f.repo+"/revision/main":
		var sib []map[string]any
		for p, data := range f.files {
			s := map[string]any{"rfilename": p, "size": len(data), "blobId": gitOID(data)}
			if f.lfs[p] {
				sum := sha256.Sum256(data)
				s["lfs"] = map[string]any{"sha256": hex.EncodeToString(sum[:]), "size": len(data)}
			}
			sib = append(sib, s)
		}
		info := map[string]any{"id": f.repo, "sha": f.commit, "siblings": sib}
		if f.mangle != nil {
			f.mangle(info)
		}
		json.NewEncoder(w).Encode(info)
	case strings.HasPrefix(r.URL.Path, "/"+f.repo+"/resolve/"):
		for k, v := range f.headers {
			w.Header().Set(k, v)
		}
		_, p, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"+f.repo+"/resolve/"), "/")
		data, ok := f.files[p]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if f.lfs[p] { // LFS content comes from the CDN
			http.Redirect(w, r, f.cdn.URL+"/"+p, http.StatusFound)
			return
		}
		w.Write(data)
		f.mu.Lock()
		extra := f.extra
		f.mu.Unlock()
		for sent, n := 0, 0; p == "sub/tokenizer_config.json" && (extra < 0 || sent < extra); sent += n {
			n = 4096
			if extra >= 0 {
				n = min(n, extra-sent)
			}
			if _, err := w.Write(make([]byte, n)); err != nil {
				return // the client went away
			}
		}
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeHub) serveCDN(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		f.t.Error("the token was sent to the CDN host")
	}
	data := append([]byte(nil), f.files[strings.TrimPrefix(r.URL.Path, "/")]...)
	f.mu.Lock()
	drop, stall := f.dropAfter, f.stallAfter
	f.dropAfter = 0
	if f.badChecksum {
		data[len(data)/2] ^= 1
	}
	f.mu.Unlock()
	from := 0
	if rg := r.Header.Get("Range"); rg != "" {
		from, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"))
		f.mu.Lock()
		f.rangeFrom = append(f.rangeFrom, from)
		f.mu.Unlock()
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, len(data)-1, len(data)))
		w.Header().Set("Content-Length", strconv.Itoa(len(data)-from))
		w.WriteHeader(http.StatusPartialContent)
	} else {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	}
	body := data[from:]
	if stall > 0 && stall < len(body) {
		w.Write(body[:stall])
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the client went away (a killed process)
		return
	}
	if drop > 0 && drop < len(body) {
		w.Write(body[:drop])
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack() // the connection breaks mid-file
		if err == nil {
			conn.Close()
		}
		return
	}
	w.Write(body)
}

func gitOID(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

func TestSearchAndInfo(t *testing.T) {
	f := newFakeHub(t)
	c := f.client()
	res, err := c.Search(context.Background(), "qwen3.5", SearchOptions{Author: "mlx-community"})
	if err != nil || len(res) != 1 || res[0].ID != f.repo || res[0].Downloads != 42 {
		t.Fatalf("search: %+v, %v", res, err)
	}
	info, err := c.Info(context.Background(), f.repo, "")
	if err != nil || info.SHA != f.commit || len(info.Files) != 3 {
		t.Fatalf("info: %+v, %v", info, err)
	}
	if _, err := c.Info(context.Background(), "no-slash", ""); err == nil || !strings.Contains(err.Error(), "ORG/NAME") {
		t.Errorf("bad name: %v", err)
	}
	if _, err := c.Info(context.Background(), "mlx-community/missing", ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing repo: %v", err)
	}
}

// TestDownloadLayout downloads into an empty cache and checks the layout
// huggingface_hub expects: blobs named by sha256 (LFS) or git object id,
// relative links in snapshots/COMMIT, refs/main.
func TestDownloadLayout(t *testing.T) {
	f := newFakeHub(t)
	cache := t.TempDir()
	var last Progress
	snap, err := f.client().Download(context.Background(), cache, f.repo, DownloadOptions{Progress: func(p Progress) { last = p }})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "models--mlx-community--tiny-test")
	if snap != filepath.Join(dir, "snapshots", f.commit) {
		t.Errorf("snapshot %s", snap)
	}
	if ref, _ := os.ReadFile(filepath.Join(dir, "refs", "main")); string(ref) != f.commit {
		t.Errorf("refs/main = %q", ref)
	}
	for p, data := range f.files {
		got, err := os.ReadFile(filepath.Join(snap, p))
		if err != nil || string(got) != string(data) {
			t.Errorf("%s: %d bytes, %v", p, len(got), err)
		}
		target, err := os.Readlink(filepath.Join(snap, p))
		if err != nil || filepath.IsAbs(target) || !strings.Contains(target, "blobs") {
			t.Errorf("%s: link %q, %v", p, target, err)
		}
	}
	sum := sha256.Sum256(f.files["model.safetensors"])
	if _, err := os.Stat(filepath.Join(dir, "blobs", hex.EncodeToString(sum[:]))); err != nil {
		t.Errorf("LFS blob not named by its sha256: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "blobs", gitOID(f.files["config.json"]))); err != nil {
		t.Errorf("small blob not named by its git id: %v", err)
	}
	if last.Done != last.Total || last.Total != int64(300_000+2+len(`{"model_type": "qwen3_5_moe"}`)) {
		t.Errorf("progress %+v", last)
	}
	if got, err := Snapshot(cache, f.repo, ""); err != nil || got != snap {
		t.Errorf("Snapshot: %s, %v", got, err)
	}
	// A second download fetches nothing.
	f.mu.Lock()
	f.requests = nil
	f.mu.Unlock()
	if _, err := f.client().Download(context.Background(), cache, f.repo, DownloadOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range f.requests {
		if strings.Contains(r, "/resolve/") {
			t.Errorf("refetched %s", r)
		}
	}
}

func TestDownloadResumesAfterADroppedConnection(t *testing.T) {
	f := newFakeHub(t)
	f.dropAfter = 100_000
	cache := t.TempDir()
	snap, err := f.client().Download(context.Background(), cache, f.repo, DownloadOptions{Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(snap, "model.safetensors"))
	if string(got) != string(f.files["model.safetensors"]) {
		t.Fatalf("resumed file differs (%d bytes)", len(got))
	}
}

func TestDownloadRefusesABadChecksum(t *testing.T) {
	f := newFakeHub(t)
	f.badChecksum = true
	cache := t.TempDir()
	_, err := f.client().Download(context.Background(), cache, f.repo, DownloadOptions{})
	if err == nil || !strings.Contains(err.Error(), "checksum mismatch") || !strings.Contains(err.Error(), "model.safetensors") {
		t.Fatalf("error %v", err)
	}
	blobs, _ := filepath.Glob(filepath.Join(cache, "models--mlx-community--tiny-test", "blobs", "*"))
	for _, b := range blobs {
		if strings.HasSuffix(b, ".incomplete") {
			t.Errorf("left %s", b)
		}
	}
	if _, err := Snapshot(cache, f.repo, ""); err == nil {
		t.Error("a failed download looks complete")
	}
}

func TestDownloadErrors(t *testing.T) {
	f := newFakeHub(t)
	cache := t.TempDir()
	f.status = http.StatusUnauthorized
	if _, err := f.client().Download(context.Background(), cache, f.repo, DownloadOptions{}); err == nil || !strings.Contains(err.Error(), "gated or private") || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Errorf("401: %v", err)
	}
	f.status = 0
	f.busy = 2 // two 429s with Retry-After: 0, then the answer
	if _, err := f.client().Info(context.Background(), f.repo, ""); err != nil {
		t.Errorf("after 429s: %v", err)
	}
	_, err := f.client().Download(context.Background(), cache, f.repo, DownloadOptions{FreeBytes: func(string) (int64, bool) { return 1000, true }})
	if err == nil || !strings.Contains(err.Error(), "GB free") {
		t.Errorf("full disk: %v", err)
	}
	dead := &Client{Endpoint: "http://127.0.0.1:1", HTTP: &http.Client{}, Backoff: time.Millisecond}
	if _, err := dead.Info(context.Background(), f.repo, ""); err == nil || !strings.Contains(err.Error(), "network") {
		t.Errorf("no server: %v", err)
	}
}

func TestCancelRemovesPartialFiles(t *testing.T) {
	f := newFakeHub(t)
	cache := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	_, err := f.client().Download(ctx, cache, f.repo, DownloadOptions{Parallel: 1, Progress: func(p Progress) {
		if p.Done > 50_000 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v", err)
	}
	parts, _ := filepath.Glob(filepath.Join(cache, "models--*", "blobs", "*.incomplete"))
	if len(parts) != 0 {
		t.Errorf("partial files left: %v", parts)
	}
}

// TestPauseKeepsPartialFiles: a cancel that Paused calls a pause keeps the
// partial files, and the next Download resumes them into verified blobs.
func TestPauseKeepsPartialFiles(t *testing.T) {
	f := newFakeHub(t)
	cache := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	_, err := f.client().Download(ctx, cache, f.repo, DownloadOptions{Parallel: 1, Paused: func() bool { return true },
		Progress: func(p Progress) {
			if p.Done > 50_000 {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v", err)
	}
	parts, _ := filepath.Glob(filepath.Join(cache, "models--*", "blobs", "*.incomplete"))
	if len(parts) == 0 {
		t.Fatal("the pause kept no partial file")
	}
	if _, err := f.client().Download(context.Background(), cache, f.repo, DownloadOptions{}); err != nil {
		t.Fatalf("resuming: %v", err)
	}
	if parts, _ := filepath.Glob(filepath.Join(cache, "models--*", "blobs", "*.incomplete")); len(parts) != 0 {
		t.Errorf("partial files left after the resumed download: %v", parts)
	}
}

func TestLibrary(t *testing.T) {
	f := newFakeHub(t)
	cache, lms := t.TempDir(), t.TempDir()
	if _, err := f.client().Download(context.Background(), cache, f.repo, DownloadOptions{}); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(lms, "lmstudio-community", "Qwen3.5-2B-MLX-4bit")
	os.MkdirAll(good, 0o755)
	os.WriteFile(filepath.Join(good, "config.json"), []byte(`{"model_type":"qwen3_5"}`), 0o644)
	os.WriteFile(filepath.Join(good, "model.safetensors"), make([]byte, 10), 0o644)
	broken := filepath.Join(lms, "someone", "broken")
	os.MkdirAll(broken, 0o755)
	snap, err := Snapshot(cache, f.repo, "")
	if err != nil {
		t.Fatal(err)
	}
	// A recent folder that is the cache's snapshot (the app loaded it) or LM
	// Studio's folder shows once, under where it lives.
	models := Library(cache, lms, []string{snap + string(filepath.Separator), good})
	if len(models) != 3 {
		t.Fatalf("%d models: %+v", len(models), models)
	}
	byName := map[string]LocalModel{}
	for _, m := range models {
		byName[m.Name] = m
	}
	if m := byName[f.repo]; m.Source != "Hub cache" || m.Repo != f.repo || m.ModelType != "qwen3_5_moe" || m.Bytes != 300_000 || m.Problem != "" {
		t.Errorf("hub model %+v", m)
	}
	if m := byName["lmstudio-community/Qwen3.5-2B-MLX-4bit"]; m.Source != "LM Studio" || m.ModelType != "qwen3_5" || m.Problem != "" {
		t.Errorf("LM Studio model %+v", m)
	}
	if m := byName["someone/broken"]; m.Problem == "" {
		t.Errorf("broken folder %+v", m)
	}
}

// TestDownloadChecksTheModelFirst: with Runs set, a repository without
// config.json or safetensors, with a broken config.json, or of a model type
// the app does not run is refused before anything is written or any weight is
// fetched; one the app runs downloads.
func TestDownloadChecksTheModelFirst(t *testing.T) {
	runsMoE := func(t string) bool { return t == "qwen3_5_moe" }
	for _, c := range []struct {
		name   string
		change func(f *fakeHub)
		runs   func(string) bool
		want   string // "" means the download succeeds
	}{
		{"runs", func(*fakeHub) {}, runsMoE, ""},
		{"other type", func(*fakeHub) {}, func(string) bool { return false }, `model_type is "qwen3_5_moe", a model type this app does not run`},
		{"no config", func(f *fakeHub) { delete(f.files, "config.json") }, runsMoE, "has no config.json"},
		{"no weights", func(f *fakeHub) { delete(f.files, "model.safetensors") }, runsMoE, "has no .safetensors files"},
		{"bad config", func(f *fakeHub) { f.files["config.json"] = []byte("{oops") }, runsMoE, "config.json is not a readable JSON object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeHub(t)
			c.change(f)
			cache := t.TempDir()
			_, err := f.client().Download(context.Background(), cache, f.repo, DownloadOptions{Runs: c.runs})
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying %q", err, c.want)
			}
			if entries, _ := os.ReadDir(cache); len(entries) != 0 {
				t.Errorf("the refused download left %d entries in the cache", len(entries))
			}
			for _, r := range f.requests {
				if strings.HasSuffix(r, ".safetensors") {
					t.Errorf("the refused download fetched %s", r)
				}
			}
		})
	}
}

// TestDownloadCheck: Check sees config.json and the bytes to download before
// anything is written; its error stops the download, nothing fetched.
func TestDownloadCheck(t *testing.T) {
	f := newFakeHub(t)
	cache := t.TempDir()
	var sawConfig []byte
	var sawBytes int64
	refuse := errors.New("does not fit")
	_, err := f.client().Download(context.Background(), cache, f.repo, DownloadOptions{Check: func(config []byte, n int64) error {
		sawConfig, sawBytes = config, n
		return refuse
	}})
	if !errors.Is(err, refuse) {
		t.Fatalf("err = %v, want Check's", err)
	}
	var want int64
	for _, data := range f.files {
		want += int64(len(data))
	}
	if string(sawConfig) != string(f.files["config.json"]) || sawBytes != want {
		t.Errorf("Check saw %d bytes of config and %d to download; want %d and %d", len(sawConfig), sawBytes, len(f.files["config.json"]), want)
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("the refused download left %d entries in the cache", len(entries))
	}
	for _, r := range f.requests {
		if strings.HasSuffix(r, ".safetensors") {
			t.Errorf("the refused download fetched %s", r)
		}
	}
	if _, err := f.client().Download(context.Background(), cache, f.repo, DownloadOptions{Check: func([]byte, int64) error { return nil }}); err != nil {
		t.Fatalf("with Check accepting: %v", err)
	}
}

// TestDelete: Delete removes a repo with every blob and leaves the rest of the
// cache; it refuses a bad name, a repo the cache lacks and a repo folder that
// is a link (whose target is outside what the cache owns).
func TestDelete(t *testing.T) {
	f := newFakeHub(t)
	cache := t.TempDir()
	if _, err := f.client().Download(context.Background(), cache, f.repo, DownloadOptions{}); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(cache, "models--org--other", "refs")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "main"), []byte("abc"), 0o644)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "keep"), []byte("x"), 0o644)
	if err := os.Symlink(outside, filepath.Join(cache, "models--org--linked")); err != nil {
		t.Fatal(err)
	}

	if err := Delete(cache, f.repo); err != nil {
		t.Fatal(err)
	}
	dir, _ := RepoDir(cache, f.repo)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is still there (%v)", dir, err)
	}
	entries, _ := os.ReadDir(cache)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != ".locks models--org--linked models--org--other" {
		t.Errorf("the cache holds %v after the delete, want the two other repos only (and the locks' folder)", names)
	}
	if locks, _ := os.ReadDir(filepath.Join(cache, ".locks")); len(locks) != 0 {
		t.Errorf("the deleted repo's download locks are left: %v", locks)
	}
	for _, c := range []struct{ repo, want string }{
		{f.repo, "not in the Hub cache"},
		{"../x", "not a Hub model name"},
		{"org/linked", "a link?"},
	} {
		if err := Delete(cache, c.repo); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Delete(%q) = %v, want an error saying %q", c.repo, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Errorf("the link's target lost its file: %v", err)
	}
}

func TestUnsafeFileNames(t *testing.T) {
	for _, p := range []string{"../x", "/etc/passwd", "a/../../b", "", "a\\b", ".", "..", "a//b", "a/./b", "a\x00b"} {
		if safePath(p) == nil {
			t.Errorf("%q accepted", p)
		}
	}
	if safePath("sub/dir/file.json") != nil {
		t.Error("a nested path refused")
	}
}

// TestResumeAfterAKilledProcess: a download whose process is killed mid-file
// (a child running TestDownloadChild) leaves its .incomplete part, and the
// next Download resumes it with a Range request into a verified blob.
func TestResumeAfterAKilledProcess(t *testing.T) {
	f := newFakeHub(t)
	f.stallAfter = 100_000
	cache := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDownloadChild$")
	cmd.Env = append(os.Environ(), "BAGEL_HUB_CHILD_ENDPOINT="+f.hub.URL, "BAGEL_HUB_CHILD_CACHE="+cache, "BAGEL_HUB_CHILD_REPO="+f.repo)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var part string
	deadline := time.Now().Add(60 * time.Second)
	for {
		parts, _ := filepath.Glob(filepath.Join(cache, "models--*", "blobs", "*.incomplete"))
		if len(parts) == 1 {
			if st, err := os.Stat(parts[0]); err == nil && st.Size() >= 100_000 {
				part = parts[0]
				break
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the child wrote no partial file")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := os.Stat(part); err != nil {
		t.Fatalf("the killed download left no part: %v", err)
	}

	f.mu.Lock()
	f.stallAfter = 0
	f.mu.Unlock()
	snap, err := f.client().Download(context.Background(), cache, f.repo, DownloadOptions{})
	if err != nil {
		t.Fatalf("resuming: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(snap, "model.safetensors")); !bytes.Equal(got, f.files["model.safetensors"]) {
		t.Error("the resumed file differs")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.rangeFrom, 100_000) {
		t.Errorf("no Range request from byte 100000 (ranges: %v)", f.rangeFrom)
	}
}

// TestDownloadChild is the process TestResumeAfterAKilledProcess kills: it
// downloads from the fake Hub its parent names until it is killed.
func TestDownloadChild(t *testing.T) {
	endpoint := os.Getenv("BAGEL_HUB_CHILD_ENDPOINT")
	if endpoint == "" {
		t.Skip("the child process of TestResumeAfterAKilledProcess")
	}
	c := &Client{Endpoint: endpoint, HTTP: &http.Client{}, Retries: 0}
	_, err := c.Download(context.Background(), os.Getenv("BAGEL_HUB_CHILD_CACHE"), os.Getenv("BAGEL_HUB_CHILD_REPO"), DownloadOptions{})
	t.Fatalf("the download ended before the parent killed it: %v", err)
}

// TestDisplayName: a Hub cache snapshot is named by its repository, any
// other folder by its own name.
func TestDisplayName(t *testing.T) {
	for dir, want := range map[string]string{
		"/c/hub/models--mlx-community--Qwen3.5-35B-A3B-4bit/snapshots/0123abcd":  "mlx-community/Qwen3.5-35B-A3B-4bit",
		"/c/hub/models--mlx-community--Qwen3.5-35B-A3B-4bit/snapshots/0123abcd/": "mlx-community/Qwen3.5-35B-A3B-4bit",
		"/home/me/models/Qwen3.5-0.8B-4bit":                                      "Qwen3.5-0.8B-4bit",
		"/c/hub/models--broken/snapshots/0123abcd":                               "0123abcd",
		"/x/snapshots/0123abcd":                                                  "0123abcd",
	} {
		if got := DisplayName(dir); got != want {
			t.Errorf("DisplayName(%q) = %q, want %q", dir, got, want)
		}
	}
}

// TestHostileHubWritesNothingOutsideTheCache: a Hub that sends "../" in any
// name the cache's paths are built from — the revision's commit, a file's git
// object id, its LFS checksum, its path — is refused with a message naming
// it, and nothing appears outside the cache (the traversal names point at a
// folder beside it). The X-Repo-Commit and ETag headers that huggingface_hub
// reads are ignored: with traversal names in them the download lands inside
// the cache as usual. A revision typed with "../" is refused before any request.
func TestHostileHubWritesNothingOutsideTheCache(t *testing.T) {
	// From blobs/ or snapshots/ of ROOT/a/b/cache/models--ORG--NAME, five
	// steps up is ROOT; from a snapshot's own folder, six.
	escape := strings.Repeat("../", 5) + "outside/x"
	sibling := func(info map[string]any, path string) map[string]any {
		for _, s := range info["siblings"].([]map[string]any) {
			if s["rfilename"] == path {
				return s
			}
		}
		t.Fatalf("no %s in the fake repository", path)
		return nil
	}
	cases := []struct {
		name    string
		mangle  func(info map[string]any)
		headers map[string]string
		want    string // in the error; "" when the download succeeds
	}{
		{"commit", func(info map[string]any) { info["sha"] = escape }, nil, "not a 40-digit hex commit id"},
		{"blob id", func(info map[string]any) { sibling(info, "config.json")["blobId"] = escape }, nil, "not a 40-digit hex git id"},
		{"LFS checksum", func(info map[string]any) {
			sibling(info, "model.safetensors")["lfs"].(map[string]any)["sha256"] = escape
		}, nil, "not a 64-digit hex sha256"},
		{"file path", func(info map[string]any) { sibling(info, "config.json")["rfilename"] = "../" + escape }, nil, "leaves the repository"},
		{"headers", nil, map[string]string{"X-Repo-Commit": escape, "ETag": `"` + escape + `"`}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeHub(t)
			f.mangle, f.headers = c.mangle, c.headers
			root := t.TempDir()
			cache, outside := filepath.Join(root, "a", "b", "cache"), filepath.Join(root, "outside")
			for _, dir := range []string{cache, outside} { // outside exists: a write there would succeed
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			_, err := f.client().Download(context.Background(), cache, f.repo, DownloadOptions{})
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("Download: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("Download = %v, want an error saying %q", err, c.want)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Errorf("the download wrote outside the cache: %v in %s", entries, outside)
			}
			if entries, _ := os.ReadDir(root); len(entries) != 2 {
				t.Errorf("the download wrote beside the cache: %v", entries)
			}
			for _, dir := range []string{filepath.Join(root, "a"), filepath.Join(root, "a", "b")} {
				if e, _ := os.ReadDir(dir); len(e) != 1 {
					t.Errorf("the download wrote beside the cache, in %s: %v", dir, e)
				}
			}
			if c.want != "" {
				if _, err := os.Stat(filepath.Join(repoDir(cache, f.repo), "snapshots")); err == nil {
					t.Errorf("a refused repository left a snapshot folder")
				}
			}
		})
	}
	f := newFakeHub(t)
	_, err := f.client().Download(context.Background(), t.TempDir(), f.repo, DownloadOptions{Revision: "../../x"})
	if err == nil || !strings.Contains(err.Error(), "not a branch, tag or commit name") {
		t.Errorf("Download at revision ../../x = %v", err)
	}
	if len(f.requests) != 0 {
		t.Errorf("a bad revision reached the Hub: %v", f.requests)
	}
	if _, err := Snapshot(t.TempDir(), f.repo, "../../x"); err == nil {
		t.Error("Snapshot accepted the revision ../../x")
	}
}

// TestTokenStaysOnTheHub: the token goes with every request to the Hub and
// never to the host a resolve redirects to (here the same host on another
// port, where Go's own redirect rule would have kept it; serveCDN fails the
// test when it sees it).
func TestTokenStaysOnTheHub(t *testing.T) {
	f := newFakeHub(t)
	c := f.client()
	c.Token = "hf_secret"
	if _, err := c.Download(context.Background(), t.TempDir(), f.repo, DownloadOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, a := range f.auth {
		if a != "Bearer hf_secret" {
			t.Errorf("request %d to the Hub (%s) carried %q", i, f.requests[i], a)
		}
	}
}

// TestTwoPullsAtOnce: two downloads of one repository into one cache at the
// same time both finish with verified blobs: a blob's part is written by one
// at a time (a lock), and the one that waited finds the blob made.
func TestTwoPullsAtOnce(t *testing.T) {
	f := newFakeHub(t)
	cache := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = f.client().Download(context.Background(), cache, f.repo, DownloadOptions{})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("download %d: %v", i, err)
		}
	}
	data, err := os.ReadFile(filepath.Join(repoDir(cache, f.repo), "snapshots", f.commit, "model.safetensors"))
	if err != nil || !bytes.Equal(data, f.files["model.safetensors"]) {
		t.Errorf("the blob after two pulls: %d bytes, %v", len(data), err)
	}
}

// TestLibrarySeesVisionTowers: a folder whose config declares a vision tower
// and whose shard's header names its tensors sees images; one that declares
// it without the tensors (an mlx-lm conversion), or holds them without the
// config, does not; an index's names count as the shards'.
func TestLibrarySeesVisionTowers(t *testing.T) {
	shard := func(names ...string) []byte {
		h := map[string]any{"__metadata__": map[string]string{"format": "mlx"}}
		for _, n := range names {
			h[n] = map[string]any{"dtype": "BF16", "shape": []int{1}, "data_offsets": []int{0, 2}}
		}
		js, _ := json.Marshal(h)
		out := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
		return append(append(out, js...), 0, 0)
	}
	folder := func(config string, files map[string][]byte) string {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "config.json"), []byte(config), 0o644)
		for name, data := range files {
			os.WriteFile(filepath.Join(dir, name), data, 0o644)
		}
		return dir
	}
	withVision := `{"model_type":"qwen3_5","vision_config":{"depth":27}}`
	for _, c := range []struct {
		name string
		dir  string
		want bool
	}{
		{"tower", folder(withVision, map[string][]byte{"model.safetensors": shard("language_model.model.embed_tokens.weight", "vision_tower.patch_embed.proj.weight")}), true},
		{"config only", folder(withVision, map[string][]byte{"model.safetensors": shard("language_model.model.embed_tokens.weight")}), false},
		{"tensors only", folder(`{"model_type":"qwen3_5"}`, map[string][]byte{"model.safetensors": shard("vision_tower.patch_embed.proj.weight")}), false},
		{"index", folder(withVision, map[string][]byte{"model-00001-of-00002.safetensors": shard("x"),
			"model.safetensors.index.json": []byte(`{"weight_map":{"model.visual.blocks.0.attn.qkv.weight":"model-00002-of-00002.safetensors"}}`)}), true},
	} {
		if got := Describe(c.name, c.dir, "folder").Vision; got != c.want {
			t.Errorf("%s: Vision = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestLibraryPassesOverOddFiles: a named pipe where config.json, a shard
// or a ref should be (opening one for reading blocks until something
// writes it) and a ref that is not a commit id are named as problems or
// passed over, and the listing comes back at once.
func TestLibraryPassesOverOddFiles(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	pipeConfig := filepath.Join(dir, "pipe-config")
	pipeShard := filepath.Join(dir, "pipe-shard")
	for _, d := range []string{pipeConfig, pipeShard} {
		os.MkdirAll(d, 0o755)
	}
	if err := syscall.Mkfifo(filepath.Join(pipeConfig, "config.json"), 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	os.WriteFile(filepath.Join(pipeShard, "config.json"), []byte(`{"model_type":"qwen3_5","vision_config":{}}`), 0o644)
	syscall.Mkfifo(filepath.Join(pipeShard, "model.safetensors"), 0o644)
	// A cache repository whose refs are a pipe and a path out of the cache.
	repo := filepath.Join(cache, "models--org--odd")
	os.MkdirAll(filepath.Join(repo, "refs"), 0o755)
	syscall.Mkfifo(filepath.Join(repo, "refs", "main"), 0o644)
	os.WriteFile(filepath.Join(repo, "refs", "dev"), []byte("../../../"+filepath.Base(dir)+"/pipe-shard"), 0o644)

	done := make(chan []LocalModel)
	go func() { done <- Library(cache, "", []string{pipeConfig, pipeShard}) }()
	var models []LocalModel
	select {
	case models = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the listing hangs on a named pipe")
	}
	byName := map[string]LocalModel{}
	for _, m := range models {
		byName[m.Name] = m
	}
	if m := byName["pipe-config"]; !strings.Contains(m.Problem, "config.json: not a regular file (a named pipe)") {
		t.Errorf("a pipe for config.json: %+v", m)
	}
	if m := byName["pipe-shard"]; !strings.Contains(m.Problem, "model.safetensors: not a regular file (a named pipe)") || m.Vision {
		t.Errorf("a pipe for a shard: %+v", m)
	}
	if len(models) != 2 {
		t.Errorf("refs that are a pipe or not a commit id were listed: %+v", models)
	}
}

// TestHubThatSendsTooMuch: a server that answers past what it should (a
// broken mirror, an endless answer) is refused by name, with nothing kept,
// rather than read into memory or written to the disk until either fills.
func TestHubThatSendsTooMuch(t *testing.T) {
	for _, extra := range []int{1, 1 << 20, -1} {
		f := newFakeHub(t)
		f.extra = extra
		cache := t.TempDir()
		_, err := f.client().Download(context.Background(), cache, f.repo, DownloadOptions{})
		if err == nil || !strings.Contains(err.Error(), "more than the") || !strings.Contains(err.Error(), "tokenizer_config.json") {
			t.Fatalf("%d bytes too many: %v", extra, err)
		}
		filepath.WalkDir(cache, func(path string, d os.DirEntry, err error) error {
			if info, err := d.Info(); err == nil && !d.IsDir() && info.Size() > 300_000 {
				t.Errorf("%d bytes too many: left %s of %d bytes", extra, path, info.Size())
			}
			return nil
		})
	}

	defer func(was int64) { maxAnswerBytes = was }(maxAnswerBytes)
	maxAnswerBytes = 1 << 20
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		item := `{"rfilename": "x.json", "size": 1},`
		if r.URL.Path == "/api/models" { // a search
			io.WriteString(w, `[`)
			item = `{"id": "a/b", "downloads": 1},`
		} else {
			io.WriteString(w, `{"id": "a/b", "sha": "`+strings.Repeat("c", 40)+`", "siblings": [`)
		}
		for {
			if _, err := io.WriteString(w, item); err != nil {
				return
			}
		}
	}))
	defer endless.Close()
	c := &Client{Endpoint: endless.URL, HTTP: &http.Client{}, Backoff: time.Millisecond}
	if _, err := c.Info(context.Background(), "a/b", ""); err == nil || !strings.Contains(err.Error(), "runs past 1 MB") {
		t.Errorf("an endless listing: %v", err)
	}
	if _, err := c.Search(context.Background(), "qwen", SearchOptions{}); err == nil || !strings.Contains(err.Error(), "runs past 1 MB") {
		t.Errorf("an endless search: %v", err)
	}
}
