"""Attribute the instructions of one timed operation to kernel functions.

A boot with CACHESIM=1 CACHESIM_ARGS=pcs=<boot>/pcs.csv leaves, per plugin
window label, how often each guest PC ran inside windows.  With the kernel's
System.map this gives instructions per operation per function, and the
difference between two kernels shows where added instructions come from:

  python3 -m bench.insn_profile OP BOOT:SYSTEM_MAP [BOOT:SYSTEM_MAP ...]

OP is an alloc_bench op and phase, e.g. ksite_pages_o0_alloc.  PCs outside
the kernel image (module code) are summed as "[module]".
"""

from __future__ import annotations

import bisect
import csv
import sys
from collections import defaultdict
from pathlib import Path

from bench import parse
from bench.workloads.micro import parse as micro


def load_map(path: Path) -> tuple[list[int], list[str]]:
    syms = []
    for ln in path.read_text().splitlines():
        parts = ln.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            syms.append((int(parts[0], 16), parts[2]))
    syms.sort()
    return [a for a, _ in syms], [n for _, n in syms]


def profile(boot: Path, system_map: Path, op: str) -> tuple[dict[str, float], int]:
    """{function: instructions per window} and the number of windows."""
    text = (boot / "result" / "alloc_bench.csv").read_text()
    ops = micro.bench_labels(text)
    labels = [lb for lb in range(1 << 16) if micro.window_name(lb, ops) == op]
    if not labels:
        raise SystemExit(f"error: {boot}: no window label for op {op!r}")
    _, by_label = parse.cachesim((boot / "cachesim.csv").read_text())
    windows = by_label[labels[0]]["insns"].count
    addrs, names = load_map(system_map)
    lo, hi = addrs[0], addrs[-1]
    out: dict[str, float] = defaultdict(float)
    with open(boot / "pcs.csv") as f:
        for row in csv.DictReader(f):
            if int(row["label"]) != labels[0]:
                continue
            pc = int(row["pc"], 16)
            if lo <= pc <= hi:
                name = names[bisect.bisect_right(addrs, pc) - 1]
            else:
                name = "[module]"
            out[name] += int(row["count"]) / windows
    return out, windows


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    op = argv[0]
    cols = []
    for spec in argv[1:]:
        boot, _, smap = spec.partition(":")
        prof, n = profile(Path(boot), Path(smap), op)
        cols.append((Path(boot).name, prof, n))
    funcs = sorted({f for _, p, _ in cols for f in p}, key=lambda f: -max(p.get(f, 0) for _, p, _ in cols))
    print("function," + ",".join(c[0] for c in cols))
    for f in funcs:
        print(f + "," + ",".join(f"{p.get(f, 0):.1f}" for _, p, _ in cols))
    print("total," + ",".join(f"{sum(p.values()):.1f}" for _, p, _ in cols))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
