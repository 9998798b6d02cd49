#!/bin/sh
# head-walk.sh: the head's threadgroups each walking QMM_HEAD_WALK tiles
# (qmm_walk_f32: the next tile's first codes read in the last chunk of the
# one before; each tile's sums main's) instead of one tile each in some 17
# waves. One binary built with head-walk.patch, BAGEL_KERNEL_TUNING, two
# rounds; then a greedy reply under 20 against main's (the same bits: the
# same text), and the head's kernel cases and token invariance under 20
# (the 1,000-row case's last threadgroup walks 3 tiles). About 5 minutes.
# .devbin/bins.tar.xz holds bagel and cuda.test built with the patch:
#   L="env CGO_ENABLED=0 GOOS=linux GOARCH=amd64"; F='-trimpath -ldflags=-s\ -w'
#   eval $L go build $F -o .devbin/bagel . && eval $L go test -c $F -o .devbin/cuda.test ./cuda
#   (cd .devbin && tar cf bins.tar bagel cuda.test && xz -T2 -6 bins.tar && rm -f bagel cuda.test)
# then on the device (carry .devbin): sh docs/experiments/head-walk.sh
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel cuda.test) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
. tools/synth_model.sh
C="-m $M --backend cuda --runs 1 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 --stall-prompt 0"
for r in 1 2; do
	S="QMM_HEAD_WALK=0 QMM_HEAD_WALK=4 QMM_HEAD_WALK=20"; [ $r = 2 ] && S="QMM_HEAD_WALK=20 QMM_HEAD_WALK=0"
	for a in $S; do
		BAGEL_TILED_GEMV=1 BAGEL_KERNEL_TUNING=$a timeout 100 .devbin/bagel bench $C --tokens 200 --streams 1,2,4,8 > /tmp/b.txt 2>&1
		say "'$a' (round $r, rc $?): all decoding at 1/2/4/8: $(grep -A5 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[1248]$/ {printf "%s (%s ms) ", $(NF-1), $7}')"
	done
done
for a in 0 20; do
	BAGEL_TILED_GEMV=1 BAGEL_KERNEL_TUNING=QMM_HEAD_WALK=$a timeout 60 .devbin/bagel generate -m $M --backend cuda --temp 0 --max-tokens 48 -p "Tell me about the sea." > /tmp/g$a.txt 2>/dev/null
	say "walk $a: reply $(head -c 300 /tmp/g$a.txt | md5sum | cut -c1-8) $(cmp -s /tmp/g0.txt /tmp/g$a.txt && echo same-as-main || echo DIFFERS)"
done
for a in 20; do
	(cd cuda && BAGEL_KERNEL_TUNING=QMM_HEAD_WALK=$a BAGEL_KERNEL_CASES=qmatmul_mma_bf16_f32 BAGEL_REQUIRE_GPU=1 timeout 60 ../.devbin/cuda.test -test.count=1 -test.v -test.run 'TestKernels$|TestTiledGEMVTokenInvariance') > /tmp/k$a.txt 2>&1
	say "walk $a: kernel cases and invariance rc $? $(grep -c '| pass |' /tmp/k$a.txt) pass; $(grep -c -- '--- PASS' /tmp/k$a.txt) tests pass"
	grep -E "FAIL|panic|differ" /tmp/k$a.txt | head -5 | tee -a $LOG
done
