#!/bin/sh
# metalcheck: parse every kernels/*.metal as Metal would see it (prelude_metal.h,
# then common.h, then the kernel files in name order, as kernels.MetalSource
# assembles them) with clang against the stub of <metal_stdlib> in
# kernels/metal_stub. Catches syntax and type errors and calls to functions Metal
# lacks; it cannot catch what only Apple's compiler knows (run `make test` on a Mac).
#
# The target is Apple silicon so that half (_Float16) exists as it does in MSL.
#
# Usage: tools/metalcheck.sh   (CLANG=clang-18 to pick a compiler)
set -eu
cd "$(dirname "$0")/.."
CLANG=${CLANG:-clang}
if ! command -v "$CLANG" >/dev/null 2>&1; then
	echo "metalcheck: $CLANG not found (apt-get install clang)" >&2
	exit 1
fi
tu=$(mktemp "${TMPDIR:-/tmp}/metalcheck.XXXXXX.cpp")
trap 'rm -f "$tu"' EXIT
{
	echo '#include "prelude_metal.h"'
	echo '#include "common.h"'
	for f in $(ls kernels/*.metal | LC_ALL=C sort); do
		echo "#include \"$(basename "$f")\""
	done
} >"$tu"
"$CLANG" -fsyntax-only -x c++ -std=c++17 --target=arm64-apple-macosx14 -nostdinc -nostdinc++ \
	-I kernels/metal_stub -I kernels \
	-Werror -Wall -Wno-unused-variable -Wno-unused-function -Werror=unknown-attributes \
	"$tu"
echo "metalcheck: $(ls kernels/*.metal | wc -l | tr -d ' ') kernel files parse as Metal"
