"""memcg: accounted vs unaccounted kernel memory, on kernels with MEMCG and
patches/packed-select: a short stress-ng run in a child memory cgroup,
run by ./job (memcg.conf).

Files: accounted-start.txt, accounted-run.txt (snap_s seconds of guest time
into the stress-ng run, which lasts run_s), accounted-end.txt (/proc/allocinfo_accounted),
acct-rc.txt (stress-ng's exit code), allocinfo-run.txt.  Figures: the bytes
and calls of every call site summed, charged to a memory cgroup
("accounted") or not, while stress-ng runs and after it, and the accounted
share of the bytes while it runs.  Before it nothing is charged (no task
was in a child memcg yet), so that point is not a figure."""

from __future__ import annotations

from bench.parse import allocinfo_accounted
from bench.workloads import MetricDef

POINTS = ("run", "end")


def load(r, warnings: list[str]) -> dict[str, dict[str, tuple[int, int]]]:
    """{point: {"accounted"|"unaccounted": (bytes, calls)}}."""
    rc = r.text("acct-rc.txt").strip()
    if rc != "0":
        raise r.error("acct-rc.txt", f"stress-ng exited with {rc!r} (see stress.log)")
    return {p: r.parsed(f"accounted-{p}.txt", allocinfo_accounted) for p in ("start",) + POINTS}


def figures(c, d) -> None:
    w = d.boot.workload
    for p in POINTS:
        for part in ("accounted", "unaccounted"):
            nbytes, calls = d.data[p][part]
            c.add(d, w, f"{p}.{part}_bytes",
                  MetricDef("bytes", note=f"/proc/allocinfo_accounted, {part}, stress-ng {p}"), float(nbytes))
            c.add(d, w, f"{p}.{part}_calls", MetricDef("calls"), float(calls))
    run = d.data["run"]
    total = run["accounted"][0] + run["unaccounted"][0]
    if total > 0:
        c.add(d, w, "run.accounted_pct",
              MetricDef("% of bytes", note="accounted share of all profiled bytes while stress-ng runs"),
              run["accounted"][0] / total * 100)
