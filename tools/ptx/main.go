// Command ptx refreshes the PTX embedded in cuda/ (cuda/ptx/kernels.ptx and the
// kernel source hash it was built from, cuda/ptx/kernels.sha256). It compiles
// kernels.CUDASource with the NVRTC of the machine it runs on (no GPU needed),
// for a virtual architecture old enough that any newer GPU's driver can JIT it.
//
//	go run ./tools/ptx                      # writes cuda/ptx/
//	go run ./tools/ptx -out DIR -arch compute_80
//	go run ./tools/ptx -source > kernels.cu # the assembled CUDA source, for nvcc
//
// `make ptx` cross-builds it and runs it on the GPU machine, which has NVRTC.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"bagel/cuda"
	"bagel/kernels"
)

func main() {
	out := flag.String("out", "cuda/ptx", "folder to write kernels.ptx and kernels.sha256 into")
	arch := flag.String("arch", "compute_75", "virtual architecture of the PTX (compute_75 = Turing and newer)")
	source := flag.Bool("source", false, "print the assembled CUDA source and exit")
	flag.Parse()
	if *source {
		fmt.Print(kernels.CUDASource())
		return
	}
	ptx, version, err := cuda.CompilePTX(*arch)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ptx:", err)
		os.Exit(1)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "ptx:", err)
		os.Exit(1)
	}
	hash := kernels.SourceHash()
	files := map[string][]byte{
		"kernels.ptx":    ptx,
		"kernels.sha256": []byte(hash + "\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(*out, name), data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "ptx:", err)
			os.Exit(1)
		}
	}
	fmt.Printf("ptx: %d bytes of %s PTX from kernel sources %.12s (NVRTC %s) in %s\n", len(ptx), *arch, hash, version, *out)
}
