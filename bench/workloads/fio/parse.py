"""fio: page-cache allocation on tmpfs under perf stat, run by ./job (fio.conf).

Files: fio-rc.txt (fio's exit status), fio.json (--output-format=json),
perf-fio.txt (perf stat -x,), vmstat-before.txt and vmstat-after.txt.
Figures: runtime, bandwidth and IOPS, pages allocated (pgalloc), CPU
shares, perf counters."""

from __future__ import annotations

import json
from dataclasses import dataclass

from bench.parse import ParseError, PerfCounter, perf_stat, vmstat_pgalloc
from bench.workloads import MetricDef


# --- parsers ----------------------------------------------------------------

def fio_json(text: str) -> tuple[float, float, float, float, float, float, float]:
    """(job_runtime ms, read bw KiB/s, read iops, write bw, write iops, usr %,
    sys %) of jobs[0].  Text before the JSON (fio notes) is skipped."""
    start = text.find("{")
    if start < 0:
        raise ParseError("no JSON object in fio output")
    try:
        d = json.loads(text[start:])
        j = d["jobs"][0]
        vals = (j["job_runtime"], j["read"]["bw"], j["read"]["iops"], j["write"]["bw"],
                j["write"]["iops"], j["usr_cpu"], j["sys_cpu"])
        return tuple(float(v) for v in vals)  # type: ignore[return-value]
    except json.JSONDecodeError as e:
        raise ParseError(f"corrupt JSON: {e.msg} at line {e.lineno}") from e
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise ParseError(f"unexpected fio JSON layout (missing {e})") from e


# --- one boot ---------------------------------------------------------------

@dataclass
class FioResult:
    runtime_ms: float
    read_bw: float
    read_iops: float
    write_bw: float
    write_iops: float
    usr_cpu: float
    sys_cpu: float
    perf: dict[str, PerfCounter]
    pgalloc: float | None = None  # pages allocated during the job (/proc/vmstat)


def load(r, warnings: list[str]) -> FioResult | None:
    frc = r.text("fio-rc.txt").strip() if r.exists("fio-rc.txt") else "0"
    if frc != "0":
        warnings.append(f"boot {r.id}: fio exited with {frc}; its figures are left out")
        return None
    vals = r.parsed("fio.json", fio_json)
    f = FioResult(*vals, perf=r.parsed("perf-fio.txt", perf_stat))
    if r.exists("vmstat-before.txt") and r.exists("vmstat-after.txt"):
        before = r.parsed("vmstat-before.txt", vmstat_pgalloc)
        f.pgalloc = r.parsed("vmstat-after.txt", vmstat_pgalloc) - before
    return f


# --- summary rows -------------------------------------------------------------

def figures(c, d) -> None:
    w, f = d.boot.workload, d.data
    c.add(d, w, "runtime", MetricDef(c.time_unit("ms"), True, ("overhead",),
                                     "fio job_runtime of a fixed amount of I/O"), f.runtime_ms)
    for name, v, what in (("read_bw", f.read_bw, "KiB"), ("write_bw", f.write_bw, "KiB"),
                          ("read_iops", f.read_iops, "IO"), ("write_iops", f.write_iops, "IO")):
        if v > 0 or not name.startswith("read"):  # a write-only job reads nothing
            c.add(d, w, name, MetricDef(c.rate_unit(what), True, ("rel",)), v)
    if f.pgalloc is not None:
        if f.pgalloc <= 0:
            c.warnings.append(f"boot {d.boot.id}: fio allocated no pages (/proc/vmstat "
                              f"pgalloc_* did not grow): it measured no page allocation")
        c.add(d, w, "pgalloc", MetricDef("pages", note="pgalloc_* growth in /proc/vmstat "
                                         "over the fio job"), f.pgalloc)
    c.add(d, w, "usr_cpu", MetricDef("%"), f.usr_cpu)
    c.add(d, w, "sys_cpu", MetricDef("%"), f.sys_cpu)
    c.perf(d, w, "", f.perf)
