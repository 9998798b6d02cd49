#!/bin/sh
# ncu_regs: registers, occupancy and memory throughput of chosen kernels of a
# decode step, for one or more builds of bagel (say a build of the previous
# commit next to this one), after `make gpu-build` (the binaries in .devbin/).
# Answers "did this change cost registers, and so threadgroups per SM?" in one
# short device call. Assumes the synthetic checkpoint that tools/gpubench.sh
# writes, and writes it if missing.
#
# Usage (from the repository root, on the GPU machine):
#   KERNELS='moe_up|qmatmul_multi' BINS='bagel-old bagel' sh tools/ncu_regs.sh
set -u
KERNELS=${KERNELS:-moe_up|moe_down|qmatmul}
BINS=${BINS:-bagel}
OUT=${OUT:-/tmp/out}
. tools/synth_model.sh  # M, the synthetic checkpoint
for b in $BINS; do
	BAGEL_NO_CUDA_GRAPH=1 timeout 200 ncu --csv --clock-control none --cache-control none -k regex:"$KERNELS" \
		--launch-skip ${NCU_SKIP:-400} --launch-count ${NCU_COUNT:-12} \
		--metrics gpu__time_duration.sum,launch__registers_per_thread,launch__occupancy_limit_registers,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,launch__grid_size,launch__block_size \
		.devbin/$b generate -m $M --backend cuda --raw -p "Tell me about bagels." --max-tokens 8 > "$OUT/$b.csv" 2> /dev/null
	echo "== $b"
	python3 - "$OUT/$b.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows:
    sys.exit("no kernels profiled")
h = rows[0]
ki, mi, vi, ii = h.index("Kernel Name"), h.index("Metric Name"), h.index("Metric Value"), h.index("ID")
launches = {}
for r in rows[1:]:
    launches.setdefault((r[ii], r[ki].split("(")[0]), {})[r[mi]] = r[vi]
short = {"gpu__time_duration.sum": "ns", "launch__registers_per_thread": "regs",
         "launch__occupancy_limit_registers": "tg/sm(regs)", "sm__warps_active.avg.pct_of_peak_sustained_active": "warps%",
         "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram%", "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum": "spill-bytes",
         "launch__grid_size": "grid", "launch__block_size": "group"}
for (_, k), m in launches.items():
    print(f"{k[:24]:24}", " ".join(f"{short.get(n, n)}={v}" for n, v in sorted(m.items())))
PY
done
