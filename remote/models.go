package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Model is one entry of a server's /v1/models.
type Model struct {
	ID      string `json:"id"`
	OwnedBy string `json:"owned_by"`
}

// ServerHeader is the Server header of the last model list (the software,
// where the server names it).
func (c *Client) ServerHeader() string { return c.server }

// maxModelListBytes bounds a server's model list (a router of some
// thousand models lists them in well under a megabyte): an endless answer
// is refused by name rather than read until memory runs out.
var maxModelListBytes int64 = 16 << 20

// Models lists the models the server serves.
func (c *Client) Models(ctx context.Context) ([]Model, error) {
	req, err := c.newRequest(ctx, http.MethodGet, "/models", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.reach(err)
	}
	defer resp.Body.Close()
	c.server = resp.Header.Get("Server")
	if resp.StatusCode != http.StatusOK {
		return nil, c.statusError(resp)
	}
	var list struct {
		Data []Model `json:"data"`
	}
	body := &io.LimitedReader{R: resp.Body, N: maxModelListBytes + 1}
	if err := json.NewDecoder(body).Decode(&list); err != nil {
		if body.N <= 0 {
			return nil, fmt.Errorf("the server %s's model list runs past %d MB: is it an OpenAI-compatible API?", c.base.Host, maxModelListBytes>>20)
		}
		return nil, fmt.Errorf("the server %s's model list is not the API's JSON (%v)", c.base.Host, err)
	}
	return list.Data, nil
}
