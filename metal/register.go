package metal

import (
	"sync"

	"bagel/backend"
	"bagel/metal/mtl"
)

// The Metal backend is built into every macOS binary; "auto" picks it there.
// Elsewhere it registers only when the simulator is switched on
// (BAGEL_METAL_SIM=1), so that without it `--backend metal` keeps answering
// that the backend is not available on this system.
func init() {
	if mtl.Enabled() {
		Register()
	}
}

var registerOnce sync.Once

// Register adds the metal backend to the backend registry, once. init calls
// it; a test that switches the simulator on after the program started calls
// it itself.
func Register() {
	registerOnce.Do(func() {
		backend.Register("metal", func(backend.Options) (backend.Device, error) {
			dev, err := New()
			if err != nil {
				return nil, err // not a typed nil inside the interface
			}
			return dev, nil
		})
	})
}
