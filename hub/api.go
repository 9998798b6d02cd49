package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// ModelSummary is one search result.
type ModelSummary struct {
	ID        string   `json:"id"`
	Downloads int      `json:"downloads"`
	Likes     int      `json:"likes"`
	Tags      []string `json:"tags"`
	Library   string   `json:"library_name"`
}

// SearchOptions narrow a search; the zero value asks for MLX checkpoints by downloads.
type SearchOptions struct {
	Author string
	Filter string // a tag; "" means "mlx"
	Limit  int    // 0 means 30
}

// Search lists models whose name matches query, most downloaded first
// (GET /api/models).
func (c *Client) Search(ctx context.Context, query string, opt SearchOptions) ([]ModelSummary, error) {
	q := url.Values{"search": {query}, "sort": {"downloads"}, "direction": {"-1"}}
	if opt.Filter == "" {
		opt.Filter = "mlx"
	}
	q.Set("filter", opt.Filter)
	if opt.Author != "" {
		q.Set("author", opt.Author)
	}
	if opt.Limit <= 0 {
		opt.Limit = 30
	}
	q.Set("limit", strconv.Itoa(opt.Limit))
	var out []ModelSummary
	err := c.getJSON(ctx, "search "+strconv.Quote(query), c.Endpoint+"/api/models?"+q.Encode(), &out)
	return out, err
}

// File is one file of a repository at a revision.
type File struct {
	Path   string `json:"rfilename"`
	Size   int64  `json:"size"`
	BlobID string `json:"blobId"` // the git object id (the cache's blob name for small files)
	LFS    *struct {
		SHA256 string `json:"sha256"` // the content's checksum (the cache's blob name)
		Size   int64  `json:"size"`
	} `json:"lfs"`
}

// Blob is the file's name under blobs/ in the cache: the sha256 of an LFS file,
// else its git object id, as huggingface_hub names them (from the ETag).
func (f File) Blob() string {
	if f.LFS != nil && f.LFS.SHA256 != "" {
		return f.LFS.SHA256
	}
	return f.BlobID
}

// Bytes is the file's size.
func (f File) Bytes() int64 {
	if f.LFS != nil && f.LFS.Size > 0 {
		return f.LFS.Size
	}
	return f.Size
}

// ModelInfo is a repository at one revision.
type ModelInfo struct {
	ID      string `json:"id"`
	SHA     string `json:"sha"` // the commit the revision points to
	Gated   any    `json:"gated"`
	Private bool   `json:"private"`
	Files   []File `json:"siblings"`
}

// Info describes repo at revision (a branch, a tag or a commit; "" is main),
// with every file's size and checksum (GET /api/models/{repo}/revision/{rev}?blobs=true).
func (c *Client) Info(ctx context.Context, repo, revision string) (*ModelInfo, error) {
	p, err := repoPath(repo)
	if err != nil {
		return nil, err
	}
	if revision == "" {
		revision = "main"
	}
	var info ModelInfo
	u := fmt.Sprintf("%s/api/models/%s/revision/%s?blobs=true", c.Endpoint, p, url.PathEscape(revision))
	if err := c.getJSON(ctx, repo+"@"+revision, u, &info); err != nil {
		return nil, err
	}
	if info.SHA == "" {
		return nil, fmt.Errorf("%s@%s: the Hub's answer names no commit", repo, revision)
	}
	if err := checkCommit(repo+"@"+revision, info.SHA); err != nil {
		return nil, err
	}
	return &info, nil
}

// maxAnswerBytes bounds an answer of the Hub's API (a search, a model's
// file list): a repository of 100,000 files lists them in some 20 MB, and an
// endless answer (a broken mirror, a captive portal) is refused by name
// rather than read until memory runs out.
var maxAnswerBytes int64 = 64 << 20

func (c *Client) getJSON(ctx context.Context, what, u string, v any) error {
	resp, err := c.do(ctx, what, func() (*http.Request, error) { return http.NewRequest(http.MethodGet, u, nil) })
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body := &io.LimitedReader{R: resp.Body, N: maxAnswerBytes + 1}
	if err := json.NewDecoder(body).Decode(v); err != nil {
		if body.N <= 0 {
			return fmt.Errorf("%s: the answer of %s runs past %d MB, more than any model's listing: is it a Hub (HF_ENDPOINT)?", what, c.Endpoint, maxAnswerBytes>>20)
		}
		return fmt.Errorf("%s: the Hub's answer is not the JSON expected: %w", what, err)
	}
	return nil
}
