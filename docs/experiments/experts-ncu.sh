#!/bin/sh
# experts-ncu.sh: why the experts' plain kernels move a batch's bytes at
# 1.2 TB/s (docs/batching.md, "What the targets ask"): ncu's throughput,
# occupancy and stall metrics (tools/ncu_stalls.sh's set) of moe_up_bf16 and
# moe_down_bf16 in batched steps of 8 rows (a load for several replies) and
# in a plain lone step. Binary: .devbin/chains.tar.xz's bagel (b8afbf8 with
# chains.patch of 3595431, inert without BAGEL_EXP_CHAINS); any build of main
# serves: CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath
# -ldflags="-s -w" -o bagel . && tar c bagel | xz -9 > .devbin/chains.tar.xz
# The batch's window: the forty-third session's first ncu of the same bench
# (all kernels) found its batched steps from launch 50,188 on.
# On the device (carry .devbin): OUT=$OUT sh docs/experiments/experts-ncu.sh
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc chains.tar.xz | tar x && chmod +x bagel) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
mkdir -p /tmp/tok
gzip -dc testdata/tokenizer/qwen3/tokenizer.json.gz > /tmp/tok/tokenizer.json
gzip -dc testdata/tokenizer/qwen3/tokenizer_config.json.gz > /tmp/tok/tokenizer_config.json
M=/tmp/m-new
.devbin/bagel synth --like qwen3.5-35b-a3b --tokenizer /tmp/tok --out $M > /dev/null 2>&1
say "model ready"
METRICS=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size,launch__block_size,launch__occupancy_limit_registers,launch__occupancy_limit_warps,launch__occupancy_limit_shared_mem,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio
C="-m $M --backend cuda --runs 1 --switches=false --lookup=false --projections 0 --stall-prompt 0 --long= --prefill= --drafts= --tokens 16"
BAGEL_TILED_GEMV=1 BAGEL_NO_CUDA_GRAPH=1 timeout 200 ncu --csv --clock-control none -k regex:'moe_(up|down)_bf16' \
	--launch-skip-before-match 50700 --launch-count 40 --metrics "$METRICS" .devbin/bagel bench $C --streams 8 > $OUT/ncu-batch.csv 2> /dev/null
say "batch (rc $?)"
python3 tools/ncu_stalls.py $OUT/ncu-batch.csv | sort | uniq -c -w 60 | head -6 | cut -c1-400 | tee -a $LOG
python3 tools/ncu_metrics.py $OUT/ncu-batch.csv | tee -a $LOG
BAGEL_NO_CUDA_GRAPH=1 timeout 120 ncu --csv --clock-control none -k regex:'moe_(up|down)_bf16' \
	--launch-skip 400 --launch-count 10 --metrics "$METRICS" .devbin/bagel bench $C > $OUT/ncu-lone.csv 2> /dev/null
say "lone (rc $?)"
python3 tools/ncu_stalls.py $OUT/ncu-lone.csv | head -4 | cut -c1-400 | tee -a $LOG
python3 tools/ncu_metrics.py $OUT/ncu-lone.csv | tee -a $LOG
gzip -9 $OUT/ncu-batch.csv $OUT/ncu-lone.csv
