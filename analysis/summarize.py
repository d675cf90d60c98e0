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

OUT_DIR = "analysis"
BENCH_FIELDS = ("min", "p50", "p90", "p99", "mean", "max")
PAGE = 4096
TIB = 1 << 40
MIB = 1 << 20


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
KERNEL_SITE_PREFIX = "ksite_"
BOOTS_DISAGREE = "boots disagree (not deterministic)"
CACHE_REPORTED = ("insns", "l1_miss", "l2_miss", "llc_miss", "lines", "est_cycles")
CACHE_PARAM_KEYS = ("l1", "l2", "llc", "pen_l2", "pen_llc", "pen_mem")
CACHE_UNITS = {"insns": "instructions", "l1_miss": "misses", "l2_miss": "misses", "llc_miss": "misses",
               "lines": "lines", "est_cycles": "cycles (model)"}
REL_UNIT = {"overhead": "%", "rel": "ratio", "vs_baseline": "%"}


@dataclass(frozen=True)
class MetricDef:
    unit: str
    timing: bool = False               # a time measurement (tcg: relative only)
    rel: tuple[str, ...] = ()          # derived rows, see module docstring
    note: str = ""


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


def call_site(op: str) -> str:
    """Which allocation tag an alloc_bench op is accounted to: ops named
    ksite_* allocate from call sites in the kernel image, the others from
    the benchmark module itself."""
    return "kernel tag call site" if op.startswith(KERNEL_SITE_PREFIX) else "module tag call site"


# --- per-boot observations ----------------------------------------------------

class _Collector:
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

    def micro(self, d: BootData):
        w, unit = d.boot.workload, latency_unit(self.run)
        single = [ln for ln in d.bench if ln.cpu == -1]
        par: dict[str, list] = defaultdict(list)
        for ln in d.bench:
            if ln.cpu >= 1000:
                par[ln.op].append(ln)
        for ln in single:
            site = call_site(ln.op)
            self.add(d, w, f"{ln.op}.outliers",
                     MetricDef("samples", note="samples over 100x the median: an interrupt or reclaim "
                                               "hit them"), float(ln.outliers))
            for f in BENCH_FIELDS:
                self.add(d, w, f"{ln.op}.{f}",
                         MetricDef(unit, True, ("overhead", "delta", "delta_nopf") if f == "p50" else
                                   ("overhead",) if f == "p99" else (),
                                   site),
                         float(getattr(ln, f)))
        for op, lines in par.items():
            for f in BENCH_FIELDS:
                v = sum(getattr(x, f) for x in lines) / len(lines)
                self.add(d, w, f"parallel.{op}.{f}",
                         MetricDef(unit, True, ("overhead",) if f == "p50" else (),
                                   "all CPUs at once; per boot the mean over CPUs"), v)

    def cache(self, d: BootData):
        """Cache-model windows: misses per level, distinct lines and
        estimated cycles per op, p50 and mean; the pair as alloc + free
        means.  Only the parallel pattern is left out (its vCPUs share
        one LLC and interleave)."""
        w = d.boot.workload
        note = "cache model: " + " ".join(f"{k}={d.cache_params[k]}" for k in CACHE_PARAM_KEYS
                                          if k in d.cache_params)
        pairs: dict[str, dict[str, float]] = defaultdict(dict)
        for name, per in (d.cache or {}).items():
            if "_parallel_" in name:
                continue
            for m in CACHE_REPORTED:
                st = per.get(m)
                if st is None:
                    continue
                unit = CACHE_UNITS[m]
                for f in ("p50", "mean"):
                    self.add(d, w, f"cache.{name}.{m}.{f}",
                             MetricDef(unit, False, ("delta", "delta_nopf"), note), float(getattr(st, f)))
                op, phase = name.rsplit("_", 1)
                pairs[f"{op}_pair.{m}"][phase] = st.mean
        for key, phases in pairs.items():
            if set(phases) == {"alloc", "free"}:
                m = key.rsplit(".", 1)[1]
                unit = CACHE_UNITS[m]
                self.add(d, w, f"cache.{key}.mean",
                         MetricDef(unit, False, ("delta", "delta_nopf"), note + "; alloc mean + free mean"),
                         phases["alloc"] + phases["free"])

    def perf(self, d: BootData, w: str, prefix: str, counters: dict):
        for ev, c in counters.items():
            timing = ev in ("task-clock", "cpu-clock")
            unit = time_unit(self.run, c.unit) if timing else (c.unit or "count")
            self.add(d, w, f"{prefix}perf.{ev}",
                     MetricDef(unit, timing, ("overhead",) if timing else ()), c.value)

    def stress(self, d: BootData):
        w = d.boot.workload
        s_unit = time_unit(self.run, "s")
        for s, r in d.stress.items():
            m = r.metrics
            self.add(d, w, f"{s}.wall_time", MetricDef(s_unit, True, ("overhead",),
                                                      "stress-ng wall-clock-time of a fixed op count"),
                     m["wall-clock-time"])
            for k, name, rel in (("user-time", "user_time", ()), ("system-time", "system_time", ("overhead",))):
                if k in m:
                    self.add(d, w, f"{s}.{name}", MetricDef(s_unit, True, rel), m[k])
            self.add(d, w, f"{s}.bogo_ops", MetricDef("bogo ops"), m["bogo-ops"])
            if self.run.timing == "icount" and m["bogo-ops"] > 0:
                # one guest nanosecond is one instruction under -icount shift=0
                self.add(d, w, f"{s}.insns_per_bogo_op",
                         MetricDef("instructions", True, ("overhead", "delta"),
                                   "stress-ng wall-clock-time under icount / bogo ops"),
                         m["wall-clock-time"] * 1e9 / m["bogo-ops"])
            self.add(d, w, f"{s}.bogo_ops_per_s",
                     MetricDef(rate_unit(self.run, "bogo ops"), True, ("rel",)),
                     m["bogo-ops-per-second-real-time"])
            self.perf(d, w, f"{s}.", r.perf)

    def fio(self, d: BootData):
        w, f = d.boot.workload, d.fio
        assert f is not None
        self.add(d, w, "runtime", MetricDef(time_unit(self.run, "ms"), True, ("overhead",),
                                            "fio job_runtime of a fixed amount of I/O"), f.runtime_ms)
        for name, v, what in (("read_bw", f.read_bw, "KiB"), ("write_bw", f.write_bw, "KiB"),
                              ("read_iops", f.read_iops, "IO"), ("write_iops", f.write_iops, "IO")):
            if v > 0 or not name.startswith("read"):  # a write-only job reads nothing
                self.add(d, w, name, MetricDef(rate_unit(self.run, what), True, ("rel",)), v)
        if f.pgalloc is not None:
            if f.pgalloc <= 0:
                self.warnings.append(f"boot {d.boot.id}: fio allocated no pages (/proc/vmstat "
                                     f"pgalloc_* did not grow): it measured no page allocation")
            self.add(d, w, "pgalloc", MetricDef("pages", note="pgalloc_* growth in /proc/vmstat "
                                                "over the fio job"), f.pgalloc)
        self.add(d, w, "usr_cpu", MetricDef("%"), f.usr_cpu)
        self.add(d, w, "sys_cpu", MetricDef("%"), f.sys_cpu)
        self.perf(d, w, "", f.perf)

    def mem(self, d: BootData):
        b, w = d.boot, f"mem-m{d.boot.mem_mb}"
        mi = d.meminfo or {}
        r = d.report
        is_ref = b.kernel == self.run.ref(b.kernel)
        peer = self.run.is_peer(b.kernel)
        if r is None and peer:
            # Upstream prints no "page tag refs" line: its page_ext
            # allocation line tells the cost, none means no page_ext at all.
            self.add_page_ext(d, w, float(d.page_ext_allocated or 0), None, mi,
                              "from 'allocated N bytes of page_ext'" if d.page_ext_allocated
                              else "no page_ext allocated (no 'bytes of page_ext' line)")
        elif r is None and not is_ref:
            self.warnings.append(f"boot {b.id}: no 'page tag refs' line in dmesg.txt; "
                                 f"page_ext figures left out")
        if r is not None:
            self.add(d, w, "ref_bits", MetricDef("bits"), float(r.ref_bits))
            self.add(d, w, "kernel_tags", MetricDef("tags"), float(r.kernel_tags))
        if (r is not None or is_ref) and not (peer and r is None):
            nbytes = float(r.page_ext_bytes) if r else 0.0
            npages = float(r.page_ext_pages) if r else 0.0
            note = "" if r else "no page tag refs line: kernel without profiling"
            self.add_page_ext(d, w, nbytes, npages, mi, note)
        for k, name in (("MemTotal", "memtotal_kb"), ("MemFree", "memfree_kb")):
            if k in mi:
                self.add(d, w, name, MetricDef("kB", rel=("delta",)), float(mi[k]))
        if d.allocinfo is not None:
            self.add(d, w, "allocinfo_bytes", MetricDef("bytes", note="sum of /proc/allocinfo sizes"),
                     float(sum(a.bytes for a in d.allocinfo)))
            self.add(d, w, "allocinfo_lines", MetricDef("tags", note="lines of /proc/allocinfo"),
                     float(len(d.allocinfo)))


    def add_page_ext(self, d: BootData, w: str, nbytes: float, npages: float | None,
                     mi: dict[str, int], note: str):
        ram = d.boot.mem_mb * MIB
        self.add(d, w, "page_ext_bytes", MetricDef("bytes", rel=("vs_baseline",)), nbytes, note)
        if npages is not None:
            self.add(d, w, "page_ext_pages", MetricDef("page_ext entries"), npages, note)
            if npages > 0:
                self.add(d, w, "page_ext_bytes_per_entry", MetricDef("bytes/entry"), nbytes / npages)
        total = mi.get("MemTotal", 0)
        if total > 0:
            self.add(d, w, "page_ext_bytes_per_page",
                     MetricDef("bytes per 4 KiB page", note="page_ext_bytes / (MemTotal/4 KiB)"),
                     nbytes / (total / (PAGE // 1024)))
        if ram > 0:
            self.add(d, w, "page_ext_pct_ram",
                     MetricDef("% of RAM", note=f"of the guest's {d.boot.mem_mb} MiB"), nbytes / ram * 100)
            self.add(d, w, "page_ext_bytes_per_tib",
                     MetricDef("bytes per TiB RAM", note="extrapolated linearly from this RAM size"),
                     nbytes / ram * TIB)


def _collect(run: Run) -> _Collector:
    c = _Collector(run)
    for d in run.boots:
        if d.bench:
            c.micro(d)
        if d.cache:
            c.cache(d)
        if d.stress:
            c.stress(d)
        if d.fio is not None:
            c.fio(d)
        if d.meminfo is not None:
            c.mem(d)
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
