#!/bin/sh
# persistent-handoff.sh: the cost model for a layer as one persistent launch
# (docs/batching.md "Next" 3). One binary built on the branch
# persistent-handoff; BAGEL_EXP_HANDOFF="K,G,N,E" puts at each decode step's
# start one exp_handoffs launch of K grid barriers over G threadgroups (each
# barrier followed by every threadgroup reading N bf16 one of them wrote) and
# E empty launches. The plain lone reply's GPU ms a step, twice each.
# .devbin/bins.tar.xz holds bagel:
#   L="env CGO_ENABLED=0 GOOS=linux GOARCH=amd64"; F='-trimpath -ldflags=-s\ -w'
#   eval $L go build $F -o .devbin/bagel . && (cd .devbin && tar cf bins.tar bagel && xz -T2 -6 bins.tar && rm -f bagel)
# then on the device (carry .devbin): sh docs/experiments/persistent-handoff.sh
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
# BAGEL_EXP_HANDOFF="K,G,N,E,GE,P,MODE" (ops/handoff.go). First call
# (K,G,N,E only): off 0,0,0,80 0,132,0,0 80,132,0,0 400,132,0,0 80,132,2048,0
# 400,132,2048,0 80,66,0,0 80,264,0,0. Second call below: the empty
# launches over 1 or 132 threadgroups at the step's start or inside the
# layers, the barrier of each mode, with and without a 4 KB vector read.
S="${SETTINGS:-off 0,0,0,80,1,0,0 0,0,0,80,132,0,0 0,0,0,1,1,1,0 0,0,0,1,132,1,0 400,132,0,0,0,0,0 400,132,0,0,0,0,1 400,132,2048,0,0,0,0 400,132,2048,0,0,0,1}"
for r in 1 2; do
	for m in $S; do
		BAGEL_EXP_HANDOFF=$m timeout 75 .devbin/bagel bench $C --tokens 200 > /tmp/b.txt 2>&1
		say "lone $m (round $r, rc $?): $(grep -m1 '^decode greedy ' /tmp/b.txt | awk '{print $5, "tok/s,", $10, "GPU ms,", $11, "dispatches"}')"
	done
done
cp /tmp/b.txt $OUT/last-bench.txt
