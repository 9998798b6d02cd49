//go:build !linux

package cuda

import (
	"errors"

	"bagel/backend"
)

// Device is not available off Linux. It embeds backend.Device only so that code
// holding a *Device compiles on every OS; New never returns one here.
type Device struct{ backend.Device }

// New always fails off Linux: the CUDA backend loads libcuda.so.1 through purego.
func New(ordinal int) (*Device, error) {
	return nil, errors.New("cuda: no CUDA driver: the CUDA backend runs on Linux only")
}

// CompilePTX needs NVRTC, which this backend only loads on Linux.
func CompilePTX(arch string) (ptx []byte, nvrtcVersion string, err error) {
	return nil, "", errors.New("cuda: NVRTC is only loaded on Linux")
}

// MatrixUnits: no CUDA device off Linux.
func (d *Device) MatrixUnits() bool { return false }
