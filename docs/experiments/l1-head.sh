#!/bin/sh
# l1-head.sh: three experiments in one build (l1-head.patch), each a tunable:
# - x-l1: the tiled GEMVs' shared loop (qmm_sums_x) asking for its span of x
#   in L1 right after its grid wait (QMM_X_L1) and reading the weights' codes
#   through L2 only (QMM_W_CG), apart and together (both 1 in the patch;
#   "QMM_X_L1=0,QMM_W_CG=0" is main). ncu's stall sampling put 23% of
#   moe_up_mma_bf16's samples on the first use of a chunk's x, which each of
#   a SIMD-group's 8 chunks reads from L2 at its use; x-ahead (x in
#   registers a chunk ahead) and stage-x (x copied to threadgroup memory
#   first) lost to registers and to a barrier; a prefetch into L1 costs
#   neither.
# - head-ahead: the head (qmatmul_mma_bf16_f32, 49% of the DRAM's peak under
#   ncu against the plain GEMV's 60%) reading its codes QMM_HEAD_AHEAD chunks
#   ahead (1, main, in the patch).
# - max-cols: QMM_MAX_COLS=8 compiles the tiled loop for one eight of
#   columns (a timing experiment only: a verify's or prompt chunk's tokens
#   past 8 are left out), to see what the second eight's registers cost the
#   steps of up to 8 rows (16, main, in the patch).
# Bits unchanged by the first two (the same values, the same order). One binary,
# BAGEL_KERNEL_TUNING; .devbin/bins.tar.xz holds bagel, cuda.test and
# engine.test built with the patch:
#   L="env CGO_ENABLED=0 GOOS=linux GOARCH=amd64"; F='-trimpath -ldflags=-s\ -w'
#   eval $L go build $F -o .devbin/bagel . && eval $L go test -c $F -o .devbin/cuda.test ./cuda
#   eval $L go test -c $F -o .devbin/engine.test ./engine && eval $L go build $F -o .devbin/ptx ./tools/ptx
#   (cd .devbin && tar cf bins.tar bagel cuda.test engine.test ptx && xz -T2 -6 bins.tar && rm -f bagel *.test ptx)
# then on the device (carry .devbin): sh docs/experiments/l1-head.sh
# To land a winner: its values as the defaults (a loser's code out), the PTX
# from $OUT/ptx into cuda/ptx if the defaults are the patch's (x-l1 on, head
# 1; else built again on the device), go test ./cuda -run
# EmbeddedPTXIsCurrent, the docs.
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel cuda.test engine.test ptx) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
. tools/synth_model.sh
C="-m $M --backend cuda --runs 1 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 --stall-prompt 0"
for r in 1 2; do
	for a in QMM_X_L1=0,QMM_W_CG=0 QMM_W_CG=0 QMM_X_L1=0 "" QMM_X_L1=0,QMM_W_CG=0,QMM_HEAD_AHEAD=2 QMM_X_L1=0,QMM_W_CG=0,QMM_HEAD_AHEAD=4 QMM_X_L1=0,QMM_W_CG=0,QMM_MAX_COLS=8; do
		BAGEL_TILED_GEMV=1 BAGEL_KERNEL_TUNING=$a timeout 120 .devbin/bagel bench $C --tokens 200 --streams 1,2,4,8 > /tmp/b.txt 2>&1
		say "'$a' (round $r, rc $?): all decoding at 1/2/4/8: $(grep -A5 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[1248]$/ {printf "%s (%s ms) ", $(NF-1), $7}')"
	done
done
timeout 60 .devbin/bagel bench $C --tokens 200 > /tmp/p.txt 2>&1
say "plain GEMVs alone: $(grep -m1 '^decode greedy ' /tmp/p.txt | awk -F '  +' '{print $4, "tok/s", $9, "GPU ms"}')"
(cd engine && BAGEL_REQUIRE_GPU=1 timeout 150 ../.devbin/engine.test -test.count=1 -test.run 'GPUBatch|GPUPaths' -test.v) > /tmp/e.txt 2>&1
say "engine GPU batch tests (both on): rc $? $(grep -c -- '--- PASS' /tmp/e.txt) pass"
grep -- "--- FAIL\|panic" /tmp/e.txt | head -6 | tee -a $LOG
(cd cuda && BAGEL_KERNEL_TUNING=QMM_HEAD_AHEAD=3 BAGEL_REQUIRE_GPU=1 timeout 100 ../.devbin/cuda.test -test.count=1 -test.v -test.run 'TestKernels$') > /tmp/k.txt 2>&1
say "kernels (x-l1 on, QMM_HEAD_AHEAD=3): rc $? $(grep -c '| pass |' /tmp/k.txt) pass"
grep -E "FAIL|panic|error" /tmp/k.txt | head -8 | tee -a $LOG
mkdir -p $OUT/ptx; timeout 120 .devbin/ptx -out $OUT/ptx > /tmp/ptx.txt 2>&1
say "ptx: $(tail -1 /tmp/ptx.txt)"
