#!/bin/sh
# cp-async.sh: the tiled GEMVs' weight codes through a ring in threadgroup
# memory (cp-async.patch: cp.async, QMM_ASYNC stages, 0 = main's register
# loop), one binary. Every line goes to $OUT/log.txt as it is written, so a
# call that runs past its limit still brings back how far it got (the
# thirty-second session's one try, with an earlier form of the patch and
# its output piped through tail, timed out at 190 s with nothing to show).
# Build on the development machine, the patch applied:
#   L="env CGO_ENABLED=0 GOOS=linux GOARCH=amd64"; F='-trimpath -ldflags=-s\ -w'
#   eval $L go build $F -o .devbin/bagel . && eval $L go test -c $F -o .devbin/cuda.test ./cuda
#   eval $L go test -c $F -o .devbin/engine.test ./engine && eval $L go build $F -o .devbin/ptx ./tools/ptx
#   (cd .devbin && tar cf bins.tar bagel cuda.test engine.test ptx && xz -T2 -6 bins.tar && rm -f bagel *.test ptx)
# then on the device (carry .devbin): sh docs/experiments/cp-async.sh
# QMM_ASYNC=4 reaches moe_up_mma_bf16 (8 SIMD-groups: two slices of part
# each) and the 4-SIMD-group GEMVs (the in-projections, the head); 6 reaches
# only the latter (three slices a SIMD-group), so 4 against 6 tells the
# experts' share from the dense GEMVs'.
# To land it (if it wins): QMM_ASYNC's default to the winning stages, the
# PTX from $OUT/ptx into cuda/ptx, docs/batching.md; else docs/history.
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/ptx
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel cuda.test engine.test ptx) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
.devbin/ptx -out $OUT/ptx > /tmp/ptx.txt 2>&1 &
# First the kernel cases under the ring (a wrong copy or a hang shows here, in
# a minute at most), then compute-sanitizer's racecheck on the tiled ones.
(cd cuda && BAGEL_KERNEL_TUNING=QMM_ASYNC=4 BAGEL_REQUIRE_GPU=1 timeout 90 ../.devbin/cuda.test -test.count=1 -test.v -test.run 'TestKernels$') > /tmp/k.txt 2>&1
say "kernels under QMM_ASYNC=4: rc $? $(grep -c '| pass |' /tmp/k.txt) pass"
grep -E "FAIL|panic|error" /tmp/k.txt | head -8 | tee -a $LOG
(cd cuda && BAGEL_KERNEL_TUNING=QMM_ASYNC=4 BAGEL_REQUIRE_GPU=1 timeout 120 compute-sanitizer --tool racecheck ../.devbin/cuda.test -test.count=1 -test.run 'TestKernels$' -test.v) > /tmp/race.txt 2>&1
say "racecheck: rc $? $(grep -m1 'RACECHECK SUMMARY' /tmp/race.txt)"
. tools/synth_model.sh
say "synth"
P="Write a short story about a bagel shop in the rain."
for a in 0 4; do
	BAGEL_TILED_GEMV=1 BAGEL_KERNEL_TUNING=QMM_ASYNC=$a timeout 90 .devbin/bagel generate -m $M --backend cuda --raw -p "$P" --max-tokens 96 --temp 0 > /tmp/gen$a.txt 2>/tmp/generr$a.txt
	say "generate QMM_ASYNC=$a rc $? $(md5sum < /tmp/gen$a.txt | cut -c1-12)"
done
cmp -s /tmp/gen0.txt /tmp/gen4.txt && say "the same text" || say "THE TEXT DIFFERS: $(tail -2 /tmp/generr4.txt)"
B="bench -m $M --backend cuda --runs 1 --tokens 200 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 --stall-prompt 0 --streams 1,4,8"
for r in 1 2; do
	for a in 0 4 6; do
		BAGEL_TILED_GEMV=1 BAGEL_KERNEL_TUNING=QMM_ASYNC=$a timeout 90 .devbin/bagel $B > /tmp/b.txt 2>&1
		say "QMM_ASYNC=$a (round $r, rc $?): alone $(grep -m1 '^decode greedy ' /tmp/b.txt | awk -F '  +' '{print $4, "tok/s", $9, "ms"}'); all decoding at 1/4/8: $(grep -A4 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[148]$/ {printf "%s (%s ms) ", $(NF-1), $7}')"
	done
done
(cd engine && BAGEL_KERNEL_TUNING=QMM_ASYNC=4 BAGEL_REQUIRE_GPU=1 timeout 180 ../.devbin/engine.test -test.count=1 -test.run GPU) > /tmp/e.txt 2>&1
say "engine GPU tests under QMM_ASYNC=4: rc $? $(tail -1 /tmp/e.txt)"
wait; say "ptx: $(tail -1 /tmp/ptx.txt)"
