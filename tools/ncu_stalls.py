"""Print one line per profiled kernel launch of an ncu --csv file made by
tools/ncu_stalls.sh: time, throughputs, occupancy, registers, and the largest
warp stall reasons (cycles per issued instruction, from
smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio).

Usage: python3 tools/ncu_stalls.py stalls.csv
"""
import csv
import sys
from collections import OrderedDict

SHORT = {
    "gpu__time_duration.sum": "ns",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram%",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm%",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "warps%",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": "tensor%",
    "launch__registers_per_thread": "regs",
    "launch__grid_size": "grid",
    "launch__block_size": "group",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum": "bank-conflicts",
    "smsp__inst_executed.sum": "inst",
}
STALL = "smsp__average_warps_issue_stalled_"


def number(s):
    try:
        return float(s.replace(",", ""))
    except (ValueError, AttributeError):  # a short row gives None
        return 0.0


def main(path):
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    launches = OrderedDict()
    for row in csv.DictReader(lines):
        key = (row["ID"], row["Kernel Name"].split("(")[0])
        launches.setdefault(key, {})[row["Metric Name"]] = number(row["Metric Value"])
    for (_, name), m in launches.items():
        parts = [f"{name[:26]:26s}"]
        parts += [f"{short}={m[full]:,.0f}" if short in ("ns", "grid", "group", "regs", "inst", "bank-conflicts")
                  else f"{short}={m[full]:.1f}" for full, short in SHORT.items() if full in m]
        stalls = sorted(((v, k[len(STALL):].replace("_per_issue_active.ratio", "")) for k, v in m.items()
                         if k.startswith(STALL) and "not_issued" not in k), reverse=True)
        parts.append("stalls: " + " ".join(f"{k}={v:.1f}" for v, k in stalls[:5] if v >= 0.05))
        print(" ".join(parts))


if __name__ == "__main__":
    main(sys.argv[1])
