package engine

import (
	"bagel/backend"
	"bagel/metal"
)

// The Metal backend is built into every macOS binary; "auto" picks it there.
func init() {
	gpuOpeners["metal"] = func() (backend.Device, error) {
		dev, err := metal.New()
		if err != nil {
			return nil, err
		}
		return dev, nil
	}
}
