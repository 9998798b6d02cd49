package hub

import "context"

// Preview is what downloading a repository would bring, known before any of
// it is written: the files' bytes and the config.json, enough for a memory
// estimate.
type Preview struct {
	Repo   string
	Bytes  int64  // every file of the main revision
	Config []byte // config.json as the Hub serves it
}

// Preview reads repo's file list and config.json at main, refusing as
// Download does a repository without config.json or safetensors files, or
// whose model_type runs (when not nil) says the app does not run.
func (c *Client) Preview(ctx context.Context, repo string, runs func(string) bool) (*Preview, error) {
	info, err := c.Info(ctx, repo, "")
	if err != nil {
		return nil, err
	}
	config, err := c.checkModel(ctx, repo, info, runs)
	if err != nil {
		return nil, err
	}
	p := &Preview{Repo: repo, Config: config}
	for _, f := range info.Files {
		p.Bytes += f.Bytes()
	}
	return p, nil
}
