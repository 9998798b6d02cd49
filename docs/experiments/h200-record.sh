#!/bin/sh
# h200-record.sh: the batch's record (main's kernels; the plain-experts
# branch's binary with BAGEL_EXP_PLAIN_EXPERTS unset is main's).
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT; LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel) || exit 1
say "$(nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader)"
. tools/synth_model.sh
C="-m $M --backend cuda --runs 1 --tokens 128 --prefill= --long= --switches=false --drafts= --lookup=false --projections 0"
BAGEL_TILED_GEMV=1 timeout 240 .devbin/bagel bench $C --streams 1,2,4,8 --stall-prompt 8192 --stream-drafts 4 --stream-sampled > /tmp/s.txt 2>&1
say "streams rc $?"; sed -n '/replies decoded together/,$p' /tmp/s.txt >> $LOG
timeout 60 .devbin/bagel bench $C --tokens 200 > /tmp/p.txt 2>&1
say "plain GEMVs alone: $(grep -m1 '^decode greedy ' /tmp/p.txt | awk -F '  +' '{print $4, "tok/s", $9, "GPU ms"}')"
BAGEL_TILED_GEMV=1 timeout 200 .devbin/bagel bench $C --streams 8 --stall-prompt 30720 > /tmp/l.txt 2>&1
say "30K stall rc $?"; sed -n '/replies decoded together/,$p' /tmp/l.txt >> $LOG
