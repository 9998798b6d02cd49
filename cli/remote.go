package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"bagel/engine"
	"bagel/remote"
)

// remoteKey is the key for url: $BAGEL_API_KEY, else the keychain's (the
// app keeps there the keys given to it).
func remoteKey(url string) string {
	if k := os.Getenv("BAGEL_API_KEY"); k != "" {
		return k
	}
	return remote.Key(url)
}

// remoteClient is --remote's client of --model (the server's first model
// when none is named).
func remoteClient(ctx context.Context, url, model string) (*remote.Client, error) {
	c, err := remote.New(url, remoteKey(url), model)
	if err != nil || model != "" {
		return c, err
	}
	models, err := c.Models(ctx)
	if err != nil {
		return nil, err
	}
	if len(models) == 0 {
		return nil, fmt.Errorf("the server %s lists no models", c.Host())
	}
	return remote.New(url, remoteKey(url), models[0].ID)
}

// listRemote is `bagel models --remote URL`: the server's models.
func listRemote(ctx context.Context, url string, out io.Writer) error {
	c, err := remote.New(url, remoteKey(url), "")
	if err != nil {
		return err
	}
	models, err := c.Models(ctx)
	if err != nil {
		return err
	}
	if len(models) == 0 {
		fmt.Fprintf(out, "%s serves no models\n", c.Host())
	}
	for _, m := range models {
		fmt.Fprintf(out, "%-50s %s\n", m.ID, m.OwnedBy)
	}
	return nil
}

// remoteStatsLine is the stats line of a remote reply: what the client
// measured and the server counted, no device figures.
func remoteStatsLine(s engine.Stats) string {
	return fmt.Sprintf("%d prompt tokens (%d cached by the server), TTFT %.0f ms; %d tokens, %.1f tok/s decode; measured at the client over the network (%s)",
		s.PromptTokens, s.ReusedPromptTokens, float64(s.TimeToFirstToken.Microseconds())/1000, s.GeneratedTokens, s.DecodeTokensPerSec, s.Backend)
}
