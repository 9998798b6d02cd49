#!/bin/sh
# down-teams.sh: moe_down_mma_bf16 with MOE_DOWN_MORE_TEAMS more teams of
# SIMD-groups for a launch of several tokens (down-teams.patch; 0 is main):
# a batched step's items over 13 teams, not 9, so fewer rounds a threadgroup.
# One binary, BAGEL_KERNEL_TUNING; .devbin/bins.tar.xz holds bagel, cuda.test
# and engine.test built with the patch.
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel cuda.test engine.test) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
(cd cuda && BAGEL_REQUIRE_GPU=1 timeout 100 ../.devbin/cuda.test -test.count=1 -test.v -test.run 'TestKernels$') > /tmp/k.txt 2>&1
say "kernels (MOE_DOWN_MORE_TEAMS=4): rc $? $(grep -c '| pass |' /tmp/k.txt) pass"
grep -E "FAIL|panic|error" /tmp/k.txt | head -8 | tee -a $LOG
. tools/synth_model.sh
C="-m $M --backend cuda --runs 1 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 --stall-prompt 0"
for r in 1 2; do
	for a in 0 2 4; do
		BAGEL_TILED_GEMV=1 BAGEL_KERNEL_TUNING=MOE_DOWN_MORE_TEAMS=$a timeout 120 .devbin/bagel bench $C --tokens 200 --streams 1,2,4,8 > /tmp/b.txt 2>&1
		say "MOE_DOWN_MORE_TEAMS=$a (round $r, rc $?): all decoding at 1/2/4/8: $(grep -A5 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[1248]$/ {printf "%s (%s ms) ", $(NF-1), $7}')"
	done
done
BAGEL_TILED_GEMV=1 timeout 120 .devbin/bagel bench $C --tokens 128 --streams 1,4 --stream-drafts 4 > /tmp/d.txt 2>&1
say "drafts of 4 (MORE 4): $(grep -A5 'streams  aggregate' /tmp/d.txt | tail -4 | tr -s ' ' | tr '\n' '|')"
(cd engine && BAGEL_REQUIRE_GPU=1 timeout 200 ../.devbin/engine.test -test.count=1 -test.run 'GPUBatch|GPUPaths' -test.v) > /tmp/e.txt 2>&1
say "engine GPU batch tests (MORE 4): rc $? $(grep -c -- '--- PASS' /tmp/e.txt) pass"
grep -- "--- FAIL\|panic" /tmp/e.txt | head -6 | tee -a $LOG
