"""Split ncu's per-launch GPU times (gpu__time_duration.sum, --csv) into
forwards and sum each forward's kernels by name and grid.

A forward ends at its logits GEMV (qmatmul_bf16_f32, or qmatmul_mma_bf16_f32
with the tiled-gemv switch). The plain GEMV's grid says how many tokens it ran
(rows/4 threadgroups a token at 35B-A3B: 62080 for one token); the tiled one's
does not, so each forward is labelled by its tokens, add_rms_norm_bf16's grid
(a step of one token, a verify of more; without that kernel, by its GDN
in-projection: a plain step runs qmatmul_multi_conv_bf16, a verify does not);
a batched step of several replies runs the *_batch kernels, a prompt the
GEMMs.

Usage: python3 tools/ncu_forwards.py ncu.csv[.gz] [top]
Prints, per forward: its launches, its total µs and the logits' grid, then its
`top` (default 12) heaviest (kernel, grid, threadgroup) rows.
"""
import csv
import gzip
import sys
from collections import defaultdict

LOGITS = ("qmatmul_bf16_f32", "qmatmul_mma_bf16_f32")


def rows(path):
    """ncu's --csv rows (dicts by its header) of path, gzipped or not."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu prints its own log lines first
    return list(csv.DictReader(lines))


def launches(path):
    """(kernel, grid, group, µs) per launch, in launch order."""
    out = []
    for row in rows(path):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
        out.append((row["Kernel Name"].split("(")[0], row["Grid Size"], row["Block Size"],
                    value * scale.get(row.get("Metric Unit", "ns"), 1e-3)))
    return out


def main(path, top):
    seq = launches(path)
    start = 0
    for i, (name, grid, _, _) in enumerate(seq):
        if name not in LOGITS:
            continue
        forward = seq[start:i + 1]
        total = defaultdict(float)
        count = defaultdict(int)
        for n, g, b, us in forward:
            total[(n, g, b)] += us
            count[(n, g, b)] += 1
        names = {n for n, _, _, _ in forward}
        # add_rms_norm_bf16's grid is the forward's rows (tokens), whichever
        # GEMVs ran (the tiled step's and verify's share their kernels).
        rows = [int(g.strip("()").split(",")[0]) for n, g, _, _ in forward if n == "add_rms_norm_bf16"]
        if any(n.endswith("_batch_bf16") or n.endswith("_batch_f32") for n in names):
            kind = "batched step"  # the pooled kernels of several replies' step
            if rows:
                kind += f" of {rows[0]} rows"
        elif any(n.startswith("gemm") or n.startswith("qgemm") for n in names):
            kind = "prompt"
        else:
            if rows:
                kind = "step" if rows[0] == 1 else f"verify of {rows[0]} tokens"
            else:
                kind = "step" if "qmatmul_multi_conv_bf16" in names else "verify"
        print(f"forward ({kind}): launches {start}-{i} ({len(forward)}), {sum(total.values()):.0f} µs, logits grid {grid}")
        for key in sorted(total, key=total.get, reverse=True)[:top]:
            n, g, b = key
            print(f"   {n:28s} grid {g:16s} group {b:12s} {count[key]:4d} {total[key]:9.1f} µs {total[key] / count[key]:8.2f} µs/launch")
        start = i + 1
    if start < len(seq):
        print(f"(launches {start}-{len(seq) - 1} after the last logits: a forward cut short)")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 12)
