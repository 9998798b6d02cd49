//go:build linux

package cuda

import "bagel/backend"

// CUDA is compiled into every Linux build; without the NVIDIA driver New fails
// with "no CUDA driver" and the engine's automatic choice falls back to the CPU.
func init() {
	backend.Register("cuda", func(backend.Options) (backend.Device, error) {
		dev, err := New(0)
		if err != nil {
			return nil, err // not a typed nil inside the interface
		}
		return dev, nil
	})
}
