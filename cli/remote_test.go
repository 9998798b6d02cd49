package cli

import (
	"net/http/httptest"
	"strings"
	"testing"

	"bagel/engine"
	"bagel/internal/testmodel"
	"bagel/server"
)

// TestGenerateRemote: bagel generate --remote answers through another
// Bagel's server with the local reply's words, prints the client's stats
// line, and bagel models --remote lists the server's model.
func TestGenerateRemote(t *testing.T) {
	dir := testmodel.Dir(t, "tiny-moe")
	code, local, stderr := runCLI("generate", "-m", dir, "--backend", "cpu", "--max-tokens", "6", "--no-think", "Hi")
	if code != 0 {
		t.Fatalf("local: %d %s", code, stderr)
	}
	e, err := engine.Load(dir, engine.Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s, err := server.New(e, "tiny", server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	code, remote, stderr := runCLI("generate", "--remote", ts.URL+"/v1", "--max-tokens", "6", "--no-think", "Hi")
	if code != 0 || remote != local {
		t.Errorf("remote: exit %d, %q; local %q\n%s", code, remote, local, stderr)
	}
	if !strings.Contains(stderr, "[length] ") || !strings.Contains(stderr, "measured at the client over the network (remote: 127.0.0.1:") {
		t.Errorf("stats line: %s", stderr)
	}
	if code, out, _ := runCLI("models", "--remote", ts.URL); code != 0 || !strings.HasPrefix(out, "tiny ") {
		t.Errorf("models --remote: %d %q", code, out)
	}
	if code, _, stderr := runCLI("generate", "-m", dir, "--remote", ts.URL, "Hi"); code == 0 || !strings.Contains(stderr, "-m and --remote both") {
		t.Errorf("-m with --remote: %d %s", code, stderr)
	}
	if code, _, stderr := runCLI("generate", "--remote", "http://127.0.0.1:1", "Hi"); code == 0 || !strings.Contains(stderr, "refused the connection") {
		t.Errorf("nothing listening: %d %s", code, stderr)
	}
}
