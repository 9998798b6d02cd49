#!/bin/sh
# l2-ahead.sh: the tiled GEMVs' shared loop (qmm_sums_x) asking for all of a
# SIMD-group's weight lines in L2 before its grid wait (QMM_L2_AHEAD=1, the
# patch's default; 0 is main), so that the loop's chunk reads wait on L2,
# not on the memory. Bits unchanged (a prefetch moves no value). One binary,
# BAGEL_KERNEL_TUNING; .devbin/bins.tar.xz holds bagel and engine.test.
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel engine.test) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
. tools/synth_model.sh
C="-m $M --backend cuda --runs 1 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 --stall-prompt 0"
for r in 1 2; do
	for a in 0 1; do
		BAGEL_TILED_GEMV=1 BAGEL_KERNEL_TUNING=QMM_L2_AHEAD=$a timeout 120 .devbin/bagel bench $C --tokens 200 --streams 1,2,4,8 > /tmp/b.txt 2>&1
		say "QMM_L2_AHEAD=$a (round $r, rc $?): all decoding at 1/2/4/8: $(grep -A5 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[1248]$/ {printf "%s (%s ms) ", $(NF-1), $7}')"
	done
done
timeout 60 .devbin/bagel bench $C --tokens 200 > /tmp/p.txt 2>&1
say "plain GEMVs alone: $(grep -m1 '^decode greedy ' /tmp/p.txt | awk -F '  +' '{print $4, "tok/s", $9, "GPU ms"}')"
(cd engine && BAGEL_REQUIRE_GPU=1 timeout 150 ../.devbin/engine.test -test.count=1 -test.run 'GPUBatch|GPUPaths' -test.v) > /tmp/e.txt 2>&1
say "engine GPU batch tests (QMM_L2_AHEAD=1): rc $? $(grep -c -- '--- PASS' /tmp/e.txt) pass"
grep -- "--- FAIL\|panic" /tmp/e.txt | head -6 | tee -a $LOG
