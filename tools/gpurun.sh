#!/bin/sh
# gpurun: run the cross-built GPU test binaries on a machine with an NVIDIA GPU
# and no Go toolchain. `make gpu-build` (or the commands below) builds them into
# .devbin/ on the development machine; copy the repository (or just .devbin and
# this script) over and run this script from the repository root.
#
#   CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go test -c -o .devbin/cuda.test ./cuda
#   CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go test -c -o .devbin/engine.test ./engine
#   CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -o .devbin/ptx ./tools/ptx
#
# Usage: tools/gpurun.sh [test]   test: kernels (default), ptx, all
#   kernels  every kernel test against the CPU reference (summary table printed),
#            then the engine's end-to-end tests (score and generate, CUDA vs CPU)
#   ptx      regenerate cuda/ptx (into ${PTX_OUT:-cuda/ptx}) with the machine's NVRTC
set -eu
cd "$(dirname "$0")/.."
what=${1:-kernels}
if [ "$what" = ptx ] || [ "$what" = all ]; then
	.devbin/ptx -out "${PTX_OUT:-cuda/ptx}"
fi
if [ "$what" = kernels ] || [ "$what" = all ]; then
	# BAGEL_REQUIRE_GPU turns the no-GPU skip into a failure.
	(cd cuda && BAGEL_REQUIRE_GPU=1 ../.devbin/cuda.test -test.v -test.count=1 -test.timeout=20m)
	(cd engine && BAGEL_REQUIRE_GPU=1 ../.devbin/engine.test -test.v -test.count=1 -test.run GPU -test.timeout=10m)
fi
