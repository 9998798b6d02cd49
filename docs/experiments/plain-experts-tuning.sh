#!/bin/sh
# plain-experts-tuning.sh: the register caps of the experts' plain kernels
# (moe_up_bf16's MOE_UP_MIN_GROUPS, moe_down_bf16's MOE_DOWN_MAX_REGS), tuned
# in the twelfth to sixteenth sessions for a lone step's one wave, now that a
# load for several replies runs its batch's experts on them (8d0ba2b): a
# batched step of 8 rows launches 9216 and 2048 threadgroups (ncu: 49.9 and
# 35.5 µs a layer, 3.4 of its 6.4 ms). BAGEL_KERNEL_TUNING recompiles the
# kernels (NVRTC), no rebuild. Then ncu over a lone plain step, to set its
# kernels beside the batched step's (docs/batching.md, the bound).
# Binaries: .devbin/bins.tar.xz, a79c3c6 with verify-split.patch (`bagel`).
# On the device (carry .devbin): OUT=$OUT sh docs/experiments/plain-experts-tuning.sh
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc bins.tar.xz | tar x bagel && chmod +x bagel) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
mkdir -p /tmp/tok
gzip -dc testdata/tokenizer/qwen3/tokenizer.json.gz > /tmp/tok/tokenizer.json
gzip -dc testdata/tokenizer/qwen3/tokenizer_config.json.gz > /tmp/tok/tokenizer_config.json
M=/tmp/m-new
.devbin/bagel synth --like qwen3.5-35b-a3b --tokenizer /tmp/tok --out $M > /dev/null 2>&1
say "model ready"
C="-m $M --backend cuda --runs 1 --switches=false --lookup=false --projections 0 --stall-prompt 0 --long= --prefill= --drafts="
for t in "" MOE_UP_MIN_GROUPS=8 MOE_UP_MIN_GROUPS=16 MOE_UP_MIN_GROUPS=0 MOE_DOWN_MAX_REGS=64 MOE_DOWN_MAX_REGS=48 \
	MOE_UP_MIN_GROUPS=16,MOE_DOWN_MAX_REGS=48 ""; do
	BAGEL_KERNEL_TUNING=$t BAGEL_TILED_GEMV=1 timeout 150 .devbin/bagel bench $C --tokens 128 --streams 1,4,8 > /tmp/b.txt 2>&1
	say "[${t:-defaults}] (rc $?): $(grep -E '^ +(1|4|8) ' /tmp/b.txt | awk '{printf "%s: %s all decoding, %s ms a step; ", $1, $9, $7}')"
done
# The plain lone reply, the default load, under ncu: its kernels a step.
BAGEL_NO_CUDA_GRAPH=1 timeout 120 ncu --csv --clock-control none --metrics gpu__time_duration.sum \
	--launch-skip 6000 --launch-count 2000 .devbin/bagel bench $C --tokens 64 > $OUT/ncu-lone.csv 2> /dev/null
say "ncu-lone (rc $?)"
python3 tools/ncu_forwards.py $OUT/ncu-lone.csv 30 > $OUT/ncu-lone.txt
grep '^forward' $OUT/ncu-lone.txt | cut -c1-90 | head -8 | tee -a $LOG
awk '/^forward/ {n++} n==3' $OUT/ncu-lone.txt | tee -a $LOG
gzip -9 $OUT/ncu-lone.csv
