package hub

import (
	"fmt"
	"path"
	"strings"
)

// Names that come from the network — a revision's commit, a file's git object
// id or LFS checksum, its path in the repository — become folder and file
// names in the cache (snapshots/COMMIT/PATH, blobs/OID), as does the
// revision a person asks for (refs/REVISION). A hostile or broken Hub could
// send "../../…" in any of them. Each is checked before it touches the file
// system; a repository that sends one that fails is refused with nothing
// written. (The X-Repo-Commit and ETag headers huggingface_hub reads are not
// read here: the commit and checksums come from the model info API.)

// isHex reports whether s is n lowercase or uppercase hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// checkCommit refuses a commit id that is not a git commit hash (40 hex
// digits): it names the snapshot folder.
func checkCommit(what, sha string) error {
	if !isHex(sha, 40) {
		return fmt.Errorf("%s: the Hub names the commit %q, not a 40-digit hex commit id; refused, nothing written", what, clip(sha))
	}
	return nil
}

// checkBlob refuses a file whose blob name (its LFS sha256, else its git
// object id) is not the hex digest it must be: it names the file under blobs/.
func checkBlob(repo string, f File) error {
	switch {
	case f.LFS != nil && f.LFS.SHA256 != "":
		if !isHex(f.LFS.SHA256, 64) {
			return fmt.Errorf("%s: the Hub gives %s the LFS checksum %q, not a 64-digit hex sha256; refused, nothing written", repo, clip(f.Path), clip(f.LFS.SHA256))
		}
	case !isHex(f.BlobID, 40):
		return fmt.Errorf("%s: the Hub gives %s the object id %q, not a 40-digit hex git id; refused, nothing written", repo, clip(f.Path), clip(f.BlobID))
	}
	return nil
}

// safePath refuses repository paths that would leave the snapshot folder:
// absolute, with a backslash or a NUL, or not clean (a "..", ".", or empty
// element).
func safePath(p string) error {
	if p == "" || path.IsAbs(p) || strings.ContainsAny(p, "\\\x00") || path.Clean(p) != p || p == "." ||
		p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Errorf("file name %q leaves the repository", clip(p))
	}
	return nil
}

// checkRevision refuses a revision (a branch, a tag or a commit, as a person
// types it after @) that cannot name a file under refs/: it must be a clean
// relative path ("main", "v1.0", "refs/pr/3").
func checkRevision(rev string) error {
	if err := safePath(rev); err != nil || strings.ContainsAny(rev, "\r\n") {
		return fmt.Errorf("revision %q is not a branch, tag or commit name", clip(rev))
	}
	return nil
}

// clip shortens a name for a message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
