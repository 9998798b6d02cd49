package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
)

// Progress is what a download has done so far, for a progress bar.
type Progress struct {
	Done, Total int64 // bytes, over every file
	File        string
}

// DownloadOptions tune Download.
type DownloadOptions struct {
	Revision string                 // "" is main
	Only     func(path string) bool // which files to fetch; nil: all
	Parallel int                    // files at once; 0 means 4
	Progress func(Progress)         // called from the download goroutines
	// FreeBytes reports the space left on the cache's file system (a test
	// seam); nil asks the OS.
	FreeBytes func(dir string) (int64, bool)
	// Runs, when set, says whether the app runs a config.json model_type.
	// Download then checks the repository before it writes anything: it
	// needs .safetensors files and a config.json (read into memory) whose
	// model_type Runs accepts, so gigabytes are not fetched for nothing.
	Runs func(modelType string) bool
	// Check, when set, sees the repository's config.json and the bytes the
	// download would bring, before anything is written (the app's memory
	// estimate); an error from it stops the download and is returned as it is.
	Check func(config []byte, downloadBytes int64) error
	// Paused, when set and true once ctx is cancelled, keeps the partial
	// files of this run for a later Download to resume (a pause, or the app
	// closing mid-download) instead of removing them (a cancel).
	Paused func() bool
}

// maxConfigBytes bounds the config.json read before a download.
const maxConfigBytes = 4 << 20

// Download fetches repo at a revision into the cache and returns its snapshot
// folder. Files already there are kept; a file interrupted by a failure or a
// restart resumes from its .incomplete part with an HTTP Range request; every
// LFS file is checked against its sha256 before it becomes a blob, and a blob
// appears only by a rename, so a crash never leaves a half file that looks
// complete. Cancelling ctx stops it and removes the partial files of this run,
// unless opt.Paused says it is a pause.
func (c *Client) Download(ctx context.Context, cache, repo string, opt DownloadOptions) (string, error) {
	if opt.Revision != "" {
		if err := checkRevision(opt.Revision); err != nil {
			return "", fmt.Errorf("%s: %w", repo, err)
		}
	}
	info, err := c.Info(ctx, repo, opt.Revision)
	if err != nil {
		return "", err
	}
	var config []byte
	if opt.Runs != nil || opt.Check != nil {
		if config, err = c.checkModel(ctx, repo, info, opt.Runs); err != nil {
			return "", err
		}
	}
	var files []File
	var total, need int64
	dir := repoDir(cache, repo)
	for _, f := range info.Files {
		if opt.Only != nil && !opt.Only(f.Path) {
			continue
		}
		if err := safePath(f.Path); err != nil {
			return "", fmt.Errorf("%s: %w; refused, nothing written", repo, err)
		}
		if f.Blob() == "" {
			return "", fmt.Errorf("%s: the Hub names no checksum or object id for %s", repo, f.Path)
		}
		if err := checkBlob(repo, f); err != nil {
			return "", err
		}
		files = append(files, f)
		total += f.Bytes()
		if _, err := os.Stat(filepath.Join(dir, "blobs", f.Blob())); err != nil {
			need += f.Bytes()
		}
	}
	if len(files) == 0 {
		return "", fmt.Errorf("%s@%s: no files to download", repo, info.SHA)
	}
	if opt.Check != nil {
		if err := opt.Check(config, total); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "blobs"), 0o755); err != nil {
		return "", err
	}
	free := opt.FreeBytes
	if free == nil {
		free = freeBytes
	}
	if n, ok := free(dir); ok && n < need {
		return "", fmt.Errorf("%s: %.1f GB to download, %.1f GB free in %s", repo, float64(need)/1e9, float64(n)/1e9, cache)
	}

	snap := filepath.Join(dir, "snapshots", info.SHA)
	var done atomic.Int64
	report := func(file string) {
		if opt.Progress != nil {
			opt.Progress(Progress{Done: done.Load(), Total: total, File: file})
		}
	}
	parallel := opt.Parallel
	if parallel <= 0 {
		parallel = 4
	}
	work := make(chan File)
	errs := make(chan error, len(files))
	var wg sync.WaitGroup
	for range min(parallel, len(files)) {
		wg.Go(func() {
			for f := range work {
				errs <- c.fetch(ctx, dir, repo, info.SHA, f, &done, report)
			}
		})
	}
	for _, f := range files {
		work <- f
	}
	close(work)
	wg.Wait()
	close(errs)
	var first error
	for err := range errs {
		if err != nil && first == nil {
			first = err
		}
	}
	if ctx.Err() != nil {
		if opt.Paused == nil || !opt.Paused() {
			for _, f := range files { // cancel: no partial file of this run stays
				os.Remove(filepath.Join(dir, "blobs", f.Blob()+".incomplete"))
			}
		}
		return "", ctx.Err()
	}
	if first != nil {
		return "", first
	}
	for _, f := range files {
		if err := link(snap, f.Path, filepath.Join(dir, "blobs", f.Blob())); err != nil {
			return "", err
		}
	}
	if opt.Revision != info.SHA { // a branch or tag: record where it points
		rev := opt.Revision
		if rev == "" {
			rev = "main"
		}
		if err := writeAtomic(filepath.Join(dir, "refs", rev), []byte(info.SHA)); err != nil {
			return "", err
		}
	}
	return snap, nil
}

// checkModel refuses a repository the app cannot run, from its file list and
// its config.json (read into memory and returned; nothing is written). runs
// nil accepts any model_type.
func (c *Client) checkModel(ctx context.Context, repo string, info *ModelInfo, runs func(string) bool) ([]byte, error) {
	hasConfig, hasWeights := false, false
	for _, f := range info.Files {
		hasConfig = hasConfig || f.Path == "config.json"
		hasWeights = hasWeights || strings.HasSuffix(f.Path, ".safetensors")
	}
	switch {
	case !hasConfig:
		return nil, fmt.Errorf("%s@%s has no config.json: not a model folder this app can load", repo, info.SHA[:min(8, len(info.SHA))])
	case !hasWeights:
		return nil, fmt.Errorf("%s@%s has no .safetensors files: this app loads MLX safetensors checkpoints only", repo, info.SHA[:min(8, len(info.SHA))])
	}
	p, _ := repoPath(repo)
	u := fmt.Sprintf("%s/%s/resolve/%s/config.json", c.Endpoint, p, info.SHA)
	resp, err := c.do(ctx, repo+"/config.json", func() (*http.Request, error) { return http.NewRequest(http.MethodGet, u, nil) })
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s/config.json: %w", repo, err)
	}
	var cfg struct {
		ModelType string `json:"model_type"`
	}
	if len(data) > maxConfigBytes || json.Unmarshal(data, &cfg) != nil {
		return nil, fmt.Errorf("%s/config.json is not a readable JSON object (%d bytes)", repo, len(data))
	}
	if runs != nil && !runs(cfg.ModelType) {
		return nil, fmt.Errorf("%s: config.json's model_type is %q, a model type this app does not run; nothing was downloaded", repo, cfg.ModelType)
	}
	return data, nil
}

// fetch brings one file's blob into the cache, resuming its .incomplete part.
func (c *Client) fetch(ctx context.Context, dir, repo, commit string, f File, done *atomic.Int64, report func(string)) error {
	blob := filepath.Join(dir, "blobs", f.Blob())
	unlock, err := lockBlob(dir, f.Blob())
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(blob); err == nil { // (another download may just have made it)
		done.Add(f.Bytes())
		report(f.Path)
		return nil
	}
	part := blob + ".incomplete"
	out, err := os.OpenFile(part, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	have, err := out.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	if have > f.Bytes() { // longer than the file: start over
		if err := out.Truncate(0); err != nil {
			return err
		}
		have, _ = out.Seek(0, io.SeekStart)
	}
	done.Add(have)
	p, _ := repoPath(repo)
	u := fmt.Sprintf("%s/%s/resolve/%s/%s", c.Endpoint, p, commit, escapePath(f.Path))
	what := repo + "/" + f.Path
	for have < f.Bytes() {
		resp, err := c.do(ctx, what, func() (*http.Request, error) {
			req, err := http.NewRequest(http.MethodGet, u, nil)
			if err == nil && have > 0 {
				req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
			}
			return req, err
		})
		if err != nil {
			return err
		}
		if have > 0 && resp.StatusCode != http.StatusPartialContent { // the server sends it whole
			done.Add(-have)
			have = 0
			if err := out.Truncate(0); err != nil {
				resp.Body.Close()
				return err
			}
			out.Seek(0, io.SeekStart)
		}
		// At most one byte past what the listing gives: a server that sends
		// more (a broken mirror, an endless answer) is refused, not
		// written to the disk until it fills.
		body := io.LimitReader(resp.Body, f.Bytes()-have+1)
		n, err := io.Copy(out, &counting{ctx: ctx, r: body, done: done, report: func() { report(f.Path) }})
		resp.Body.Close()
		have += n
		if have > f.Bytes() {
			out.Close()
			os.Remove(part) // a wrong file is never resumed
			return fmt.Errorf("%s: the Hub sent more than the %d bytes its listing gives the file", what, f.Bytes())
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if n == 0 {
				return fmt.Errorf("%s: the download broke off: %w", what, err)
			}
			continue // resume from where it stopped
		}
		if n == 0 && have < f.Bytes() {
			return fmt.Errorf("%s: the Hub sent %d of %d bytes", what, have, f.Bytes())
		}
	}
	if err := out.Close(); err != nil {
		return err
	}
	if f.LFS != nil {
		if err := checkSHA256(part, f.LFS.SHA256); err != nil {
			os.Remove(part) // a wrong file is never resumed
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return os.Rename(part, blob)
}

// lockBlob takes an exclusive lock on a blob of the repository folder dir,
// held until unlock: two downloads of one blob (two pulls of one
// repository, two files of equal content) take turns instead of writing one
// part together. The lock files sit where huggingface_hub keeps its own,
// CACHE/.locks/models--ORG--NAME/BLOB.lock, so that it and Bagel take turns
// too.
func lockBlob(dir, blob string) (unlock func(), err error) {
	locks := filepath.Join(filepath.Dir(dir), ".locks", filepath.Base(dir))
	if err := os.MkdirAll(locks, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(locks, blob+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

// counting passes a body through, adding what it reads to done. It stops at
// once when ctx ends: a body the transport has already buffered would
// otherwise be copied to its end, and a pause would finish the file.
type counting struct {
	ctx    context.Context
	r      io.Reader
	done   *atomic.Int64
	report func()
}

func (c *counting) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	if n > 0 {
		c.done.Add(int64(n))
		c.report()
	}
	return n, err
}

func checkSHA256(path, want string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, want) {
		return fmt.Errorf("checksum mismatch: sha256 %s, the Hub says %s (the partial file was removed; download again)", got, want)
	}
	return nil
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*") // one a call: two pulls at once
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err := errors.Join(err, tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
