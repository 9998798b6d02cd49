package cuda

import "bagel/switches"

// SwitchEmbeddedPTX makes the device load the PTX embedded in the binary instead
// of compiling the kernels with NVRTC: what a machine with only the driver gets,
// forced for A/B runs and for testing that path.
const SwitchEmbeddedPTX = "cuda-embedded-ptx"

// SwitchGraph makes the device replay a repeated sequence of launches (a decode
// step) as one CUDA graph instead of launching its kernels one by one.
const SwitchGraph = "cuda-graph"

// SwitchPDL joins the kernels of a CUDA graph by programmatic edges
// (programmatic dependent launch, sm_90+): a kernel's blocks start, and read
// their weights, while the previous kernel drains.
const SwitchPDL = "cuda-pdl"

func init() {
	switches.Register(switches.Switch{
		Name:        SwitchPDL,
		Description: "Start each kernel of a CUDA graph while the previous one drains (programmatic dependent launch, Hopper and later; applies at the next model load).",
		Default:     true,
		Env:         "BAGEL_NO_CUDA_PDL",
		Backends:    []string{"cuda"},
	})
	switches.Register(switches.Switch{
		Name:        SwitchGraph,
		Description: "Replay each decode step as one CUDA graph launch instead of one launch per kernel (applies at the next model load).",
		Default:     true,
		Env:         "BAGEL_NO_CUDA_GRAPH",
		Backends:    []string{"cuda"},
	})
	switches.Register(switches.Switch{
		Name:        SwitchEmbeddedPTX,
		Description: "Load the kernels from the PTX embedded in the binary instead of compiling them with NVRTC (applies at the next model load).",
		Default:     false,
		Env:         "BAGEL_CUDA_PTX",
		Backends:    []string{"cuda"},
	})
}
