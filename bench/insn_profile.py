"""Attribute the instructions of one timed operation to kernel functions.

A boot with CACHESIM=1 CACHESIM_ARGS=pcs=<boot>/pcs.csv leaves, per plugin
window label, how often each guest PC ran inside windows.  With the kernel's
System.map this gives instructions per operation per function, and the
difference between two kernels shows where added instructions come from:

  python3 -m bench.insn_profile OP BOOT:SYSTEM_MAP [BOOT:SYSTEM_MAP ...]

OP is an alloc_bench op and phase, e.g. ksite_pages_o0_alloc.  PCs outside
the kernel image (module code) are summed as "[module]".

bench/run_bench.py boots the micro job with pcs= and keeps, instead of the
PCs (megabytes per boot), the table of the ops in PROFILED_OPS
(write_table(): insn-profile.csv, "op,function,instructions", functions
with at least MIN_INSNS instructions per op), which report.md's "Where the
instructions go" table reads.

A missing or malformed input (boot directory, alloc_bench.csv, cachesim.csv,
pcs.csv, System.map) is one line "insn_profile: <what> <path>: <reason>" on
stderr and exit status 1; a bad argument, exit status 2.
"""

from __future__ import annotations

import bisect
import errno
import os
import re
import sys
from collections import defaultdict
from pathlib import Path

from bench import parse
from bench.workloads.micro import parse as micro

MAP_LINE = re.compile(r"[0-9a-fA-F]+ \S \S+")


class InputError(Exception):
    """A missing or malformed input; str() is "<what> <path>: <reason>"."""

    def __init__(self, what: str, path: Path, reason: str):
        super().__init__(f"{what} {path}: {reason}")


def read_input(what: str, path: Path) -> str:
    try:
        return path.read_text()
    except UnicodeDecodeError:
        raise InputError(what, path, "not a text file") from None
    except OSError as e:
        raise InputError(what, path, e.strerror or str(e)) from None


def load_map(path: Path) -> tuple[list[int], list[str]]:
    """Addresses and names of System.map's text symbols, by address."""
    syms = []
    for n, ln in enumerate(read_input("System.map", path).splitlines(), 1):
        if not ln.strip():
            continue
        if not MAP_LINE.fullmatch(ln.strip()):
            raise InputError("System.map", path, f"line {n}: not a System.map line: {ln!r}")
        addr, kind, name = ln.split()
        if kind in "tTwW":
            syms.append((int(addr, 16), name))
    if not syms:
        raise InputError("System.map", path, "no text symbols")
    syms.sort()
    return [a for a, _ in syms], [n for _, n in syms]


def window_pcs(path: Path) -> dict[int, dict[int, int]]:
    """pcs.csv (the plugin's pcs= file): {window label: {pc: count}}."""
    lines = read_input("pcs.csv", path).splitlines()
    if not lines or lines[0].strip() != "label,pc,count":
        raise InputError("pcs.csv", path, "no 'label,pc,count' header")
    out: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for n, ln in enumerate(lines[1:], 2):
        parts = ln.split(",")
        try:
            if len(parts) != 3:
                raise ValueError
            out[int(parts[0])][int(parts[1], 16)] += int(parts[2])
        except ValueError:
            raise InputError("pcs.csv", path, f"line {n}: malformed line: {ln!r}") from None
    return out


class Boot:
    """One boot's op labels, windows per label and PCs, with a System.map."""

    def __init__(self, boot: Path, system_map: Path):
        if not boot.is_dir():
            e = errno.ENOTDIR if boot.exists() else errno.ENOENT
            raise InputError("boot directory", boot, os.strerror(e))
        self.boot = boot
        self.bench = boot / "result" / "alloc_bench.csv"
        self.ops = micro.bench_labels(read_input("alloc_bench.csv", self.bench))
        p = boot / "cachesim.csv"
        try:
            _, self.by_label = parse.cachesim(read_input("cachesim.csv", p))
        except parse.ParseError as e:
            raise InputError("cachesim.csv", p, str(e)) from None
        self.addrs, self.names = load_map(system_map)
        self.pcs = window_pcs(boot / "pcs.csv")

    def label(self, op: str) -> int | None:
        labels = [lb for lb in range(1 << 16) if micro.window_name(lb, self.ops) == op]
        return labels[0] if labels else None

    def profile(self, op: str) -> tuple[dict[str, float], int]:
        """{function: instructions per window} and the number of windows."""
        label = self.label(op)
        if label is None:
            raise InputError("alloc_bench.csv", self.bench, f"no window label for op {op!r}")
        return self.profile_label(op, label)

    def profile_label(self, op: str, label: int) -> tuple[dict[str, float], int]:
        """profile() of op, whose window label the caller knows."""
        if "insns" not in self.by_label.get(label, {}):
            raise InputError("cachesim.csv", self.boot / "cachesim.csv",
                             f"no windows of op {op!r} (window label {label})")
        windows = self.by_label[label]["insns"].count
        pcs = self.pcs.get(label)
        if not pcs:
            raise InputError("pcs.csv", self.boot / "pcs.csv", f"no PCs of op {op!r} (window label {label})")
        addrs, names = self.addrs, self.names
        lo, hi = addrs[0], addrs[-1]
        out: dict[str, float] = defaultdict(float)
        for pc, count in pcs.items():
            name = names[bisect.bisect_right(addrs, pc) - 1] if lo <= pc <= hi else "[module]"
            out[name] += count / windows
        return out, windows


def profile(boot: Path, system_map: Path, op: str) -> tuple[dict[str, float], int]:
    """{function: instructions per window} and the number of windows."""
    return Boot(boot, system_map).profile(op)


# The single-CPU hot-loop ops of the page, kmalloc and kmem_cache paths, at
# both call sites: what report.md attributes to functions.
PROFILED_OPS = re.compile(r"(ksite_)?(pages_o0|kmalloc_64|cache_192)_(alloc|free)")
# Functions with fewer instructions per op are left out of insn-profile.csv
# (timer interrupts that hit a few windows).
MIN_INSNS = 0.25


def write_table(boot: Path, system_map: Path, out: Path) -> int:
    """insn-profile.csv of every op of PROFILED_OPS the boot ran; the number
    of ops.  Written whole or not at all."""
    b = Boot(boot, system_map)
    lines = ["op,function,instructions"]
    ops = sorted((op, lb) for op, lb in ((micro.window_name(lb, b.ops), lb) for lb in b.by_label)
                 if op and PROFILED_OPS.fullmatch(op))
    for op, lb in ops:
        prof, _ = b.profile_label(op, lb)
        for f, v in sorted(prof.items(), key=lambda fv: (-fv[1], fv[0])):
            if v >= MIN_INSNS:
                lines.append(f"{op},{f},{v:.2f}")
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(out)
    return len(ops)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    op = argv[0]
    specs = [spec.partition(":") for spec in argv[1:]]
    for spec, (boot, sep, smap) in zip(argv[1:], specs):
        if not (boot and sep and smap):
            print(f"insn_profile: argument {spec}: expected BOOT:SYSTEM_MAP", file=sys.stderr)
            return 2
    cols = []
    try:
        for boot, _, smap in specs:
            prof, n = profile(Path(boot), Path(smap), op)
            cols.append((Path(boot).name, prof, n))
    except InputError as e:
        print(f"insn_profile: {e}", file=sys.stderr)
        return 1
    # most instructions first; ties by name, so the order does not depend on hashing
    funcs = sorted({f for _, p, _ in cols for f in p}, key=lambda f: (-max(p.get(f, 0) for _, p, _ in cols), f))
    print("function," + ",".join(c[0] for c in cols))
    for f in funcs:
        print(f + "," + ",".join(f"{p.get(f, 0):.1f}" for _, p, _ in cols))
    print("total," + ",".join(f"{sum(p.values()):.1f}" for _, p, _ in cols))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
