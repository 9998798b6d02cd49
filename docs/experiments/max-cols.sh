#!/bin/sh
# max-cols.sh: what the tiled loop's second eight of columns costs a step of
# up to 8 rows (timing only): QMM_MAX_COLS=8 compiles qmm_chunk for one eight
# (a prompt's tokens past 8 of a tile are then left out, so its replies'
# tokens differ from main's). One binary (main e43d4aa with combo.patch of
# 8ec0137, x-l1 off), two rounds; .devbin/bins.tar.xz holds bagel.
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
. tools/synth_model.sh
C="-m $M --backend cuda --runs 1 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 --stall-prompt 0"
for r in 1 2; do
	for a in QMM_X_L1=0,QMM_W_CG=0 QMM_X_L1=0,QMM_W_CG=0,QMM_MAX_COLS=8; do
		BAGEL_TILED_GEMV=1 BAGEL_KERNEL_TUNING=$a timeout 100 .devbin/bagel bench $C --tokens 200 --streams 1,2,4,8 > /tmp/b.txt 2>&1
		say "'$a' (round $r, rc $?): all decoding at 1/2/4/8: $(grep -A5 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[1248]$/ {printf "%s (%s ms) ", $(NF-1), $7}')"
	done
done
