"""Per kernel x workload x metric summary rows of one run, and the
summary.csv / summary.json files.

Metric names: "<base>" is the median of per-boot values; derived rows
relative to a reference kernel append a suffix:
  .overhead     median_k / median_off - 1, in %   (lower is better)
  .rel          median_k / median_off, ratio      (throughput: higher is better)
  .delta        median_k - median_off, same unit as the base metric
  .delta_nopf   median_k - median_nopf (profiling compiled in, switched off)
  .vs_baseline  median_k / median_baseline - 1, in %
"off" is the kernel's reference, "nopf" and "baseline" the kernels of its
group with roles nopf and pageext (bench/kernels, as the run recorded it).
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from dataclasses import asdict, dataclass, field, fields
from functools import cached_property
from pathlib import Path

from analysis import stats
from analysis.load import BootData, Run
from bench import workloads
from bench.workloads import MetricDef

OUT_DIR = "analysis"


@dataclass(frozen=True)
class Row:
    kernel: str
    workload: str
    metric: str
    unit: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    spread_low: float | None
    spread_high: float | None
    n_boots: int
    note: str


COLUMNS = tuple(f.name for f in fields(Row))
# The derived rows' suffixes (module docstring): the one list of them, which
# analysis.compare reads too.
REL_SUFFIX = {"overhead": ".overhead", "rel": ".rel", "delta": ".delta", "delta_nopf": ".delta_nopf",
              "vs_baseline": ".vs_baseline"}
OVERHEAD_SUFFIXES = tuple(REL_SUFFIX.values())
# Rows against another kernel of the group than the reference: its role.
REL_REF = {"vs_baseline": "pageext", "delta_nopf": "nopf"}
BOOTS_DISAGREE = "boots disagree (not deterministic)"
REL_UNIT = {"overhead": "%", "rel": "ratio", "vs_baseline": "%"}


@dataclass
class _Group:
    mdef: MetricDef
    deterministic: bool
    values: dict[str, list[float | None]] = field(default_factory=lambda: defaultdict(list))
    notes: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # per kernel


@dataclass
class Summary:
    rows: list[Row]
    warnings: list[str]
    facts: dict

    @cached_property
    def _by(self) -> dict[tuple[str, str, str], Row]:
        return {(r.kernel, r.workload, r.metric): r for r in self.rows}

    def get(self, kernel: str, workload: str, metric: str) -> Row | None:
        """The row of (kernel, workload, metric), value or not."""
        return self._by.get((kernel, workload, metric))

    def valid(self, kernel: str, workload: str, metric: str) -> Row | None:
        """The row if it has a value."""
        r = self.get(kernel, workload, metric)
        return r if r is not None and r.value is not None else None

    def value(self, kernel: str, workload: str, metric: str) -> float | None:
        r = self.get(kernel, workload, metric)
        return None if r is None else r.value

    @cached_property
    def _kernels_by_workload(self) -> set[tuple[str, str]]:
        return {(r.kernel, r.workload) for r in self.rows if r.value is not None}

    def has_kernel(self, kernel: str, workload: str) -> bool:
        """Whether the kernel has any value in the workload (a kernel may be
        limited to some workloads, bench/kernels "@w" tokens)."""
        return (kernel, workload) in self._kernels_by_workload

    def workload_rows(self, w: str, suffix: str) -> list[Row]:
        return [r for r in self.rows if r.workload == w and r.metric.endswith(suffix) and r.value is not None]


# --- units --------------------------------------------------------------------

def latency_unit(run: Run) -> str:
    return f"{run.unit} (tcg, relative only)" if run.relative_only else run.unit


def time_unit(run: Run, base: str) -> str:
    """A guest time unit: under icount guest time counts instructions."""
    if run.timing == "icount":
        per = {"s": "1e9", "ms": "1e6", "msec": "1e6"}.get(base)
        return f"virtual {base} (1 {base} = {per} instructions)" if per else f"virtual {base}"
    return f"{base} (tcg, relative only)" if run.relative_only else base


def rate_unit(run: Run, what: str) -> str:
    if run.timing == "icount":
        return f"{what} per virtual s"
    return f"{what}/s (tcg, relative only)" if run.relative_only else f"{what}/s"


# --- per-boot observations ----------------------------------------------------

class Collector:
    """Per (workload, metric), every boot's value per kernel.  Each workload's
    figures() (bench/workloads/<job>/parse.py) adds its rows through it."""

    def __init__(self, run: Run):
        self.run = run
        self.groups: dict[tuple[str, str], _Group] = {}
        self.warnings: list[str] = []

    def add(self, d: BootData, workload: str, metric: str, mdef: MetricDef, value: float | None,
            note: str = ""):
        key = (workload, metric)
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = _Group(mdef, self.run.deterministic)
        g.values[d.boot.kernel].append(value)
        if note:
            g.notes[d.boot.kernel].add(note)

    def latency_unit(self) -> str:
        return latency_unit(self.run)

    def time_unit(self, base: str) -> str:
        return time_unit(self.run, base)

    def rate_unit(self, what: str) -> str:
        return rate_unit(self.run, what)

    def perf(self, d: BootData, w: str, prefix: str, counters: dict):
        """perf stat counters (bench.parse.perf_stat) as rows <prefix>perf.<event>."""
        for ev, c in counters.items():
            timing = ev in ("task-clock", "cpu-clock")
            unit = time_unit(self.run, c.unit) if timing else (c.unit or "count")
            self.add(d, w, f"{prefix}perf.{ev}",
                     MetricDef(unit, timing, ("overhead",) if timing else ()), c.value)


def _collect(run: Run) -> Collector:
    c = Collector(run)
    for d in run.boots:
        unit = workloads.unit(d.job) if d.job else None
        if unit is not None and d.data is not None:
            unit.figures(c, d)
    return c


# --- rows -------------------------------------------------------------------

def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _row(kernel: str, workload: str, metric: str, unit: str, est: stats.Estimate, note: str) -> Row:
    return Row(kernel, workload, metric, unit, est.value, est.ci_low, est.ci_high,
               est.spread_low, est.spread_high, est.n, note)


def summarize(run: Run) -> Summary:
    c = _collect(run)
    warnings = list(run.warnings) + c.warnings
    order = {k: i for i, k in enumerate(run.kernels)}
    rows: list[Row] = []
    disagree: dict[str, list[str]] = defaultdict(list)
    for (w, metric), g in sorted(c.groups.items()):
        md = g.mdef
        tcg = "relative only (plain TCG wall clock)" if (md.timing and run.relative_only) else ""
        clean: dict[str, list[float]] = {}
        if g.deterministic:
            # icount with one vCPU is expected to replay boots exactly: a
            # claim checked here, per metric, not assumed.
            split = [k for k, raw in g.values.items()
                     if len({v for v in raw if v is not None}) > 1]
            if split:
                g.deterministic = False
                disagree[w].append(f"{metric} ({', '.join(split)})")
                for k in split:
                    g.notes[k].add(BOOTS_DISAGREE)
        for k in sorted(g.values, key=lambda k: order.get(k, len(order))):
            raw = g.values[k]
            vals = [v for v in raw if v is not None]
            unsupported = len(raw) - len(vals)
            nsup = f"not supported in {unsupported} of {len(raw)} boots" if unsupported else ""
            if not vals:
                rows.append(Row(k, w, metric, md.unit, None, None, None, None, None, 0,
                                _join(tcg, "not supported")))
                continue
            clean[k] = vals
            est = stats.describe(vals, g.deterministic, f"{w}|{metric}|{k}")
            knote = "; ".join(sorted(g.notes.get(k, ())))
            rows.append(_row(k, w, metric, md.unit, est, _join(tcg, md.note, knote, nsup, est.note)))
        for kind in md.rel:
            for k, vals in clean.items():
                ref_name = run.counterpart(k, REL_REF[kind]) if kind in REL_REF else run.ref(k)
                ref = clean.get(ref_name) if ref_name else None
                if ref is None or k == ref_name or (kind in REL_REF and k == run.ref(k)):
                    continue
                key = f"{w}|{metric}|{k}|{kind}"
                if kind in ("delta", "delta_nopf"):
                    est = stats.difference(vals, ref, g.deterministic, key, ref_name)
                    unit = md.unit
                else:
                    est = stats.ratio(vals, ref, g.deterministic, key, ref_name)
                    if est is not None and kind != "rel":
                        est = est.map(stats.percent)
                    unit = REL_UNIT[kind]
                name = metric + REL_SUFFIX[kind]
                if est is None:
                    rows.append(Row(k, w, name, unit, None, None, None, None, None, len(vals),
                                    _join(tcg, f"{ref_name} median is not positive")))
                    continue
                rows.append(_row(k, w, name, unit, est, _join(tcg, est.note)))
    for w, metrics in sorted(disagree.items()):
        few = min((len(v) for (gw, _), g in c.groups.items() if gw == w for v in g.values.values()),
                  default=0)
        ci = ("they carry bootstrap CIs" if few >= stats.MIN_CI_BOOTS
              else f"they need R >= {stats.MIN_CI_BOOTS} for a CI (this run: {few})")
        warnings.append(f"{w}: boots of one kernel disagree on {len(metrics)} metric(s), so icount "
                        f"is not deterministic for them; {ci}: "
                        + "; ".join(metrics[:8]) + (" ..." if len(metrics) > 8 else ""))
    rows.sort(key=lambda r: (r.workload, r.metric, order.get(r.kernel, len(order)), r.kernel))
    return Summary(rows=rows, warnings=warnings, facts=_facts(run))


def _facts(run: Run) -> dict:
    m = run.manifest
    return {
        "run_id": run.run_id,
        "state": run.state,
        "timing": run.timing,
        "timing_unit": run.unit,
        "relative_only": run.relative_only,
        "repetitions": m.get("repetitions"),
        "quick": m.get("quick"),
        "kernels": run.kernels,
        "git_revision": m.get("git_revision"),
        "boots_ok": len(run.boots),
        "boots_failed": [{"id": b.id, "status": b.status} for b in run.failed],
    }


# --- files ------------------------------------------------------------------

def _clean(v: float | None) -> float | None:
    if v is None:
        return None
    v = round(float(v), 6)
    return 0.0 if v == 0 else v


def fmt(v: float | None) -> str:
    """Fixed float formatting: at most 6 decimals, no trailing zeros."""
    v = _clean(v)
    if v is None:
        return ""
    s = f"{v:.6f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def csv_text(summary: Summary) -> str:
    buf = io.StringIO()
    wr = csv.writer(buf, lineterminator="\n")
    wr.writerow(COLUMNS)
    for r in summary.rows:
        cells = (getattr(r, c) for c in COLUMNS)
        wr.writerow(["" if x is None else fmt(x) if isinstance(x, float) else x for x in cells])
    return buf.getvalue()


def json_text(summary: Summary) -> str:
    rows = []
    for r in summary.rows:
        d = asdict(r)
        for k, v in d.items():
            if isinstance(v, float):
                d[k] = _clean(v)
        rows.append(d)
    doc = {"columns": list(COLUMNS), "run": summary.facts, "warnings": summary.warnings, "rows": rows}
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def write(run: Run, summary: Summary, out: Path | None = None) -> Path:
    out = out or run.path / OUT_DIR
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.csv").write_text(csv_text(summary))
    (out / "summary.json").write_text(json_text(summary))
    return out
