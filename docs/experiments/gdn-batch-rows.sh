#!/bin/sh
# gdn-batch-rows.sh: the device call of gdn-batch-rows.patch (thirty-first
# session, written after its device time was spent). ncu over a batched step
# of 8 replies (H100, `tools/gpubench.sh ncu-batch`) put
# gdn_recurrence_batch_bf16 first: 740 of 4,472 µs, 24.7 µs a layer for
# 32 MB of states read and written (1.3 TB/s), 4,096 threadgroups of 2 rows
# a SIMD-group. A sweep of GDN_REC_ROWS (both recurrence kernels) in the same
# session: 8 replies all decoding 2,295 / 2,291 tok/s at 2, 2,362 / 2,355 at
# 4, 2,380 at 8; one reply alone 416.5 / 414.0, 414.6 / 411.6, 412.9. The
# patch gives the batch kernel its own row count (GDN_REC_BATCH_ROWS, 8) and
# leaves the lone kernel's (GDN_REC_ROWS, 2): the helpers take the rows as a
# template argument. A row's sums do not depend on the rows beside it, so the
# bits stay (the engine's GPU tests check a batched reply against its solo).
# Builds on the development machine, from main with the patch applied:
#   git apply docs/experiments/gdn-batch-rows.patch
#   L="env CGO_ENABLED=0 GOOS=linux GOARCH=amd64"; F='-trimpath -ldflags=-s\ -w'
#   eval $L go build $F -o .devbin/bagel . && eval $L go test -c $F -o .devbin/engine.test ./engine
#   eval $L go test -c $F -o .devbin/cuda.test ./cuda && eval $L go build $F -o .devbin/ptx ./tools/ptx
#   (cd .devbin && tar cf bins.tar bagel engine.test cuda.test ptx && xz -T2 -6 bins.tar && rm -f bagel *.test ptx)
# then on the device (carry .devbin): sh docs/experiments/gdn-batch-rows.sh
# (the binaries compile the patched source with NVRTC; its PTX comes back in
# $OUT/ptx). To land: the patch, $OUT/ptx's two files into cuda/ptx/, `go
# test ./cuda -run EmbeddedPTXIsCurrent`, docs/batching.md; a loss into
# docs/history/pruned-paths.md.
set -u
T0=$(date +%s)
LIMIT=${LIMIT:-540}
el() { echo $(( $(date +%s) - T0 )); }
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel engine.test cuda.test ptx) || exit 1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
.devbin/ptx -out $OUT/ptx > /tmp/ptx.txt 2>&1 &
PP=$!
. tools/synth_model.sh
echo "synth done t=$(el)"
# The batch kernel's rows: 2 is main's geometry (same code otherwise).
B="bench -m $M --backend cuda --runs 1 --tokens 128 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 --stall-prompt 0 --streams 1,2,4,8"
for v in 2 8 2 8 4; do
	BAGEL_TILED_GEMV=1 BAGEL_KERNEL_TUNING=GDN_REC_BATCH_ROWS=$v timeout 100 .devbin/bagel $B > /tmp/b-$v.txt 2>&1
	echo "GDN_REC_BATCH_ROWS=$v rc $?: alone $(grep -m1 '^decode greedy ' /tmp/b-$v.txt | awk -F '  +' '{print $4, "tok/s", $9, "GPU ms"}'); all decoding at 1/2/4/8: $(grep -A5 'streams  aggregate' /tmp/b-$v.txt | awk '$1 ~ /^[1248]$/ {printf "%s (%s ms) ", $(NF-1), $7}') t=$(el)"
done
wait $PP; echo "ptx: $(tail -1 /tmp/ptx.txt) t=$(el)"
(cd cuda && BAGEL_REQUIRE_GPU=1 timeout 150 ../.devbin/cuda.test -test.count=1 -test.run 'TestKernels$') > /tmp/kernels.txt 2>&1
echo "kernels rc $? t=$(el)"; grep -E "^(--- FAIL|FAIL|ok|PASS)" /tmp/kernels.txt | head -5; grep -i "gdn_recurrence_batch" /tmp/kernels.txt | grep -i fail | head -5
(cd engine && BAGEL_REQUIRE_GPU=1 timeout 180 ../.devbin/engine.test -test.v -test.count=1 -test.run GPU) > /tmp/engine.txt 2>&1
echo "engine GPU tests rc $? pass $(grep -c '^--- PASS' /tmp/engine.txt) fail $(grep -c '^--- FAIL' /tmp/engine.txt) t=$(el)"
grep -A5 -- '--- FAIL' /tmp/engine.txt | head -20
if [ $(el) -lt $(( LIMIT - 60 )) ]; then
	BAGEL_TILED_GEMV=1 timeout $(( LIMIT - 10 - $(el) )) .devbin/bagel bench -m $M --backend cuda --runs 1 --tokens 128 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 --streams 1,2,4,8 --stall-prompt 8192 > /tmp/batch.txt 2>&1
	echo "batch (patch's defaults) t=$(el)"; grep -A8 'replies decoded together' /tmp/batch.txt
	timeout 40 .devbin/bagel bench -m $M --backend cuda --runs 1 --tokens 200 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 > /tmp/plain.txt 2>&1
	echo "plain GEMVs alone: $(grep -m1 '^decode greedy ' /tmp/plain.txt | awk -F '  +' '{print $4, "tok/s", $9, "GPU ms"}') t=$(el)"
fi
