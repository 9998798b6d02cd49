#!/bin/sh
# metalcheck: parse every kernels/*.metal as Metal would see it (prelude_metal.h,
# then common.h, then the kernel files in name order, as kernels.MetalSource
# assembles them) with clang against the stub of <metal_stdlib> in
# kernels/metal_stub. Catches syntax and type errors and calls to functions Metal
# lacks; it cannot catch what only Apple's compiler knows (run `make test` on a Mac).
#
# The target is Apple silicon so that half (_Float16) exists as it does in MSL.
#
# Beyond syntax, warnings that stand for Metal's rules are errors: a float
# promoted to or narrowed from a double (an unsuffixed literal: Metal has no
# double, the stub makes the type itself unknown), infinite recursion (Metal has
# none; kernels/ mslrules_test.go catches every recursion, this only the
# obvious), unknown attributes. Before the real check, a few broken snippets must
# each fail, so a compiler that ignores a flag is noticed.
# kernels/msl*_test.go check what clang cannot see through the stub (address
# spaces, function pointers, CUDA spellings).
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
check() {
	"$CLANG" -fsyntax-only -x c++ -std=c++17 --target=arm64-apple-macosx14 -nostdinc -nostdinc++ \
		-I kernels/metal_stub -I kernels \
		-Werror -Wall -Wno-unused-variable -Wno-unused-function -Werror=unknown-attributes \
		-Werror=double-promotion -Werror=implicit-float-conversion -Werror=infinite-recursion \
		"$@" "$tu"
}
# must_fail SNIPPET: the prelude, common.h and SNIPPET must not compile.
must_fail() {
	printf '#include "prelude_metal.h"\n#include "common.h"\n%s\n' "$1" >"$tu"
	if check 2>/dev/null; then
		echo "metalcheck: a broken snippet compiled (is a flag ignored?): $1" >&2
		exit 1
	fi
}
must_fail 'INLINE float half_of(float x) { return x * 0.5; }'
must_fail 'INLINE float tenth() { float y = 0.1; return y; }'
must_fail 'INLINE float widen(float x) { double d = x; return (float)d; }'
must_fail 'INLINE int forever(int n) { return forever(n + 1); }'
must_fail 'KERNEL(k, BUFFER(float, out, 0), uint lane [[thread_index_in_simd_group]]) { out[0] = 0.0f; }'
must_fail 'INLINE void sync() { __syncthreads(); }'
{
	echo '#include "prelude_metal.h"'
	echo '#include "common.h"'
	for f in $(ls kernels/*.metal | LC_ALL=C sort); do
		echo "#include \"$(basename "$f")\""
	done
} >"$tu"
check
echo "metalcheck: $(ls kernels/*.metal | wc -l | tr -d ' ') kernel files parse as Metal (6 broken snippets refused)"
