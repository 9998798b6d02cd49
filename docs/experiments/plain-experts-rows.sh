#!/bin/sh
# plain-experts-rows.sh: a load for several replies with its experts on the
# plain kernels (BAGEL_EXP_PLAIN_EXPERTS=both) and QMV_ROWS 4 (main) or 8
# (half the threadgroups; a row's sums unchanged), at 1, 4 and 8 replies.
# .devbin/bins.tar.xz holds bagel built from main 84168d5 with the thirty-third
# session's docs/experiments/plain-experts.patch (at b821db4) applied:
#   git show b821db4:docs/experiments/plain-experts.patch | git apply
#   L="env CGO_ENABLED=0 GOOS=linux GOARCH=amd64"; F='-trimpath -ldflags=-s\ -w'
#   eval $L go build $F -o .devbin/bagel . && (cd .devbin && tar cf bins.tar bagel && xz -T2 -6 bins.tar && rm -f bagel)
# then on the device (carry .devbin): sh docs/experiments/plain-experts-rows.sh
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
. tools/synth_model.sh
say "model ready"
C="-m $M --backend cuda --runs 1 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 --stall-prompt 0"
for m in "" "BAGEL_KERNEL_TUNING=QMV_ROWS=8"; do
	env $m timeout 90 .devbin/bagel bench $C --tokens 200 > /tmp/b.txt 2>&1
	say "plain lone [$m] (rc $?): $(grep -m1 '^decode greedy ' /tmp/b.txt | awk '{print $5, "tok/s,", $10, "GPU ms"}')"
done
S="BAGEL_TILED_GEMV=1 BAGEL_TILED_GEMV=1;BAGEL_EXP_PLAIN_EXPERTS=both BAGEL_TILED_GEMV=1;BAGEL_EXP_PLAIN_EXPERTS=both;BAGEL_KERNEL_TUNING=QMV_ROWS=8 BAGEL_TILED_GEMV=1;BAGEL_KERNEL_TUNING=QMV_ROWS=8"
for r in 1 2; do
	for m in $S; do
		env $(echo "$m" | tr ';' ' ') timeout 100 .devbin/bagel bench $C --tokens 128 --streams 1,4,8 > /tmp/b.txt 2>&1
		say "[$m] round $r (rc $?): all decoding at 1/4/8: $(grep -A5 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[1248]$/ {printf "%s (%s ms) ", $(NF-1), $7}')"
	done
done
cp /tmp/b.txt $OUT/last-bench.txt
