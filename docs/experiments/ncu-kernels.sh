#!/bin/sh
# ncu-kernels.sh: the big kernels of a lone step and of a batched step of 4
# replies under ncu (graphs off; caches flushed before each launch, ncu's
# default): time, DRAM bytes and throughput, achieved occupancy, registers,
# waves. tools/ncu_metrics.py groups the launches by kernel and grid.
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
. tools/synth_model.sh
say synth
MET=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__waves_per_multiprocessor
K='regex:^(moe_up|moe_down|qmatmul_mma_bf16|qmatmul_mma_multi_conv|qmatmul_multi_bf16|qmatmul_bf16|qmatmul_multi_conv_bf16)'
BAGEL_TILED_GEMV=1 BAGEL_NO_CUDA_GRAPH=1 timeout 330 ncu --csv --clock-control none --metrics $MET -k "$K" --launch-count 30000 \
	.devbin/bagel bench -m $M --backend cuda --runs 1 --tokens 16 --prefill= --long= --switches=false --drafts= \
	--lookup=false --projections 0 --stall-prompt 0 --streams 4 > $OUT/tiled4.csv 2>> $LOG
say "tiled, 4 replies: rc $? $(grep -c gpu__time_duration $OUT/tiled4.csv) launches"
BAGEL_TILED_GEMV=0 BAGEL_NO_CUDA_GRAPH=1 timeout 120 ncu --csv --clock-control none --metrics $MET -k "$K" --launch-skip 400 --launch-count 800 \
	.devbin/bagel generate -m $M --backend cuda --raw -p "Tell me about bagels." --max-tokens 12 > $OUT/plain.csv 2>> $LOG
say "plain, alone: rc $? $(grep -c gpu__time_duration $OUT/plain.csv) launches"
gzip -9 $OUT/*.csv
