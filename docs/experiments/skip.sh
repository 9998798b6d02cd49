#!/bin/sh
# skip.sh: what each kernel of a batched step costs on the step's critical
# path, measured by not launching it (BAGEL_SKIP_KERNELS, skip.patch: a
# timing knob; the skipped kernel's outputs keep their last values, so the
# replies' text is garbage and their timing is not). One binary in .devbin.
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
. tools/synth_model.sh
C="-m $M --backend cuda --runs 1 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 --stall-prompt 0"
BAGEL_TILED_GEMV=1 BAGEL_KERNEL_LIST=1 timeout 120 .devbin/bagel bench $C --tokens 60 --streams 4 > /tmp/l.txt 2>&1
grep "^graph of" /tmp/l.txt | sort | uniq -c | sort -rn | head -30 > $OUT/graphs.txt
names=$(grep "^graph of" /tmp/l.txt | tr ' ' '\n' | grep '×' | sed 's/×.*//' | sort -u)
say "kernels: $(echo $names | wc -w)"
run() { # $1 label, rest env
	l=$1; shift
	env BAGEL_TILED_GEMV=1 "$@" timeout 100 .devbin/bagel bench $C --tokens 150 --streams 1,4,8 > /tmp/b.txt 2>&1
	say "$l (rc $?): all decoding at 1/4/8: $(grep -A5 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[148]$/ {printf "%s (%s ms) ", $(NF-1), $7}')"
}
run main X=1
for k in add_rms_norm_bf16 router_topk_bf16 add_rms_norm_bf16,router_topk_bf16; do run "skip $k" BAGEL_SKIP_KERNELS=$k; done
run "one graph a step" BAGEL_GRAPH_SEGMENT=1024 BAGEL_GRAPH_FIRST_SEGMENT=1024
run main X=1
for k in $names; do
	case $k in add_rms_norm_bf16|router_topk_bf16) continue;; esac
	run "skip $k" BAGEL_SKIP_KERNELS=$k
	[ $(( $(date +%s) - T0 )) -gt 540 ] && break
done
run main X=1
