"""Sum ncu's per-kernel GPU time (gpu__time_duration.sum, --csv) by kernel name.

Usage: python3 tools/ncu_summary.py ncu.csv
Prints one line per kernel: launches, total µs, mean µs, share of the total.
"""
import csv
import sys
from collections import defaultdict


def main(path):
    total = defaultdict(float)
    count = defaultdict(int)
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu prints its own log lines first
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "ns")
        scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}.get(unit, 1e-3)
        name = row["Kernel Name"].split("(")[0]
        total[name] += value * scale
        count[name] += 1
    all_us = sum(total.values())
    print(f"ncu: {sum(count.values())} launches, {all_us:.0f} µs of GPU time")
    for name in sorted(total, key=total.get, reverse=True):
        print(f"{name:28s} {count[name]:6d} {total[name]:10.1f} µs {total[name] / count[name]:8.2f} µs/launch {100 * total[name] / all_us:5.1f}%")


if __name__ == "__main__":
    main(sys.argv[1])
