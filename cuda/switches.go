package cuda

import "bagel/feature"

// SwitchEmbeddedPTX makes the device load the PTX embedded in the binary instead
// of compiling the kernels with NVRTC: what a machine with only the driver gets,
// forced for A/B runs and for testing that path.
const SwitchEmbeddedPTX = "cuda-embedded-ptx"

func init() {
	feature.Register(feature.Switch{
		Name:        SwitchEmbeddedPTX,
		Description: "Load the kernels from the PTX embedded in the binary instead of compiling them with NVRTC (applies at the next model load).",
		Default:     false,
		Env:         "BAGEL_CUDA_PTX",
		Backends:    []string{"cuda"},
	})
}
