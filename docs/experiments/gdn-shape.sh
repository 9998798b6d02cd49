#!/bin/sh
# gdn-shape.sh: the recurrence's threadgroup shape, swept (thirty-second
# session, after gdn-batch-rows landed). Under ncu an 8-reply step's
# gdn_recurrence_batch_bf16 reads and writes 32 MB of states in 19.4 µs a
# layer (1.65 TB/s of the H100's ~3.3): its rows a SIMD-group
# (GDN_REC_BATCH_ROWS, 8) and SIMD-groups a threadgroup (GDN_ROWS_PER_GROUP,
# 4, now tunable; both recurrence kernels) through BAGEL_KERNEL_TUNING, one
# binary, two rounds; then the kernel tests under the two likeliest shapes
# and the PTX of main and of each (ptx-g8: 8 SIMD-groups; ptx-r16: 16 rows),
# so a winner lands without another call.
set -u
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/ptx $OUT/ptx-g8 $OUT/ptx-r16
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel engine.test cuda.test ptx ptx-g8 ptx-r16) || exit 1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
(.devbin/ptx -out $OUT/ptx > /tmp/ptx.txt 2>&1; .devbin/ptx-g8 -out $OUT/ptx-g8 >> /tmp/ptx.txt 2>&1; .devbin/ptx-r16 -out $OUT/ptx-r16 >> /tmp/ptx.txt 2>&1) &
PP=$!
. tools/synth_model.sh
echo "synth done t=$(el)"
B="bench -m $M --backend cuda --runs 1 --tokens 200 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 --stall-prompt 0 --streams 1,4,8"
for r in 1 2; do
	for t in "" GDN_REC_BATCH_ROWS=16 GDN_ROWS_PER_GROUP=8 GDN_ROWS_PER_GROUP=2 GDN_REC_BATCH_ROWS=4,GDN_ROWS_PER_GROUP=8 GDN_REC_BATCH_ROWS=16,GDN_ROWS_PER_GROUP=2 GDN_REC_BATCH_ROWS=32; do
		BAGEL_TILED_GEMV=1 BAGEL_KERNEL_TUNING=$t timeout 100 .devbin/bagel $B > /tmp/b.txt 2>&1
		echo "${t:-main} (round $r, rc $?): alone $(grep -m1 '^decode greedy ' /tmp/b.txt | awk -F '  +' '{print $4}'); all decoding at 1/4/8: $(grep -A4 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[148]$/ {printf "%s (%s ms) ", $(NF-1), $7}') t=$(el)"
	done
done
wait $PP; echo "ptx: $(grep -c PTX /tmp/ptx.txt) built; $(tail -3 /tmp/ptx.txt | tr '\n' ' ') t=$(el)"
for t in GDN_ROWS_PER_GROUP=8 GDN_REC_BATCH_ROWS=16; do
	(cd cuda && BAGEL_KERNEL_TUNING=$t BAGEL_REQUIRE_GPU=1 timeout 100 ../.devbin/cuda.test -test.count=1 -test.v -test.run 'TestKernels$') > /tmp/kernels.txt 2>&1
	echo "kernels under $t: rc $? $(grep -c '| pass |' /tmp/kernels.txt) cases pass, $(grep -c '| FAIL |' /tmp/kernels.txt) fail t=$(el)"
done
(cd engine && BAGEL_REQUIRE_GPU=1 timeout 150 ../.devbin/engine.test -test.count=1 -test.run 'GPUBatch') > /tmp/engine.txt 2>&1
echo "engine GPUBatch tests rc $? $(tail -1 /tmp/engine.txt) t=$(el)"
