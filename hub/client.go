// Package hub fetches models from the Hugging Face Hub into the cache layout
// huggingface_hub uses, and lists the models already on the disk: the Hub
// cache (shared with mlx-lm and huggingface-cli both ways), LM Studio's models
// folder and any folder given. It speaks the Hub's HTTP API as huggingface_hub
// does (search, model info with file sizes and checksums, resolve with
// redirects) and nothing else: no other host is contacted, HF_ENDPOINT selects
// a mirror. It is written by hand because no Go library writes that cache
// layout, and the app needs resumable, verified downloads without Python.
package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"bagel/internal/regular"
)

// DefaultEndpoint is the Hub; HF_ENDPOINT replaces it (a mirror).
const DefaultEndpoint = "https://huggingface.co"

// Client talks to one Hub endpoint.
type Client struct {
	Endpoint string // no trailing slash
	Token    string // "" for anonymous access
	HTTP     *http.Client
	// Retries is how often a 429 or 5xx answer is retried, waiting Retry-After
	// or an exponential backoff from Backoff.
	Retries int
	Backoff time.Duration
}

// New is a client configured as huggingface_hub configures itself: HF_ENDPOINT,
// and the token from HF_TOKEN or the token file (HF_TOKEN_PATH, else
// $HF_HOME/token, else ~/.cache/huggingface/token).
func New() *Client {
	endpoint := strings.TrimRight(os.Getenv("HF_ENDPOINT"), "/")
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	return &Client{Endpoint: endpoint, Token: token(), HTTP: &http.Client{}, Retries: 4, Backoff: time.Second}
}

func token() string {
	if t := strings.TrimSpace(os.Getenv("HF_TOKEN")); t != "" {
		return t
	}
	path := os.Getenv("HF_TOKEN_PATH")
	if path == "" {
		path = filepath.Join(hfHome(), "token")
	}
	data, err := regular.ReadFile(path, 1<<16) // a token is some 40 bytes
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// Error is a Hub answer that is not a success, with what to do about it.
type Error struct {
	Status int
	URL    string
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// ErrNotFound matches an *Error for a missing repository, revision or file.
var ErrNotFound = errors.New("not found on the Hub")

func (e *Error) Is(target error) bool {
	return target == ErrNotFound && e.Status == http.StatusNotFound
}

// statusError turns an HTTP status into a sentence that says what to do.
func statusError(resp *http.Response, what string) error {
	msg := fmt.Sprintf("%s: the Hub answered %s", what, resp.Status)
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		msg = fmt.Sprintf("%s: access denied (%s): the repository is gated or private; accept its terms on the Hub's page and set HF_TOKEN (or log in with huggingface-cli)", what, resp.Status)
	case http.StatusNotFound:
		msg = fmt.Sprintf("%s: not found on the Hub (%s): check the name and the revision", what, resp.Status)
	case http.StatusTooManyRequests:
		msg = fmt.Sprintf("%s: the Hub is rate-limiting this machine (%s); try again later", what, resp.Status)
	}
	return &Error{Status: resp.StatusCode, URL: resp.Request.URL.String(), Msg: msg}
}

// do sends the request built by newReq (called again for each retry), with the
// token, retrying 429 and 5xx answers and transport errors. The caller closes
// the body of a successful answer; other answers become *Error.
func (c *Client) do(ctx context.Context, what string, newReq func() (*http.Request, error)) (*http.Response, error) {
	var lastErr error
	for attempt := 0; ; attempt++ {
		req, err := newReq()
		if err != nil {
			return nil, err
		}
		req = req.WithContext(ctx)
		if c.Token != "" {
			req.Header.Set("Authorization", "Bearer "+c.Token)
		}
		req.Header.Set("User-Agent", "bagel")
		resp, err := c.client().Do(req)
		wait := c.Backoff << attempt
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			lastErr = fmt.Errorf("%s: %w (is the network up?)", what, err)
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			lastErr = statusError(resp, what)
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
				wait = time.Duration(s) * time.Second
			}
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
		case resp.StatusCode >= 400:
			defer resp.Body.Close()
			return nil, statusError(resp, what)
		default:
			return resp, nil
		}
		if attempt >= c.Retries {
			return nil, lastErr
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// client is c.HTTP following redirects as huggingface_hub (requests) does:
// the token goes to a redirect's target only when its scheme, host and port
// are the first request's. Go's own rule keeps the header for the same host
// on another port.
func (c *Client) client() *http.Client {
	hc := *c.HTTP
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if first := via[0].URL; req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
			req.Header.Del("Authorization")
		}
		return nil
	}
	return &hc
}

// repoPath escapes "org/name" for a URL path, keeping the slash.
func repoPath(repo string) (string, error) {
	org, name, ok := strings.Cut(repo, "/")
	if !ok || org == "" || name == "" || strings.Contains(name, "/") || strings.Contains(repo, "..") {
		return "", fmt.Errorf("%q is not a Hub model name (want ORG/NAME)", repo)
	}
	return url.PathEscape(org) + "/" + url.PathEscape(name), nil
}
