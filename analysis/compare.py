"""Which overheads moved between two runs, and whether each move is outside
the runs' intervals (95% CIs, or boot-to-boot spreads under icount).

    /usr/bin/python3 -m analysis.compare results/A results/B [--all] [--allow-tcg]

Both runs are summarised afresh from their raw files; nothing is written.
Exit status 0 unless the input is bad (then 1, with a one-line message)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from analysis import configs, stats, summarize
from analysis.load import AnalysisError, load_run, resolve_run_dir
from analysis.summarize import Row, Summary

EPS = 1e-9
# Rows that are overheads: every derived row summarize writes (relative to a
# reference kernel), or page_ext memory.
OVERHEAD_PREFIXES = ("page_ext_",)


def is_overhead(r: Row) -> bool:
    return r.metric.endswith(summarize.OVERHEAD_SUFFIXES) or r.metric.startswith(OVERHEAD_PREFIXES)


def interval(r: Row) -> tuple[float, float] | None:
    """The row's CI or spread; none for one boot of a metric not known to be
    deterministic (its "spread" is a single point that says nothing)."""
    if r.n_boots < 2 and stats.SPREAD_NOTE not in r.note:
        return None
    return stats.Estimate(r.value, r.ci_low, r.ci_high, r.spread_low, r.spread_high).interval()


def setup_differences(ra, rb) -> list[str]:
    """What makes two runs measure different things: kernel builds (config,
    series) and benchmark arguments per kernel and workload."""
    notes = []
    ia, ib = ra.manifest.get("build_info") or {}, rb.manifest.get("build_info") or {}
    for v in sorted(set(ia) & set(ib)):
        for key in ("config_hash", "series_hash"):
            a, b = (ia[v] or {}).get(key), (ib[v] or {}).get(key)
            if a != b:
                notes.append(f"kernel {v}: {key} differs (A {a}, B {b}): the runs measured different kernels"
                             + (_config_options(ra.path, rb.path, v) if key == "config_hash" else ""))
    def args(run) -> dict[tuple[str, str], set[str]]:
        out: dict[tuple[str, str], set[str]] = {}
        for b in run.manifest.get("boots") or []:
            out.setdefault((b.get("kernel"), b.get("workload")), set()).add(str(b.get("cmdline_extra", "")).strip())
        return out
    aa, ab = args(ra), args(rb)
    for key in sorted(set(aa) & set(ab), key=str):
        if aa[key] != ab[key]:
            notes.append(f"{key[0]}/{key[1]}: benchmark arguments differ (A {sorted(aa[key])[0]!r}, "
                         f"B {sorted(ab[key])[0]!r}): op counts are not the same")
    return notes


def _config_options(a, b, variant: str) -> str:
    """"; options: X: y -> n, ..." when both runs archived the variant's config."""
    try:
        d = configs.diff(configs.options(a, variant), configs.options(b, variant))
    except AnalysisError:
        return ""
    return f"; {len(d)} options differ: " + ", ".join(d[:6]) + (" ..." if len(d) > 6 else "")


@dataclass(frozen=True)
class Change:
    kernel: str
    workload: str
    metric: str
    unit: str
    a: Row
    b: Row
    verdict: str   # "outside", "inside", "no interval", "same"

    @property
    def delta(self) -> float:
        assert self.a.value is not None and self.b.value is not None
        return self.b.value - self.a.value


def classify(a: Row, b: Row) -> str:
    assert a.value is not None and b.value is not None
    if abs(b.value - a.value) <= EPS * max(1.0, abs(a.value)):
        return "same"
    ia, ib = interval(a), interval(b)
    if ia is None or ib is None:
        return "no interval"
    # Deterministic (icount) spreads can be single points; then any change is real.
    disjoint = ia[1] < ib[0] - EPS or ib[1] < ia[0] - EPS
    return "outside" if disjoint else "inside"


def compare(sa: Summary, sb: Summary) -> tuple[list[Change], list[str], list[str]]:
    """(changes over overhead rows in both runs, keys only in A, keys only in B)."""
    def keyed(s: Summary) -> dict[tuple[str, str, str], Row]:
        return {(r.kernel, r.workload, r.metric): r for r in s.rows if is_overhead(r) and r.value is not None}
    ka, kb = keyed(sa), keyed(sb)
    order = {k: i for i, k in enumerate(list(sa.facts["kernels"]) + list(sb.facts["kernels"]))}
    keys = sorted(set(ka) & set(kb), key=lambda k: (k[1], k[2], order.get(k[0], 0), k[0]))
    changes = [Change(*k, ka[k].unit, ka[k], kb[k], classify(ka[k], kb[k])) for k in keys]
    only = lambda x, y: ["/".join(k) for k in sorted(set(x) - set(y))]  # noqa: E731
    return changes, only(ka, kb), only(kb, ka)


def _cell(r: Row) -> str:
    iv = interval(r)
    v = summarize.fmt(r.value)
    return v if iv is None else f"{v} [{summarize.fmt(iv[0])}, {summarize.fmt(iv[1])}]"


def render(changes: list[Change], only_a: list[str], only_b: list[str], a_name: str, b_name: str,
           show_all: bool, notes: list[str]) -> str:
    shown = [c for c in changes if show_all or c.verdict != "same"]
    header = ["kernel", "workload", "metric", "unit", f"A {a_name}", f"B {b_name}", "B-A", "verdict"]
    body = [[c.kernel, c.workload, c.metric, c.unit, _cell(c.a), _cell(c.b), summarize.fmt(c.delta), c.verdict]
            for c in shown]
    widths = [max(len(x) for x in col) for col in zip(header, *body)] if body else [len(h) for h in header]
    lines = [f"note: {n}" for n in notes]
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    lines += ["  ".join(x.ljust(w) for x, w in zip(r, widths)).rstrip() for r in body]
    n = {v: sum(1 for c in changes if c.verdict == v) for v in ("same", "inside", "outside", "no interval")}
    lines.append(f"{len(changes)} overhead rows in both runs: {n['outside']} moved outside the intervals, "
                 f"{n['inside']} moved within them, {n['no interval']} moved without an interval, "
                 f"{n['same']} unchanged")
    if only_a:
        lines.append(f"{len(only_a)} rows only in A, e.g. {only_a[0]}")
    if only_b:
        lines.append(f"{len(only_b)} rows only in B, e.g. {only_b[0]}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m analysis.compare",
                                 description="Which overheads moved between two benchmark runs.")
    ap.add_argument("a", help="results/<run-id> of the earlier run")
    ap.add_argument("b", help="results/<run-id> of the later run")
    ap.add_argument("--all", action="store_true", help="also list unchanged rows")
    ap.add_argument("--allow-tcg", action="store_true", help="accept plain-TCG runs (relative only)")
    args = ap.parse_args(argv)
    try:
        ra = load_run(resolve_run_dir(args.a), allow_tcg=args.allow_tcg)
        rb = load_run(resolve_run_dir(args.b), allow_tcg=args.allow_tcg)
        sa, sb = summarize.summarize(ra), summarize.summarize(rb)
    except AnalysisError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    notes = []
    if ra.timing != rb.timing:
        notes.append(f"timing differs (A {ra.timing}, B {rb.timing}): overheads are comparable, "
                     f"absolute figures are not")
    notes += setup_differences(ra, rb)
    changes, only_a, only_b = compare(sa, sb)
    sys.stdout.write(render(changes, only_a, only_b, ra.run_id, rb.run_id, args.all, notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
