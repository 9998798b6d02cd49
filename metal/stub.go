//go:build !darwin

package metal

import (
	"errors"

	"bagel/backend"
)

// Device is not available off macOS.
type Device struct{ backend.Device }

// New always fails off macOS.
func New() (*Device, error) {
	return nil, errors.New("Metal is only available on macOS")
}
