package hub

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"bagel/internal/regular"
)

// The Hub cache, laid out as huggingface_hub lays it out, so that a model
// fetched by mlx-lm or huggingface-cli is found here and one fetched here is
// used by them:
//
//	$HF_HUB_CACHE (or $HF_HOME/hub, or ~/.cache/huggingface/hub)
//	  models--ORG--NAME/
//	    blobs/SHA256 or GIT-OID            the files' contents
//	    blobs/….incomplete                 a download in progress (resumed by Range)
//	    refs/main                          the commit a revision points to
//	    snapshots/COMMIT/PATH -> ../../blobs/…   relative links, one per file

// hfHome is $HF_HOME, or ~/.cache/huggingface.
func hfHome() string {
	if h := os.Getenv("HF_HOME"); h != "" {
		return h
	}
	if x := os.Getenv("XDG_CACHE_HOME"); x != "" {
		return filepath.Join(x, "huggingface")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "huggingface")
}

// CacheDir is the Hub cache: $HF_HUB_CACHE, else $HF_HOME/hub.
func CacheDir() string {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return d
	}
	return filepath.Join(hfHome(), "hub")
}

// DisplayName is how a model folder is named to a person: "ORG/NAME" for a
// snapshot of the Hub cache layout (…/models--ORG--NAME/snapshots/COMMIT,
// whose own name is a commit hash), else the folder's name.
func DisplayName(dir string) string {
	dir = filepath.Clean(dir)
	snapshots := filepath.Dir(dir)
	repo := filepath.Base(filepath.Dir(snapshots))
	if filepath.Base(snapshots) == "snapshots" && strings.HasPrefix(repo, "models--") {
		if org, name, ok := strings.Cut(strings.TrimPrefix(repo, "models--"), "--"); ok && org != "" && name != "" {
			return org + "/" + name
		}
	}
	return filepath.Base(dir)
}

// repoDir is the cache folder of a model repository ("org/name").
func repoDir(cache, repo string) string {
	return filepath.Join(cache, "models--"+strings.ReplaceAll(repo, "/", "--"))
}

// Snapshot is the folder of repo at revision in the cache when the revision
// is known there (refs/REV, or a commit), else an error. It does not check that
// every file is present: Download does, and Library reports what loads.
func Snapshot(cache, repo, revision string) (string, error) {
	if _, err := repoPath(repo); err != nil {
		return "", err
	}
	if revision == "" {
		revision = "main"
	}
	if err := checkRevision(revision); err != nil {
		return "", fmt.Errorf("%s: %w", repo, err)
	}
	dir := repoDir(cache, repo)
	commit := revision
	if ref, err := regular.ReadFile(filepath.Join(dir, "refs", revision), 1<<10); err == nil {
		commit = strings.TrimSpace(string(ref))
		if err := checkCommit(filepath.Join(dir, "refs", revision), commit); err != nil {
			return "", err
		}
	}
	snap := filepath.Join(dir, "snapshots", commit)
	if st, err := os.Stat(snap); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%s@%s is not in the Hub cache %s (bagel pull %s downloads it)", repo, revision, cache, repo)
	}
	return snap, nil
}

// linkSeq numbers link's temporary names.
var linkSeq atomic.Int64

// link points snapshots/COMMIT/PATH at blobs/BLOB with a relative link, as
// huggingface_hub does (a copy where links are not allowed).
func link(snapDir, path, blobPath string) error {
	dst := filepath.Join(snapDir, filepath.FromSlash(path))
	if rel, err := filepath.Rel(snapDir, dst); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("file name %q leaves the snapshot folder", path) // (safePath refused it already)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(dst), blobPath)
	if err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.link-tmp-%d-%d", dst, os.Getpid(), linkSeq.Add(1)) // one a call: two pulls at once
	if err := os.Symlink(rel, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, dst) // atomic: never a half-made entry
}

// RepoDir is the cache folder of repo ("org/name"): every revision of it.
func RepoDir(cache, repo string) (string, error) {
	if _, err := repoPath(repo); err != nil {
		return "", err
	}
	return repoDir(cache, repo), nil
}

// Delete removes repo ("org/name"), every revision and blob of it, from the
// cache, and nothing outside the cache: a repo folder that is a link is
// refused. The folder is first renamed out of the cache's naming scheme, so an
// interrupted delete never leaves a half model that Library or mlx-lm would
// take for a whole one; what is left of it is removed by the next Delete.
func Delete(cache, repo string) error {
	dir, err := RepoDir(cache, repo)
	if err != nil {
		return err
	}
	st, err := os.Lstat(dir)
	switch {
	case os.IsNotExist(err):
		return fmt.Errorf("%s is not in the Hub cache %s", repo, cache)
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s is not a folder of the Hub cache (a link?); Bagel deletes only what the cache holds", dir)
	}
	trash := filepath.Join(cache, ".bagel-deleting-"+filepath.Base(dir))
	if err := os.RemoveAll(trash); err != nil { // an earlier interrupted delete
		return fmt.Errorf("removing %s: %w", trash, err)
	}
	if err := os.Rename(dir, trash); err != nil {
		return fmt.Errorf("deleting %s: %w", repo, err)
	}
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("deleting %s: %w (what is left is in %s)", repo, err, trash)
	}
	os.RemoveAll(filepath.Join(cache, ".locks", filepath.Base(dir))) // its download locks (lockBlob)
	return nil
}

// Attach puts the file src (in the cache: a snapshot's link, followed to its
// blob) into the snapshot folder snapDir under its own name, as a link to
// that blob: a model's multi-token-prediction head, mtp.safetensors, fetched
// from the repository it was released in, beside a conversion that dropped
// it. A regular file of that name in snapDir is left alone (an error).
func Attach(snapDir, src string) error {
	blob, err := filepath.EvalSymlinks(src)
	if err != nil {
		return err
	}
	name := filepath.Base(src)
	if st, err := os.Lstat(filepath.Join(snapDir, name)); err == nil && st.Mode()&os.ModeSymlink == 0 {
		return fmt.Errorf("%s already holds a file %s; not replaced", snapDir, name)
	}
	return link(snapDir, name, blob)
}
