//go:build linux || darwin

package ui

import (
	"os"
	"syscall"
)

// tryLock takes an exclusive lock on f without waiting (flock); false when
// another process, or another open of the file, holds it.
func tryLock(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
