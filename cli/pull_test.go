package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bagel/engine"
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

// TestPullMTPFrom: a conversion that dropped its MTP head is said to, and
// --mtp-from fetches the head from the release (its mtp.safetensors only)
// and puts it beside the model, which then drafts with it.
func TestPullMTPFrom(t *testing.T) {
	demo := filepath.Join(testmodel.Root(t), "assets", "demo-model")
	conversion, release := t.TempDir(), t.TempDir()
	for _, f := range []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		if err := os.Symlink(filepath.Join(demo, f), filepath.Join(conversion, f)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"config.json", "mtp.safetensors"} {
		if err := os.Symlink(filepath.Join(demo, f), filepath.Join(release, f)); err != nil {
			t.Fatal(err)
		}
	}
	srv := testmodel.FakeHubRepos(t, map[string]string{"mlx-community/Demo-4bit": conversion, "bagel/Demo": release})
	t.Setenv("HF_ENDPOINT", srv.URL)
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HOME", t.TempDir())

	code, out, stderr := runCLI("pull", "mlx-community/Demo-4bit")
	if code != 0 || !strings.Contains(stderr, "dropped it") || !strings.Contains(stderr, "--mtp-from") {
		t.Fatalf("pull of a conversion without its head: exit %d, %q, %s", code, out, stderr)
	}
	code, out, stderr = runCLI("pull", "mlx-community/Demo-4bit", "--mtp-from", "bagel/Demo")
	dir := strings.TrimSpace(out)
	if code != 0 || !strings.Contains(stderr, "the MTP head of bagel/Demo is beside it") {
		t.Fatalf("pull --mtp-from: exit %d, %q, %s", code, out, stderr)
	}
	if _, present := engine.MTPFiles(dir); !present {
		t.Fatalf("%s: no MTP head after --mtp-from", dir)
	}
	code, _, stderr = runCLI("generate", "-m", dir, "--backend", "cpu", "--no-think", "--max-tokens", "12", "--speculative", "mtp", "What is a bug?")
	if code != 0 || !strings.Contains(stderr, "accepted") {
		t.Errorf("generate --speculative mtp on the pulled model: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCLI("pull", "mlx-community/Demo-4bit", "--mtp-from", "mlx-community/Demo-4bit")
	if code == 0 || !strings.Contains(stderr, "mtp.safetensors") {
		t.Errorf("--mtp-from a repository without a head: exit %d, %s", code, stderr)
	}
}
