"""Print the SASS instructions of a kernel where its warps were sampled most
(ncu's source page, --csv --print-source sass), with each one's sampled stall
reasons: where a latency-bound kernel waits (a load's use, a barrier, a
shuffle).

Then the kernel's samples summed by stall reason (what its warps wait on
as a whole), and, where the page has the executed instructions, its executed
instructions by opcode (predicate and modifiers dropped: FFMA, PRMT, LDG,
SHFL, IMAD...), each one's share: where an instruction-bound kernel spends
its issue slots.

Usage: python3 tools/ncu_source.py source.csv [top]   (tools/ncu_source.sh runs it)
"""
import collections
import csv
import sys

from ncu_stalls import number  # tools/ is the script's directory, first on sys.path


def main(path, top):
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"') and not l.startswith('"Kernel Name"')]
    rows = list(csv.DictReader(lines))
    if not rows:
        print("no rows")
        return
    cols = list(rows[0].keys())
    src = "Source" if "Source" in cols else cols[1]
    samples = next((c for c in cols if c.startswith("Warp Stall Sampling (All")), None)
    if samples is None:
        print("columns:", cols)
        executed_by_opcode(rows, cols, src, top)
        return
    total = sum(number(r[samples]) for r in rows)
    print(f"{len(rows)} instructions, {total:.0f} samples")
    # The stall reasons' columns (stall_long_sb, ...; not their "(Not Issued)" twins).
    reasons = [c for c in cols if c.startswith("stall_") and "Not Issued" not in c and any(number(r[c]) for r in rows)]
    for r in sorted(rows, key=lambda r: number(r[samples]), reverse=True)[:top]:
        n = number(r[samples])
        why = sorted(((number(r[c]), c) for c in reasons if number(r[c])), reverse=True)[:3]
        why = ", ".join(f"{c.replace('stall_', '')} {v:.0f}" for v, c in why)
        print(f"{100 * n / max(total, 1):5.1f}%  {r.get('Address', r.get('# Address', ''))[-5:]:5s} {r[src][:60]:60s} {why}")
    by = collections.Counter({c.replace("stall_", ""): sum(number(r[c]) for r in rows) for c in reasons})
    print("samples by stall reason:")
    for c, n in by.most_common(top):
        print(f"{100 * n / max(total, 1):5.1f}%  {c}")
    executed_by_opcode(rows, cols, src, top)


def opcode(sass):
    """The opcode of a SASS line: "@!P0 LDG.E.128 R4, [R2.64]" gives LDG."""
    words = sass.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def executed_by_opcode(rows, cols, src, top):
    col = next((c for c in cols if c.startswith("Warp Instructions Executed") or c == "Instructions Executed"), None)
    if col is None:
        return
    by = collections.Counter()
    for r in rows:
        by[opcode(r[src])] += number(r[col])
    total = sum(by.values())
    print(f"{total:.0f} instructions executed ({col}), by opcode:")
    for op, n in by.most_common(top):
        print(f"{100 * n / max(total, 1):5.1f}%  {op}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30)
