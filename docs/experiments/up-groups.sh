#!/bin/sh
# up-groups.sh: moe_up_mma_bf16 with a register cap (MOE_UP_MMA_MIN_GROUPS,
# up-groups.patch), alone and with 16 SIMD-groups a tile
# (MOE_MMA_IN_PER_WARP=256, which lost at main's 72 registers: one
# threadgroup a multiprocessor, three waves), with two trims of a step's
# latency on in their patches: the GDN recurrence's first v read before its
# barrier (GDN_V_EARLY, gdn-v-early.patch) and moe_down_mma_bf16's routing
# weights and shared gate read at its start (MOE_DOWN_EARLY,
# down-early.patch); one binary, BAGEL_KERNEL_TUNING.
# Build on the development machine with the three patches applied:
#   L="env CGO_ENABLED=0 GOOS=linux GOARCH=amd64"; F='-trimpath -ldflags=-s\ -w'
#   eval $L go build $F -o .devbin/bagel . && eval $L go test -c $F -o .devbin/cuda.test ./cuda
#   eval $L go test -c $F -o .devbin/engine.test ./engine && eval $L go build $F -o .devbin/ptx ./tools/ptx
#   (cd .devbin && tar cf bins.tar bagel cuda.test engine.test ptx && xz -T2 -6 bins.tar && rm -f bagel *.test ptx)
# then on the device (carry .devbin): sh docs/experiments/up-groups.sh
# (GDN_V_EARLY=0,MOE_DOWN_EARLY=0 is main; '' main with the two trims;
# MOE_MMA_IN_PER_WARP=256 alone lost before, so it is not run again.)
# To land a winner: its values as the defaults (the trims' to 0, or their
# code out, if they lose), the PTX from $OUT/ptx (built from the patches'
# defaults: the two trims on, no register cap; other defaults need it built
# again) into cuda/ptx, go test ./cuda -run EmbeddedPTXIsCurrent, docs/batching.md.
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel cuda.test engine.test ptx) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
mkdir -p $OUT/ptx; .devbin/ptx -out $OUT/ptx > /tmp/ptx.txt 2>&1 &
W="MOE_MMA_IN_PER_WARP=256,MOE_UP_MMA_MIN_GROUPS=2"
(cd cuda && BAGEL_KERNEL_TUNING=$W BAGEL_REQUIRE_GPU=1 timeout 100 ../.devbin/cuda.test -test.count=1 -test.v -test.run 'TestKernels$') > /tmp/k.txt 2>&1
say "kernels under $W: rc $? $(grep -c '| pass |' /tmp/k.txt) pass"
grep -E "FAIL|panic|error" /tmp/k.txt | head -8 | tee -a $LOG
. tools/synth_model.sh
say "synth"
C="-m $M --backend cuda --runs 1 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 --stall-prompt 0"
for r in 1 2; do
	for a in GDN_V_EARLY=0,MOE_DOWN_EARLY=0 "" "$W" MOE_UP_MMA_MIN_GROUPS=2; do
		BAGEL_TILED_GEMV=1 BAGEL_KERNEL_TUNING=$a timeout 120 .devbin/bagel bench $C --tokens 200 --streams 1,2,4,8 > /tmp/b.txt 2>&1
		say "'$a' (round $r, rc $?): alone $(grep -m1 '^decode greedy ' /tmp/b.txt | awk -F '  +' '{print $4, "tok/s", $9, "ms"}'); all decoding at 1/2/4/8: $(grep -A5 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[1248]$/ {printf "%s (%s ms) ", $(NF-1), $7}')"
	done
done
timeout 60 .devbin/bagel bench $C --tokens 200 > /tmp/p.txt 2>&1
say "plain GEMVs alone: $(grep -m1 '^decode greedy ' /tmp/p.txt | awk -F '  +' '{print $4, "tok/s", $9, "GPU ms"}')"
(cd engine && BAGEL_KERNEL_TUNING=$W BAGEL_REQUIRE_GPU=1 timeout 200 ../.devbin/engine.test -test.count=1 -test.run 'GPUBatch|GPUPaths' -test.v) > /tmp/e.txt 2>&1
say "engine GPU batch tests under $W: rc $? $(grep -c -- '--- PASS' /tmp/e.txt) pass"
grep -- "--- FAIL\|panic" /tmp/e.txt | head -6 | tee -a $LOG
wait; say "ptx: $(tail -1 /tmp/ptx.txt)"
