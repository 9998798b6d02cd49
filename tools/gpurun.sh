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
# Usage: tools/gpurun.sh [test]   test: kernels (default), ptx, vision, all
#   kernels  every kernel test against the CPU reference (summary table printed),
#            then the engine's end-to-end tests (score and generate, CUDA vs CPU)
#   ptx      regenerate cuda/ptx (into ${PTX_OUT:-cuda/ptx}) with the machine's NVRTC
#   vision   the released vision tower's shapes (27 blocks of 1152, beside a
#            small 35B-A3B-shaped text model) timed on a 1024×1024 and a
#            512×512 image with `bagel bench --image` (#39's 100 ms target)
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
if [ "$what" = vision ] || [ "$what" = all ]; then
	M=${VISION_MODEL:-/tmp/bagel-vision}
	[ -f "$M/config.json" ] || .devbin/bagel synth --like qwen3.5-35b-a3b --layers 2 --experts 8 --vision --out "$M"
	for side in 1024 512; do # a gradient PNG, written with Python's standard library alone
		python3 -c "
import struct, sys, zlib
n = $side
rows = b''.join(b'\\x00' + bytes((x * 255 // n, y * 255 // n, (x ^ y) & 255) [i % 3] for x in range(n) for i in range(3)) for y in range(n))
chunk = lambda t, d: struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
sys.stdout.buffer.write(b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', n, n, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b''))
" > /tmp/image-$side.png
	done
	.devbin/bagel bench -m "$M" --backend cuda --runs 3 --tokens 16 --prefill "" --long "" --switches=false --drafts "" \
		--lookup=false --projections 0 --image /tmp/image-1024.png --image /tmp/image-512.png
fi
