package cli

import (
	"strings"
	"testing"

	"bagel/internal/testmodel"
)

// TestPullModelsAndResolve pulls the tiny test model from a fake Hub into a
// fresh cache, lists it, and scores with -m ORG/NAME.
func TestPullModelsAndResolve(t *testing.T) {
	const repo = "bagel-test/tiny-moe"
	srv := testmodel.FakeHub(t, "tiny-moe", repo)
	cache := t.TempDir()
	t.Setenv("HF_ENDPOINT", srv.URL)
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HOME", t.TempDir()) // no LM Studio folder

	code, out, stderr := runCLI("pull", repo)
	if code != 0 || !strings.HasPrefix(strings.TrimSpace(out), cache) {
		t.Fatalf("pull: exit %d, %q, %s", code, out, stderr)
	}
	if !strings.Contains(stderr, "tokens of context it fits: needs about") {
		t.Errorf("pull says nothing of the memory the model needs: %s", stderr)
	}
	code, out, stderr = runCLI("models")
	if code != 0 || !strings.Contains(out, repo) || !strings.Contains(out, "runs") {
		t.Errorf("models: exit %d, %q, %s", code, out, stderr)
	}
	code, out, stderr = runCLI("score", "-m", repo, "--ids", "1,2,3", "--backend", "cpu")
	if code != 0 || strings.Count(out, "\n") != 3 {
		t.Errorf("score -m %s: exit %d, %q, %s", repo, code, out, stderr)
	}
	if code, _, stderr := runCLI("score", "-m", "bagel-test/absent", "--ids", "1"); code != 1 || !strings.Contains(stderr, "bagel pull bagel-test/absent") {
		t.Errorf("absent model: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCLI("pull", "bagel-test/absent"); code != 1 || !strings.Contains(stderr, "not found on the Hub") {
		t.Errorf("pull of a missing repo: exit %d, %s", code, stderr)
	}
}
