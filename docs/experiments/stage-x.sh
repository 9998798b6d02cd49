#!/bin/sh
# stage-x.sh: a one-column tile's x copied into the SIMD-group's part before
# qmm_sums_x's loop (QMM_STAGE_X 1, branch stage-x) against x read from L2
# in each chunk (0, main), one binary. Kernel cases first (NVRTC builds the
# source: the embedded PTX predates the change), racecheck on the mma
# kernels, the same greedy text both ways, the A/B in two rounds, the
# engine's GPU tests, the PTX to land.
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/ptx
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel cuda.test engine.test ptx) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
.devbin/ptx -out $OUT/ptx > /tmp/ptx.txt 2>&1 &
(cd cuda && BAGEL_REQUIRE_GPU=1 timeout 100 ../.devbin/cuda.test -test.count=1 -test.v -test.run 'TestKernels$') > /tmp/k.txt 2>&1
say "kernels (QMM_STAGE_X 1): rc $? $(grep -c '| pass |' /tmp/k.txt) pass"
grep -E "FAIL|panic|error" /tmp/k.txt | head -8 | tee -a $LOG
. tools/synth_model.sh
say "synth"
P="Write a short story about a bagel shop in the rain."
for a in 0 1; do
	BAGEL_TILED_GEMV=1 BAGEL_KERNEL_TUNING=QMM_STAGE_X=$a timeout 90 .devbin/bagel generate -m $M --backend cuda --raw -p "$P" --max-tokens 96 --temp 0 > /tmp/gen$a.txt 2>/tmp/generr$a.txt
	say "generate QMM_STAGE_X=$a rc $? $(md5sum < /tmp/gen$a.txt | cut -c1-12)"
done
cmp -s /tmp/gen0.txt /tmp/gen1.txt && say "the same text" || say "THE TEXT DIFFERS: $(tail -2 /tmp/generr1.txt)"
C="-m $M --backend cuda --runs 1 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 --stall-prompt 0"
for r in 1 2; do
	for a in 0 1; do
		BAGEL_TILED_GEMV=1 BAGEL_KERNEL_TUNING=QMM_STAGE_X=$a timeout 90 .devbin/bagel bench $C --tokens 200 --streams 1,2,4,8 > /tmp/b.txt 2>&1
		say "QMM_STAGE_X=$a (round $r, rc $?): alone $(grep -m1 '^decode greedy ' /tmp/b.txt | awk -F '  +' '{print $4, "tok/s", $9, "ms"}'); all decoding at 1/2/4/8: $(grep -A5 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[1248]$/ {printf "%s (%s ms) ", $(NF-1), $7}')"
	done
	timeout 60 .devbin/bagel bench $C --tokens 200 > /tmp/p.txt 2>&1
	say "plain GEMVs alone (round $r): $(grep -m1 '^decode greedy ' /tmp/p.txt | awk -F '  +' '{print $4, "tok/s", $9, "GPU ms"}')"
done
for a in 0 1; do
	BAGEL_TILED_GEMV=1 BAGEL_KERNEL_TUNING=QMM_STAGE_X=$a timeout 120 .devbin/bagel bench $C --tokens 128 --streams 1,4,8 --stream-drafts 4 > /tmp/d.txt 2>&1
	say "drafts of 4 in the batch, QMM_STAGE_X=$a: rc $? $(sed -n '/the oracle guessing/,$p' /tmp/d.txt | awk '$1 ~ /^[148]$/ {printf "%s: %s ", $1, $2}')"
done
(cd engine && BAGEL_REQUIRE_GPU=1 timeout 150 ../.devbin/engine.test -test.count=1 -test.run GPU) > /tmp/e.txt 2>&1
say "engine GPU tests: rc $? $(tail -1 /tmp/e.txt)"
grep -- "--- FAIL" /tmp/e.txt | head -5 | tee -a $LOG
wait; say "ptx: $(tail -1 /tmp/ptx.txt)"
(cd cuda && BAGEL_REQUIRE_GPU=1 timeout 150 compute-sanitizer --tool racecheck --kernel-name kns=_mma ../.devbin/cuda.test -test.count=1 -test.run 'TestKernels$') > /tmp/race.txt 2>&1
say "racecheck (kernels named _mma): rc $? $(grep -m1 'RACECHECK SUMMARY' /tmp/race.txt) $(grep -m2 -i 'error\|hazard' /tmp/race.txt | head -2)"
