package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCtrlCOnPullKeepsWhatWasFetched: `bagel pull` stopped by Ctrl-C (a child
// process, SIGINT) keeps its partial file, says how to resume, and a second
// pull stopped the same way keeps the first one's bytes too (the old pull
// removed every partial file, an earlier run's included).
func TestCtrlCOnPullKeepsWhatWasFetched(t *testing.T) {
	const repo, commit = "bagel-test/big", "0123456789abcdef0123456789abcdef01234567"
	weights := make([]byte, 4<<20)
	for i := range weights {
		weights[i] = byte(i * 7)
	}
	sum := sha256.Sum256(weights)
	config := []byte(`{"model_type": "qwen3_5_moe"}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/models/"+repo+"/revision/main":
			json.NewEncoder(w).Encode(map[string]any{"id": repo, "sha": commit, "siblings": []map[string]any{
				{"rfilename": "config.json", "size": len(config), "blobId": strings.Repeat("a", 40)},
				{"rfilename": "model.safetensors", "size": len(weights), "blobId": strings.Repeat("b", 40),
					"lfs": map[string]any{"sha256": hex.EncodeToString(sum[:]), "size": len(weights)}}}})
		case strings.HasSuffix(r.URL.Path, "/config.json"):
			w.Write(config)
		case strings.HasSuffix(r.URL.Path, "/model.safetensors"):
			from := 0
			if rg := r.Header.Get("Range"); rg != "" {
				from, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"))
				w.WriteHeader(http.StatusPartialContent)
			}
			w.Write(weights[from : from+100_000]) // then nothing until the client leaves
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	cache := t.TempDir()
	part := filepath.Join(cache, "models--bagel-test--big", "blobs", hex.EncodeToString(sum[:])+".incomplete")
	for run, want := range []int64{100_000, 200_000} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPullChild$")
		cmd.Env = append(os.Environ(), "BAGEL_PULL_CHILD="+repo, "HF_ENDPOINT="+srv.URL, "HF_HUB_CACHE="+cache, "HF_TOKEN=", "HOME="+t.TempDir())
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			if st, err := os.Stat(part); err == nil && st.Size() >= want {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("run %d: the pull wrote %d bytes of no part: %s", run, want, stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
		st, err := os.Stat(part)
		if err != nil || st.Size() != want {
			t.Fatalf("run %d: after Ctrl-C the part is %v (%v), want %d bytes kept", run, st, err, want)
		}
		if !strings.Contains(stderr.String(), "resumes it") {
			t.Errorf("run %d: the interrupted pull does not say how to resume: %s", run, stderr.String())
		}
	}
}

// TestPullChild is the pull that TestCtrlCOnPullKeepsWhatWasFetched stops.
func TestPullChild(t *testing.T) {
	repo := os.Getenv("BAGEL_PULL_CHILD")
	if repo == "" {
		t.Skip("run by TestCtrlCOnPullKeepsWhatWasFetched")
	}
	os.Exit(run([]string{"pull", repo}, os.Stdout, os.Stderr))
}
