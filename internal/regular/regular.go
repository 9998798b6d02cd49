// Package regular opens the files of a model folder only when they are regular
// files. Opening a FIFO for reading blocks until something writes to it, and a
// device or a directory is never what a model folder means; os.Stat answers
// without blocking, so every reader of the folder asks it first.
package regular

import (
	"fmt"
	"os"
	"path/filepath"
)

// Check returns an error naming path when it is not a regular file (following
// links); a missing file gives the *PathError, which matches fs.ErrNotExist.
func Check(path string) (os.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", filepath.Base(path), kind(st.Mode()))
	}
	return st, nil
}

// ReadFile is os.ReadFile for a regular file of at most limit bytes.
func ReadFile(path string, limit int64) ([]byte, error) {
	st, err := Check(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d this file can hold", filepath.Base(path), st.Size(), limit)
	}
	return os.ReadFile(path)
}

// Open is os.Open for a regular file.
func Open(path string) (*os.File, error) {
	if _, err := Check(path); err != nil {
		return nil, err
	}
	return os.Open(path)
}

func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}
