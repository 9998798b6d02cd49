//go:build !linux && !darwin

package hub

import "os"

// lockFile is a no-op where flock is not available: two downloads of one
// blob at once may then fail (one checksum or rename), never corrupt a blob.
func lockFile(*os.File) error { return nil }
