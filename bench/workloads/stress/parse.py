"""stress: page-allocation heavy stress-ng stressors with fixed bogo-op counts,
each under perf stat, run by ./job (stress.conf).

Files: stress-rc.txt ("<stressor> <rc> [<guest uptime after it>]" per
stressor), stress-<s>.yaml (stress-ng --yaml), perf-stress-<s>.txt (perf
stat -x,).  Figures per stressor: wall, user and system time, bogo ops,
instructions per bogo op (icount), bogo ops per second, perf counters."""

from __future__ import annotations

from dataclasses import dataclass

from bench.parse import PerfCounter, number, perf_stat
from bench.workloads import MetricDef


# --- parsers ----------------------------------------------------------------

def _scalar(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]
    return text


def stress_yaml(text: str) -> list[dict[str, str]]:
    """The entries of the top-level "metrics:" list of stress-ng --yaml output,
    as {key: raw string}.  Tolerant: anything outside that list is skipped."""
    entries: list[dict[str, str]] = []
    in_metrics = False
    cur: dict[str, str] | None = None
    for ln in text.splitlines():
        if not ln.strip() or ln.lstrip().startswith("#"):
            continue
        if ln.strip() in ("---", "..."):
            in_metrics = False
            continue
        if not ln[0].isspace():  # a top-level key
            in_metrics = ln.split("#", 1)[0].strip() == "metrics:"
            cur = None
            continue
        if not in_metrics:
            continue
        body = ln.strip()
        if body.startswith("- "):
            cur = {}
            entries.append(cur)
            body = body[2:].strip()
        if cur is None or ":" not in body:
            continue
        key, _, value = body.partition(":")
        cur[key.strip()] = _scalar(value)
    return entries


# --- one boot ---------------------------------------------------------------

@dataclass
class StressorResult:
    metrics: dict[str, float]  # numeric fields of the stress-ng metrics entry
    perf: dict[str, PerfCounter]


def load(r, warnings: list[str]) -> dict[str, StressorResult]:
    """{stressor: its figures}; a stressor that exited non-zero is left out."""
    out: dict[str, StressorResult] = {}
    for ln in r.text("stress-rc.txt").splitlines():
        parts = ln.split()
        if not parts:
            continue
        # "<stressor> <rc> [<guest uptime after it>]"
        if len(parts) not in (2, 3) or not parts[1].lstrip("-").isdigit():
            raise r.error("stress-rc.txt", f"malformed line {ln!r}")
        s, rc = parts[0], int(parts[1])
        if rc != 0:
            warnings.append(f"boot {r.id}: stress-ng {s} exited with {rc}; its figures are left out")
            continue
        name = f"stress-{s}.yaml"
        entries = r.parsed(name, stress_yaml)
        entry = next((e for e in entries if e.get("stressor") == s), None)
        if entry is None:
            raise r.error(name, f"no metrics entry for stressor {s}")
        metrics = {k: v for k, v in ((k, number(x)) for k, x in entry.items()) if v is not None}
        for k in ("bogo-ops", "wall-clock-time", "bogo-ops-per-second-real-time"):
            if k not in metrics:
                raise r.error(name, f"metrics entry for {s} lacks {k}")
        out[s] = StressorResult(metrics, r.parsed(f"perf-stress-{s}.txt", perf_stat))
    return out


# --- summary rows -------------------------------------------------------------

def figures(c, d) -> None:
    w = d.boot.workload
    s_unit = c.time_unit("s")
    for s, r in d.data.items():
        m = r.metrics
        c.add(d, w, f"{s}.wall_time", MetricDef(s_unit, True, ("overhead",),
                                               "stress-ng wall-clock-time of a fixed op count"),
              m["wall-clock-time"])
        for k, name, rel in (("user-time", "user_time", ()), ("system-time", "system_time", ("overhead",))):
            if k in m:
                c.add(d, w, f"{s}.{name}", MetricDef(s_unit, True, rel), m[k])
        c.add(d, w, f"{s}.bogo_ops", MetricDef("bogo ops"), m["bogo-ops"])
        if c.run.timing == "icount" and m["bogo-ops"] > 0:
            # one guest nanosecond is one instruction under -icount shift=0
            c.add(d, w, f"{s}.insns_per_bogo_op",
                  MetricDef("instructions", True, ("overhead", "delta"),
                            "stress-ng wall-clock-time under icount / bogo ops"),
                  m["wall-clock-time"] * 1e9 / m["bogo-ops"])
        c.add(d, w, f"{s}.bogo_ops_per_s",
              MetricDef(c.rate_unit("bogo ops"), True, ("rel",)),
              m["bogo-ops-per-second-real-time"])
        c.perf(d, w, f"{s}.", r.perf)
