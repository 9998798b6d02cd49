#!/bin/sh
# weights-ahead.sh: a decode step's dense weights asked into L2 a few kernels
# before the kernels that read them (l2_prefetch: cp.async.bulk.prefetch.L2,
# kernels/prefetch.metal; qwen/ahead.go says what and when). One binary,
# BAGEL_EXP_AHEAD=0|1|2 (off; a layer's out-projection and MLP weights at its
# mixer's start and the next layer's in-projections at its MLP's start; all
# of the next layer's at the mixer's start), BAGEL_EXP_AHEAD_SIDE=1 for the
# prefetches hanging off the graph's chain instead of being links of it.
# Two rounds of the default load's lone reply, then the tiled load's 1/4/8.
# .devbin/bins.tar.xz holds bagel built on the branch weights-ahead:
#   L="env CGO_ENABLED=0 GOOS=linux GOARCH=amd64"; F='-trimpath -ldflags=-s\ -w'
#   eval $L go build $F -o .devbin/bagel . && (cd .devbin && tar cf bins.tar bagel && xz -T2 -6 bins.tar && rm -f bagel)
# then on the device (carry .devbin): sh docs/experiments/weights-ahead.sh
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
# Second call (e594baf): the prefetch over more threadgroups, a line at a
# time, or asking for nothing (the side nodes' own cost). Third call: mode 3,
# the add_rms_norm launch before the kernels asking, with G threadgroups
# more. Each setting is a list of environment assignments joined by ';'.
E=BAGEL_EXP_AHEAD
# Fourth call: the side nodes hung by programmatic edges (SIDE=2).
S="$E=0 $E=1;BAGEL_EXP_AHEAD_SIDE=2;BAGEL_EXP_AHEAD_GROUPS=64 $E=1;BAGEL_EXP_AHEAD_SIDE=2;BAGEL_EXP_AHEAD_GROUPS=64;BAGEL_EXP_AHEAD_EMPTY=1 $E=1;BAGEL_EXP_AHEAD_SIDE=1;BAGEL_EXP_AHEAD_GROUPS=64"
for r in 1 2; do
	for m in $S; do
		env $(echo "$m" | tr ';' ' ') timeout 90 .devbin/bagel bench $C --tokens 200 > /tmp/b.txt 2>&1
		say "lone $m (round $r, rc $?): $(grep -m1 '^decode greedy ' /tmp/b.txt | awk '{print $5, "tok/s,", $10, "GPU ms,", $11, "dispatches"}')"
	done
done
for m in $E=0 "$E=1;BAGEL_EXP_AHEAD_SIDE=2;BAGEL_EXP_AHEAD_GROUPS=64"; do
	env BAGEL_TILED_GEMV=1 $(echo "$m" | tr ';' ' ') timeout 100 .devbin/bagel bench $C --tokens 200 --streams 1,4,8 > /tmp/b.txt 2>&1
	say "tiled $m (rc $?): all decoding at 1/4/8: $(grep -A5 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[1248]$/ {printf "%s (%s ms) ", $(NF-1), $7}')"
done
