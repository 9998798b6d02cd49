#!/bin/sh
# tiled-tunables.sh: the device call of the thirtieth session's experiment
# (written then, not yet run: the session's device time went on tiled-one).
# The experts' tiled kernels with more SIMD-groups on each expert's inputs,
# two tunables never swept (docs/batching.md: the lone tiled reply is
# latency-bound in moe_down_mma_bf16 and moe_up_mma_bf16, each SIMD-group
# waiting on its chunks one after another):
#   s3:   MOE_DOWN_MMA_SPLIT=3 (2 on main): a team of three SIMD-groups an
#         item, 864 threads a threadgroup; 8 chunks of 64 inputs a SIMD-group
#         3, 3 and 2 instead of 4 and 4.
#   u256: MOE_MMA_IN_PER_WARP=256 (512 on main): moe_up_mma_bf16's 2048 inputs
#         split over 8 SIMD-groups a matrix, 16 a threadgroup, 4 chunks each.
# Both change the order in which a row's partial sums add (the bits of the
# tiled path, alone and batched alike): a pick must pass the kernel tests and
# the engine's GPU tests (the band and the batch's solo equality) with it.
# Builds, on the development machine, from main:
#   L="env CGO_ENABLED=0 GOOS=linux GOARCH=amd64"; F='-trimpath -ldflags=-s\ -w'
#   eval $L go build $F -o .devbin/bagel . && eval $L go test -c $F -o .devbin/engine.test ./engine
#   eval $L go test -c $F -o .devbin/cuda.test ./cuda
#   cp kernels/quant_mma.metal /tmp/q; for v in s3 u256 s3u256; do s=2; u=512
#     case $v in *s3*) s=3;; esac; case $v in *u256*) u=256;; esac
#     sed -e "s/^#define MOE_DOWN_MMA_SPLIT 2$/#define MOE_DOWN_MMA_SPLIT $s/" \
#       -e "s/^#define MOE_MMA_IN_PER_WARP 512$/#define MOE_MMA_IN_PER_WARP $u/" /tmp/q > kernels/quant_mma.metal
#     eval $L go build $F -o .devbin/ptx-$v ./tools/ptx; done; cp /tmp/q kernels/quant_mma.metal
#   (cd .devbin && tar cf bins.tar bagel engine.test cuda.test ptx-* && xz -T2 -6 bins.tar && rm -f bagel *.test ptx-*)
# then, on the device (carry .devbin): sh docs/experiments/tiled-tunables.sh.
# To land a pick: the same sed in kernels/quant_mma.metal, $OUT/ptx's two
# files into cuda/ptx/, `go test ./cuda -run EmbeddedPTXIsCurrent`; the
# figures into docs/batching.md, a loser into docs/history/pruned-paths.md.
set -u
T0=$(date +%s)
LIMIT=${LIMIT:-540}
el() { echo $(( $(date +%s) - T0 )); }
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel engine.test cuda.test ptx-*) || exit 1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
. tools/synth_model.sh
echo "synth done t=$(el)"
B="bench -m $M --backend cuda --runs 1 --tokens 200 --prefill= --long= --drafts= --switches=false --lookup=false --stall-prompt 0"
: > /tmp/sweep.txt
tun() { # variant -> tuning
	s=2; u=512
	case $1 in *s3*) s=3;; esac
	case $1 in *u256*) u=256;; esac
	echo "MOE_DOWN_MMA_SPLIT=$s,MOE_MMA_IN_PER_WARP=$u"
}
for v in base ${VARIANTS:-s3 u256 s3u256}; do
	BAGEL_TILED_GEMV=1 BAGEL_KERNEL_TUNING=$(tun $v) timeout 100 .devbin/bagel $B --streams 1,8 > /tmp/bench-$v.txt 2>&1
	tps=$(grep -m1 '^decode greedy ' /tmp/bench-$v.txt | awk -F '  +' '{print $4}')
	all8=$(grep -A3 'streams  aggregate' /tmp/bench-$v.txt | awk '$1 == 8 {print $(NF-1)}')
	echo "$v ${tps:-0} ${all8:-0}" >> /tmp/sweep.txt
	echo "$v [$(tun $v)]: ${tps:-failed} tok/s alone, $(grep -m1 '^decode greedy ' /tmp/bench-$v.txt | awk -F '  +' '{print $9}') GPU ms; 8 all decoding ${all8:-failed} t=$(el)"
	[ -n "$tps" ] || tail -3 /tmp/bench-$v.txt
done
timeout 60 .devbin/bagel $B > /tmp/bench-plain.txt 2>&1
echo "plain GEMVs: $(grep -m1 '^decode greedy ' /tmp/bench-plain.txt | awk -F '  +' '{print $4, "tok/s,", $9, "GPU ms"}') t=$(el)"
# The pick: the fastest lone reply whose 8 replies are within 1% of main's,
# and at least 1% faster alone than main's; else main's.
W=$(awk '{t[$1] = $2; a[$1] = $3} END {m = "base"; for (k in t) if (a[k] >= 0.99 * a["base"] && t[k] > t[m]) m = k; if (t[m] < t["base"] * 1.01) m = "base"; print m}' /tmp/sweep.txt)
WT=$(tun $W)
echo "pick: $W [$WT] t=$(el)"
if [ "$W" != base ]; then
	.devbin/ptx-$W -out $OUT/ptx > /tmp/ptx.txt 2>&1 &
	PP=$!
	(cd cuda && BAGEL_KERNEL_TUNING=$WT BAGEL_REQUIRE_GPU=1 timeout 120 ../.devbin/cuda.test -test.count=1 -test.run 'TestKernels$|Tiled') > /tmp/kernels.txt 2>&1
	echo "kernels [$WT] rc $? t=$(el)"; grep -E "^(--- FAIL|FAIL|ok|PASS)" /tmp/kernels.txt | head -5
	(cd engine && BAGEL_KERNEL_TUNING=$WT BAGEL_REQUIRE_GPU=1 timeout 150 ../.devbin/engine.test -test.v -test.count=1 -test.run GPU) > /tmp/engine.txt 2>&1
	echo "engine GPU tests rc $? pass $(grep -c '^--- PASS' /tmp/engine.txt) fail $(grep -c '^--- FAIL' /tmp/engine.txt) t=$(el)"
	grep -A5 -- '--- FAIL' /tmp/engine.txt | head -20
	wait $PP; echo "ptx: $(tail -1 /tmp/ptx.txt) t=$(el)"
fi
# The batch's record on this card with the pick (docs/batching.md's table).
if [ $(el) -lt $(( LIMIT - 100 )) ]; then
	BAGEL_TILED_GEMV=1 BAGEL_KERNEL_TUNING=$WT timeout $(( LIMIT - 10 - $(el) )) .devbin/bagel bench -m $M --backend cuda --runs 1 --tokens 128 --prefill= --long= --drafts= --switches=false --lookup=false --streams 1,2,4,8 --stall-prompt 8192 > /tmp/batch.txt 2>&1
	echo "batch [$WT] t=$(el)"; grep -A8 'replies decoded together' /tmp/batch.txt
fi
