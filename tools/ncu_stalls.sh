#!/bin/sh
# ncu_stalls: why chosen kernels take the time they do — duration, DRAM and SM
# throughput, tensor-pipe use, occupancy and the warp stall reasons (cycles a
# warp spends stalled on each, per issued instruction) — for a decode step
# (KERNELS) and for a prompt of PREFILL_TOKENS (PREFILL_KERNELS), after
# `make gpu-build`. About a minute of device time. Uses the synthetic
# checkpoint of tools/gpubench.sh, writing it if missing.
#
# Usage (from the repository root, on the GPU machine):
#   KERNELS='qmatmul_multi|moe_up' PREFILL_KERNELS='qgemm_bf16' sh tools/ncu_stalls.sh
set -u
KERNELS=${KERNELS:-qmatmul|moe_up|moe_down|add_rms|router}
PREFILL_KERNELS=${PREFILL_KERNELS:-qgemm|gdn_chunk|attention_bf16}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
. tools/synth_model.sh  # M, the synthetic checkpoint
METRICS=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size,launch__block_size,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__inst_executed.sum,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio
if [ -n "$KERNELS" ]; then
	BAGEL_NO_CUDA_GRAPH=1 timeout 200 ncu --csv --clock-control none -k regex:"$KERNELS" \
		--launch-skip ${NCU_SKIP:-400} --launch-count ${NCU_COUNT:-10} --metrics "$METRICS" \
		.devbin/bagel generate -m $M --backend cuda --raw -p "Tell me about bagels." --max-tokens 8 > "$OUT/stalls-decode.csv" 2> /dev/null
	echo "== decode"
	python3 tools/ncu_stalls.py "$OUT/stalls-decode.csv"
fi
if [ -n "$PREFILL_KERNELS" ]; then
	P=$(python3 -c "import random; random.seed(1); w='the of bagel dough water salt yeast oven boil bake crust seeds sesame poppy onion garlic rye wheat flour malt honey'.split(); print(' '.join(random.choice(w) for _ in range(${PREFILL_TOKENS:-2048} - 8)))")
	BAGEL_NO_CUDA_GRAPH=1 timeout 300 ncu --csv --clock-control none -k regex:"$PREFILL_KERNELS" \
		--launch-skip ${NCU_PREFILL_SKIP:-20} --launch-count ${NCU_PREFILL_COUNT:-8} --metrics "$METRICS" \
		.devbin/bagel generate -m $M --backend cuda --raw -p "$P" --max-tokens 1 ${PREFILL_ARGS:-} > "$OUT/stalls-prefill.csv" 2> /dev/null
	echo "== prefill ${PREFILL_TOKENS:-2048} tokens"
	python3 tools/ncu_stalls.py "$OUT/stalls-prefill.csv"
fi
