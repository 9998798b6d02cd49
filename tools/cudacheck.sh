#!/bin/sh
# cudacheck: parse the assembled CUDA source of the kernels (kernels.CUDASource,
# as NVRTC gets it) with clang's CUDA front end for sm_80 (the matrix units'
# code), sm_75 (the embedded PTX's) and sm_90 (Hopper's), against the builtins
# declared in kernels/cuda_stub (no CUDA toolkit here). Catches syntax and type
# errors, and calls to functions CUDA lacks, before a kernel change costs a GPU
# machine's call; what only NVRTC and ptxas know (registers, the PTX) needs the
# GPU machine (`make gpu-test`).
#
# Usage: tools/cudacheck.sh   (CLANG=clang-18 to pick a compiler)
set -eu
cd "$(dirname "$0")/.."
CLANG=${CLANG:-clang}
if ! command -v "$CLANG" >/dev/null 2>&1; then
	echo "cudacheck: $CLANG not found (apt-get install clang)" >&2
	exit 1
fi
cu=$(mktemp "${TMPDIR:-/tmp}/cudacheck.XXXXXX.cu")
trap 'rm -f "$cu"' EXIT
CGO_ENABLED=0 ${GO:-go} run ./tools/ptx -source > "$cu"
check() {
	"$CLANG" -x cuda --cuda-gpu-arch=${ARCH:-sm_80} --cuda-device-only -nocudainc -nocudalib -fsyntax-only \
		-include kernels/cuda_stub/cuda_builtins.h "$@" "$cu"
}
check
ARCH=sm_75 check
# Hopper's code (sm_90: GRID_WAIT), which this clang cannot
# target: sm_80's front end with the architecture macro of sm_90.
check -U__CUDA_ARCH__ -D__CUDA_ARCH__=900 -Wno-macro-redefined
# A broken kernel must fail, so a check that passes everything is noticed.
good=$(cat "$cu")
printf '%s\nKERNEL(cudacheck_broken, BUFFER(float, out, 0)) { out[0] = no_such_function(1.0f); }\n' "$good" > "$cu"
if check 2>/dev/null; then
	echo "cudacheck: a broken kernel parsed (is the check working?)" >&2
	exit 1
fi
echo "cudacheck: the CUDA source parses for sm_80, sm_75 and (as sm_80 with its macro) sm_90"
