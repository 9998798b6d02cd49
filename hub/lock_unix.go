//go:build linux || darwin

package hub

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on f (flock), waiting while another
// process, or another file of this one, holds it; closing f releases it.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}
