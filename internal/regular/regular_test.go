package regular

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRefusesWhatIsNotAFile opens a FIFO (which would block os.Open forever), a
// directory, a missing file and an oversized one, each under a deadline.
func TestRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "config.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	big := filepath.Join(dir, "big.json")
	os.WriteFile(big, make([]byte, 100), 0o644)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := ReadFile(fifo, 1<<20); err == nil || !strings.Contains(err.Error(), "config.json: not a regular file (a named pipe)") {
			t.Errorf("FIFO: %v", err)
		}
		if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "a directory") {
			t.Errorf("directory: %v", err)
		}
		if _, err := ReadFile(filepath.Join(dir, "none"), 1); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("missing: %v", err)
		}
		if _, err := ReadFile(big, 10); err == nil || !strings.Contains(err.Error(), "big.json: 100 bytes") {
			t.Errorf("oversized: %v", err)
		}
		if data, err := ReadFile(big, 100); err != nil || len(data) != 100 {
			t.Errorf("regular file: %d bytes, %v", len(data), err)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a check blocked")
	}
}
