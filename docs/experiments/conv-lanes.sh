#!/bin/sh
# conv-lanes.sh: the thirty-second session's second device call. The first
# (batch-step.sh) put gdn-batch-rows and short-prompts ahead and
# conv-batch behind at 8 replies (its threads of a channel walked the 8
# rows' conv steps one after another); here conv-batch with the runs spread
# over the threadgroup (16 channels × TG_SIZE_X/16 runs at a time), against
# the conv apart (BAGEL_NO_FUSED_GDN_CONV_BATCH=1), one binary, three rounds;
# then the CUDA and engine GPU tests in full, the PTX with and without the
# fused batch kernel (ptx-noconv: main + gdn-batch-rows + short-prompts), the
# batch's record, and ncu over an 8-reply step if time is left.
# Build (development machine, the three patches applied and the kernel
# changed; ptx-noconv from a worktree with the other two):
#   see batch-step.sh's header; bins.tar holds bagel engine.test cuda.test ptx ptx-noconv
set -u
T0=$(date +%s)
LIMIT=${LIMIT:-580}
el() { echo $(( $(date +%s) - T0 )); }
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/ptx $OUT/ptx-noconv
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel engine.test cuda.test ptx ptx-noconv) || exit 1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
(.devbin/ptx -out $OUT/ptx > /tmp/ptx.txt 2>&1; .devbin/ptx-noconv -out $OUT/ptx-noconv > /tmp/ptx2.txt 2>&1) &
PP=$!
. tools/synth_model.sh
echo "synth done t=$(el)"
B="bench -m $M --backend cuda --runs 1 --tokens 128 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 --stall-prompt 0 --streams 1,2,4,8"
for r in 1 2 3; do
	for NOFUSE in 1 ""; do
		BAGEL_TILED_GEMV=1 BAGEL_NO_FUSED_GDN_CONV_BATCH=$NOFUSE timeout 100 .devbin/bagel $B > /tmp/b.txt 2>&1
		echo "conv $( [ -n "$NOFUSE" ] && echo apart || echo fused ) (round $r, rc $?): alone $(grep -m1 '^decode greedy ' /tmp/b.txt | awk -F '  +' '{print $4}'); all decoding at 1/2/4/8: $(grep -A5 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[1248]$/ {printf "%s (%s ms, %s) ", $(NF-1), $7, $8}') t=$(el)"
	done
done
wait $PP; echo "ptx: $(tail -1 /tmp/ptx.txt) / $(tail -1 /tmp/ptx2.txt) t=$(el)"
(cd cuda && BAGEL_REQUIRE_GPU=1 timeout 200 ../.devbin/cuda.test -test.count=1 -test.v) > /tmp/cuda.txt 2>&1
echo "cuda tests rc $? pass $(grep -c '^--- PASS' /tmp/cuda.txt) fail $(grep -c '^--- FAIL' /tmp/cuda.txt) t=$(el)"
grep -A5 -- '--- FAIL' /tmp/cuda.txt | head -20
grep -E "multi_conv_batch" /tmp/cuda.txt | head -6
(cd engine && BAGEL_REQUIRE_GPU=1 timeout 180 ../.devbin/engine.test -test.v -test.count=1 -test.run GPU) > /tmp/engine.txt 2>&1
echo "engine GPU tests rc $? pass $(grep -c '^--- PASS' /tmp/engine.txt) fail $(grep -c '^--- FAIL' /tmp/engine.txt) t=$(el)"
grep -A5 -- '--- FAIL' /tmp/engine.txt | head -20
if [ $(el) -lt $(( LIMIT - 60 )) ]; then
	BAGEL_TILED_GEMV=1 timeout $(( LIMIT - 30 - $(el) )) .devbin/bagel bench -m $M --backend cuda --runs 1 --tokens 128 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 --streams 1,2,4,8 --stall-prompt 8192 > /tmp/batch.txt 2>&1
	echo "batch t=$(el)"; grep -A8 'replies decoded together' /tmp/batch.txt
fi
if [ $(el) -lt $(( LIMIT - 200 )) ]; then
	NCU_SKIP=48000 NCU_COUNT=8000 timeout $(( LIMIT - 20 - $(el) )) sh tools/gpubench.sh ncu-batch 2>&1 | tail -40
	rm -f $OUT/ncu-batch.csv.gz $OUT/log.txt
fi
echo "end t=$(el)"
