"""Group ncu's per-launch metrics (--csv, any --metrics) by kernel, grid and
threadgroup, and print each group's launches and median of every metric.

Usage: python3 tools/ncu_metrics.py ncu.csv[.gz] [kernel-substring ...]
With substrings, only the kernels whose names contain one of them.
"""
import statistics
import sys
from collections import defaultdict

from ncu_forwards import rows  # tools/ is the script's directory, first on sys.path


def main():
    path, wanted = sys.argv[1], sys.argv[2:]
    launches = defaultdict(dict)  # launch ID -> {key, metrics}
    for r in rows(path):
        name = r["Kernel Name"].split("(")[0]
        if wanted and not any(w in name for w in wanted):
            continue
        l = launches[r["ID"]]
        l["key"] = (name, r["Grid Size"], r["Block Size"])
        try:
            l[r["Metric Name"] + " (" + r["Metric Unit"] + ")"] = float(r["Metric Value"].replace(",", ""))
        except ValueError:
            pass
    groups = defaultdict(list)
    for l in launches.values():
        groups[l["key"]].append(l)
    metrics = sorted({m for l in launches.values() for m in l if m != "key"})
    print("kernel\tgrid\tgroup\tlaunches\t" + "\t".join(metrics))
    for key in sorted(groups):
        ls = groups[key]
        meds = [statistics.median([l[m] for l in ls if m in l]) if any(m in l for l in ls) else float("nan") for m in metrics]
        print("\t".join([*key, str(len(ls))] + [f"{v:.4g}" for v in meds]))


if __name__ == "__main__":
    main()
