#!/bin/sh
# ncu_source: where a decode step's kernels wait, instruction by instruction:
# ncu's warp-state sampling by SASS instruction (its source page) for one
# launch of each kernel in KERNELS, each line the instruction's share of the
# samples and its largest stall reasons (tools/ncu_source.py). A kernel
# whose name holds "mma" runs with the tiled GEMVs (BAGEL_TILED_GEMV=1), the
# others with the plain ones. About 15 s of device time a kernel, after
# `make gpu-build`; uses the synthetic checkpoint of tools/synth_model.sh.
# A stall on a load's first use is where the chain of waits shows, not
# always where a change helps: reading x a chunk ahead, the top line of
# moe_up_mma_bf16, lost (docs/history/pruned-paths.md, `x-ahead`).
#
# Usage (from the repository root, on the GPU machine):
#   KERNELS='moe_up_mma_bf16 moe_up_bf16' SKIP=200 sh tools/ncu_source.sh
set -u
KERNELS=${KERNELS:-moe_up_mma_bf16 moe_down_mma_bf16 qmatmul_mma_bf16 moe_up_bf16 moe_down_bf16}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
. tools/synth_model.sh  # M, the synthetic checkpoint
for k in $KERNELS; do
	case $k in *mma*) T=1 ;; *) T=0 ;; esac
	# SKIP launches of the kernel in: past the prompt's forward, a step's.
	BAGEL_TILED_GEMV=$T BAGEL_NO_CUDA_GRAPH=1 timeout 120 ncu --clock-control none -k regex:"^$k\$" \
		--launch-skip ${SKIP:-200} --launch-count 1 --section SourceCounters --section WarpStateStats \
		--section LaunchStats -f -o /tmp/$k .devbin/bagel generate -m $M --backend cuda --raw \
		-p "Tell me about bagels." --max-tokens 12 > /tmp/$k.log 2>&1
	echo "== $k (tiled GEMVs $T): rc $?"
	ncu --import /tmp/$k.ncu-rep --page source --csv --print-source sass > /tmp/$k-src.csv 2> /dev/null
	python3 tools/ncu_source.py /tmp/$k-src.csv ${TOP:-24}
	ncu --import /tmp/$k.ncu-rep --page details --csv 2> /dev/null |
		grep -E '"(Duration|Registers Per Thread|Grid Size|Block Size|Warp Cycles Per Issued Instruction)"' |
		awk -F'","' '{print "   " $(NF-2) ": " $NF}' | tr -d '"'
done
tar czf "$OUT/source.tgz" /tmp/*-src.csv 2> /dev/null  # every instruction's counts, for a closer look
