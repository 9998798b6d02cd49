#!/bin/sh
# host-sampling.sh: a sampled reply whose pick runs on the host, main before
# the thirty-sixth session (bagel-old, 3b6e1e1) against after (bagel): a
# top-k past the device's (the sorted window against one sort of keys) and
# a top-p over the synthetic model's flat logits (the cut past the device's
# candidates: the host orders the whole row); greedy as the control.
# .devbin/bins.tar.xz holds both builds; carry .devbin. About 3 minutes.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel bagel-old) || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/log.txt
. tools/synth_model.sh
[ "${BENCH:-0}" = 1 ] && S="" || S='"--temp 0" "--temp 1 --top-k 1000000" "--temp 1 --top-p 0.9"'
eval "set -- $S"
for s in "$@"; do
	for b in bagel-old bagel bagel-old bagel; do
		r=$(timeout 120 .devbin/$b generate -m $M --backend cuda --max-tokens 64 $s -p "Tell me about the sea." 2>&1 | grep -o '[0-9.]* tokens, [0-9.]* tok/s decode')
		echo "$b $s: $r" | tee -a $OUT/log.txt
	done
done
# The control at length (second call): bench's greedy and sampled decode,
# both builds in turn, twice.
[ "${BENCH:-0}" = 1 ] || exit 0
for b in bagel-old bagel bagel-old bagel; do
	timeout 150 .devbin/$b bench -m $M --backend cuda --runs 3 --tokens 200 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 > /tmp/b.txt 2>&1
	echo "$b: $(grep '^decode' /tmp/b.txt | awk '{printf "%s | ", $0}' | tr -s ' ' | cut -c1-400)" | tee -a $OUT/log.txt
done
