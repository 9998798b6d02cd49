package remote

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// statusError reads a refusal (a status other than 200) into a message
// that says what the server said and what to do: the error object of
// OpenAI's shape ({"error": {"message"}}), Ollama's ({"error": "…"}) or a
// plain {"message"}, or the title of an HTML page (a proxy, a wrong URL).
func (c *Client) statusError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	said := serverMessage(body)
	what := fmt.Sprintf("the server %s answered %s", c.base.Host, resp.Status)
	if said != "" {
		what += ": " + said
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("%s (check the API key)", what)
	case http.StatusNotFound:
		return fmt.Errorf("%s (is the model %q served there, and is %s its API's address?)", what, c.model, c.base)
	case http.StatusTooManyRequests:
		if after := resp.Header.Get("Retry-After"); after != "" {
			return fmt.Errorf("%s (busy: try again after %s s)", what, after)
		}
		return fmt.Errorf("%s (busy: try again shortly)", what)
	}
	if resp.StatusCode >= 500 {
		return fmt.Errorf("%s (a fault on the server's side)", what)
	}
	return fmt.Errorf("%s", what)
}

var titleRE = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)

// serverMessage is what an error body says, in a line.
func serverMessage(body []byte) string {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
	}
	if json.Unmarshal(body, &e) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var text string
		switch {
		case json.Unmarshal(e.Error, &inner) == nil && inner.Message != "":
			return clip(inner.Message)
		case json.Unmarshal(e.Error, &text) == nil && text != "":
			return clip(text)
		case e.Message != "":
			return clip(e.Message)
		case e.Detail != "":
			return clip(e.Detail)
		}
	}
	s := strings.TrimSpace(string(body))
	if m := titleRE.FindStringSubmatch(s); m != nil {
		return "an HTML page titled " + fmt.Sprintf("%q", clip(strings.TrimSpace(m[1]))) + ", not the API (is the address right?)"
	}
	if strings.HasPrefix(s, "<") {
		return "an HTML page, not the API (is the address right?)"
	}
	return clip(s)
}

// clip keeps a server's text to a line of reasonable length.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 300 {
		return string(r[:300]) + "…"
	}
	return s
}
