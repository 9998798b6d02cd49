package cuda

import (
	_ "embed"
	"strings"
)

// The PTX of kernels.CUDASource for a driver without NVRTC, made by `make ptx`
// (tools/ptx) on a machine with NVRTC. kernels.sha256 is the kernels.SourceHash
// it was built from; TestEmbeddedPTXIsCurrent fails when the sources moved on.
var (
	//go:embed ptx/kernels.ptx
	embeddedPTX string
	//go:embed ptx/kernels.sha256
	embeddedPTXHash string
)

// EmbeddedPTX is the embedded PTX text.
func EmbeddedPTX() string { return embeddedPTX }

// EmbeddedPTXHash is the kernel source hash the embedded PTX was built from.
func EmbeddedPTXHash() string { return strings.TrimSpace(embeddedPTXHash) }
