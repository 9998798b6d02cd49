package engine

import (
	"bagel/backend"
	"bagel/cuda"
)

// CUDA is compiled into every Linux build; without the NVIDIA driver cuda.New
// fails with "no CUDA driver" and the automatic choice falls back to the CPU.
func init() {
	gpuOpeners["cuda"] = func() (backend.Device, error) {
		dev, err := cuda.New(0)
		if err != nil {
			return nil, err
		}
		return dev, nil
	}
}
