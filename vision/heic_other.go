//go:build !darwin

package vision

import "errors"

// decodeHEIF refuses a HEIF image off macOS.
func decodeHEIF([]byte) (*Image, error) {
	return nil, errors.New("image: a HEIC/HEIF photo, which Bagel reads on a Mac only (through macOS's own decoder); convert it to JPEG or PNG here")
}
