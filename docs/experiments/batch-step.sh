#!/bin/sh
# batch-step.sh: the device call of the thirty-first session's two patches
# for a batched step (written after its device time was spent), together:
#   gdn-batch-rows.patch: gdn_recurrence_batch_bf16 with 8 state rows a
#     SIMD-group (GDN_REC_BATCH_ROWS), the lone kernel keeping 2. ncu over a
#     step of 8 replies (H100) put it first, 740 of 4,472 µs (1.3 TB/s); a
#     sweep of both kernels' rows gave 8 replies 2,380 against 2,293 tok/s.
#   conv-batch.patch: the batched step's GDN in-projection and every
#     reply's conv in one launch (qmatmul_mma_multi_conv_batch_bf16, switch
#     fused-gdn-conv-batch) instead of qmatmul_mma_multi_bf16 then
#     conv1d_silu_batch_bf16 (152 µs of the step under ncu, 30 launches).
#   short-prompts.patch: a model loaded for several replies starts the
#     prompt path at 17 tokens (switch short-prompts-together, on; bench
#     --replies N loads as serve --parallel N does), so short prompts
#     arriving together prefill in one forward; host code only. Its A/B
#     below: 4 and 8 replies' 32-token prompts (TTFT, summed) and a lone
#     reply's 17 / 24 / 31-token prompts (first token), each way.
# The first two keep each row's bits (a row's sums are its own; the conv step is the
# lone fused kernel's): the engine's GPU tests check a batched reply against
# its solo one. The A/B is one binary: BAGEL_KERNEL_TUNING=GDN_REC_BATCH_ROWS=2
# is main's recurrence geometry, BAGEL_NO_FUSED_GDN_CONV_BATCH=1 main's
# in-projection and conv; two rounds of the four.
# Builds on the development machine, from main with the three patches applied:
#   git apply docs/experiments/gdn-batch-rows.patch docs/experiments/conv-batch.patch docs/experiments/short-prompts.patch
#   L="env CGO_ENABLED=0 GOOS=linux GOARCH=amd64"; F='-trimpath -ldflags=-s\ -w'
#   eval $L go build $F -o .devbin/bagel . && eval $L go test -c $F -o .devbin/engine.test ./engine
#   eval $L go test -c $F -o .devbin/cuda.test ./cuda && eval $L go build $F -o .devbin/ptx ./tools/ptx
#   (cd .devbin && tar cf bins.tar bagel engine.test cuda.test ptx && xz -T2 -6 bins.tar && rm -f bagel *.test ptx)
# then on the device (carry .devbin): sh docs/experiments/batch-step.sh
# (the binaries compile the patched source with NVRTC; its PTX comes back in
# $OUT/ptx). To land a winner: its patch (a loser's part taken out and the
# PTX built again), $OUT/ptx's two files into cuda/ptx/ where both land, `go
# test ./cuda -run EmbeddedPTXIsCurrent`, docs/batching.md; a loss into
# docs/history/pruned-paths.md.
set -u
T0=$(date +%s)
LIMIT=${LIMIT:-560}
el() { echo $(( $(date +%s) - T0 )); }
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel engine.test cuda.test ptx) || exit 1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
.devbin/ptx -out $OUT/ptx > /tmp/ptx.txt 2>&1 &
PP=$!
. tools/synth_model.sh
echo "synth done t=$(el)"
B="bench -m $M --backend cuda --runs 1 --tokens 128 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 --stall-prompt 0 --streams 1,2,4,8"
for r in 1 2; do
	for v in "2 1" "8 1" "2 0" "8 0"; do
		set -- $v  # $1: the batch recurrence's rows; $2: 1 = main's conv (the fused batch launch off)
		NOFUSE=; [ "$2" = 1 ] && NOFUSE=1
		BAGEL_TILED_GEMV=1 BAGEL_NO_FUSED_GDN_CONV_BATCH=$NOFUSE BAGEL_KERNEL_TUNING=GDN_REC_BATCH_ROWS=$1 timeout 100 .devbin/bagel $B > /tmp/b.txt 2>&1
		echo "rows $1, conv $( [ "$2" = 1 ] && echo apart || echo fused ) (round $r, rc $?): alone $(grep -m1 '^decode greedy ' /tmp/b.txt | awk -F '  +' '{print $4}'); all decoding at 1/2/4/8: $(grep -A5 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[1248]$/ {printf "%s (%s ms, %s) ", $(NF-1), $7, $8}') t=$(el)"
	done
done
for v in 1 ""; do  # short-prompts-together off (main's threshold), then on
	S="bench -m $M --backend cuda --replies 8 --tokens 128 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0"
	BAGEL_NO_SHORT_PROMPTS_TOGETHER=$v timeout 60 .devbin/bagel $S --runs 1 --stall-prompt 0 --streams 1,4,8 > /tmp/sp.txt 2>&1
	echo "short-prompts-together $( [ -n "$v" ] && echo off || echo on ): streams 1/4/8 summed (TTFT ms): $(grep -A5 'streams  aggregate' /tmp/sp.txt | awk '$1 ~ /^[148]$/ {printf "%s (%s) ", $2, $6}') t=$(el)"
	BAGEL_NO_SHORT_PROMPTS_TOGETHER=$v timeout 60 .devbin/bagel $S --runs 2 --tokens 8 --prefill 17,24,31 --streams= > /tmp/sp1.txt 2>&1
	echo "   a lone reply's prompt of 17 / 24 / 31 tokens, first token ms: $(grep -E '^prefill ' /tmp/sp1.txt | awk -F '  +' '{printf "%s: %s ", $3, $6}') t=$(el)"
done
wait $PP; echo "ptx: $(tail -1 /tmp/ptx.txt) t=$(el)"
(cd cuda && BAGEL_REQUIRE_GPU=1 timeout 150 ../.devbin/cuda.test -test.count=1 -test.v -test.run 'TestKernels$') > /tmp/kernels.txt 2>&1
echo "kernels rc $? t=$(el)"; grep -E "^(--- FAIL|FAIL|ok|PASS)" /tmp/kernels.txt | head -5
grep -E "multi_conv_batch|gdn_recurrence_batch" /tmp/kernels.txt | head -14
(cd engine && BAGEL_REQUIRE_GPU=1 timeout 180 ../.devbin/engine.test -test.v -test.count=1 -test.run GPU) > /tmp/engine.txt 2>&1
echo "engine GPU tests rc $? pass $(grep -c '^--- PASS' /tmp/engine.txt) fail $(grep -c '^--- FAIL' /tmp/engine.txt) t=$(el)"
grep -A5 -- '--- FAIL' /tmp/engine.txt | head -20
if [ $(el) -lt $(( LIMIT - 60 )) ]; then
	BAGEL_TILED_GEMV=1 timeout $(( LIMIT - 30 - $(el) )) .devbin/bagel bench -m $M --backend cuda --runs 1 --tokens 128 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 --streams 1,2,4,8 --stall-prompt 8192 > /tmp/batch.txt 2>&1
	echo "batch (both patches) t=$(el)"; grep -A8 'replies decoded together' /tmp/batch.txt
	timeout 25 .devbin/bagel bench -m $M --backend cuda --runs 1 --tokens 200 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 > /tmp/plain.txt 2>&1
	echo "plain GEMVs alone: $(grep -m1 '^decode greedy ' /tmp/plain.txt | awk -F '  +' '{print $4, "tok/s", $9, "GPU ms"}') t=$(el)"
fi
