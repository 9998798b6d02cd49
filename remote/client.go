// Package remote generates with a model served elsewhere — vLLM, SGLang,
// llama-server, LM Studio, Ollama's /v1, another Bagel's `bagel serve` —
// through the OpenAI chat completions API, streamed, and hands back the same
// events as the local engine (engine.Event), so that a reader of one reads
// the other. The reasoning comes as reasoning_content (llama-server, SGLang,
// LM Studio, Bagel) or reasoning (vLLM, Ollama); thinking is switched through
// chat_template_kwargs.enable_thinking; the figures are measured here, at
// the client, over the network.
//
// Built on net/http alone: the one endpoint and its server-sent events are
// simpler read by hand than through an SDK written for OpenAI's own service
// (which knows neither field of reasoning nor chat_template_kwargs).
package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client talks to one server's OpenAI API as one model.
type Client struct {
	base   *url.URL // the API's root, ending in /v1
	apiKey string
	model  string
	http   *http.Client
	server string // the Server header the model list came with
	// Idle bounds the silence of a stream (default 2 minutes): a server
	// that stops sending is an error, not a hang.
	Idle time.Duration
}

// New checks baseURL (http://HOST:PORT or …/v1; plain http only to this
// machine or a private network, where a key would not cross the internet
// in the clear) and returns a client of model on it.
func New(baseURL, apiKey, model string) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("%q is not a server address: want http(s)://HOST[:PORT][/v1]", baseURL)
	}
	if u.Scheme == "http" && !privateHost(u.Hostname()) {
		return nil, fmt.Errorf("%s is on the internet and the address is plain http: use https (the API key and the chats would travel unencrypted)", u.Host)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	if !strings.HasSuffix(u.Path, "/v1") {
		u.Path += "/v1"
	}
	u.RawQuery, u.Fragment = "", ""
	return &Client{base: u, apiKey: apiKey, model: model, http: &http.Client{}, Idle: 2 * time.Minute}, nil
}

// Model is the model id the client asks for.
func (c *Client) Model() string { return c.model }

// Host is the server's host:port, for the stats' backend line.
func (c *Client) Host() string { return c.base.Host }

// privateHost reports a name or address of this machine or a private
// network: localhost, a loopback, private (10/8, 172.16/12, 192.168/16,
// fc00::/7) or link-local address, or a .local (mDNS) name.
func privateHost(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || strings.HasSuffix(host, ".local") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast())
}

// endpoint is the URL of path under the API's root.
func (c *Client) endpoint(path string) string {
	u := *c.base
	u.Path += path
	return u.String()
}

func (c *Client) newRequest(ctx context.Context, method, path string, body *strings.Reader) (*http.Request, error) {
	var req *http.Request
	var err error
	if body != nil {
		req, err = http.NewRequestWithContext(ctx, method, c.endpoint(path), body)
	} else {
		req, err = http.NewRequestWithContext(ctx, method, c.endpoint(path), nil)
	}
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	return req, nil
}

// reach names a failure to reach the server: refused, no such host, TLS,
// a timeout.
func (c *Client) reach(err error) error {
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &dns):
		return fmt.Errorf("the server %s cannot be found (%v): check the address", c.base.Host, dns.Err)
	case errors.As(err, &op) && op.Op == "dial":
		return fmt.Errorf("the server %s refused the connection or cannot be reached (%v): is it running, and on that port?", c.base.Host, op.Err)
	case strings.Contains(err.Error(), "tls:") || strings.Contains(err.Error(), "x509:"):
		return fmt.Errorf("the server %s's TLS certificate was not accepted (%v)", c.base.Host, err)
	}
	return fmt.Errorf("the server %s: %v", c.base.Host, err)
}
