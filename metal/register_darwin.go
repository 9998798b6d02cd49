package metal

import "bagel/backend"

// The Metal backend is built into every macOS binary; "auto" picks it there.
func init() {
	backend.Register("metal", func(backend.Options) (backend.Device, error) {
		dev, err := New()
		if err != nil {
			return nil, err // not a typed nil inside the interface
		}
		return dev, nil
	})
}
