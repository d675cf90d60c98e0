"""micro: the in-kernel allocator latency microbenchmark (bench/kmod/alloc_bench.c),
run by ./job; micro.conf on one vCPU, micro-smp.conf on every vCPU at once.

Files: result/alloc_bench.csv (/proc/alloc_bench), and on icount boots with
the cache model cachesim.csv next to result/ (bench/qemu-plugin), whose
window labels name alloc_bench ops, and insn-profile.csv, the
instructions of the hot-loop ops per kernel function (bench/insn_profile.py,
written by bench/run_bench.py).  Figures: per op and phase min, p50, p90,
p99, mean, max and outliers in guest time units; parallel.* for the per-CPU
lines; cache.* from the cache model; fn.<op>.<function> from
insn-profile.csv."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from bench.parse import KV_RE, CacheStat, ParseError, cachesim
from bench.workloads import MetricDef

BENCH_FIELDS = ("min", "p50", "p90", "p99", "mean", "max")
KERNEL_SITE_PREFIX = "ksite_"
CACHE_REPORTED = ("insns", "l1_miss", "l2_miss", "llc_miss", "lines", "est_cycles")
CACHE_PARAM_KEYS = ("l1", "l2", "llc", "pen_l2", "pen_llc", "pen_mem")
CACHE_UNITS = {"insns": "instructions", "l1_miss": "misses", "l2_miss": "misses", "llc_miss": "misses",
               "lines": "lines", "est_cycles": "cycles (model)"}


# --- parsers ----------------------------------------------------------------

@dataclass
class BenchLine:
    op: str
    cpu: int
    count: int
    min: int
    p50: int
    p90: int
    p99: int
    mean: int
    max: int
    outliers: int


def alloc_bench(text: str) -> tuple[dict[str, str], list[BenchLine]]:
    """The /proc/alloc_bench CSV: (header settings, lines).  A missing
    "# end" marker means the output was cut short."""
    lines = text.splitlines()
    if not lines or not lines[-1].startswith("# end"):
        raise ParseError("alloc_bench output is truncated (no '# end' marker)")
    settings = dict(KV_RE.findall(lines[0])) if lines[0].startswith("#") else {}
    out = []
    for ln in lines:
        if ln.startswith("#") or ln.startswith("op,") or not ln.strip():
            continue
        parts = ln.split(",")
        if len(parts) != 10:
            raise ParseError(f"malformed alloc_bench line: {ln!r}")
        try:
            out.append(BenchLine(parts[0], *map(int, parts[1:])))
        except ValueError as e:
            raise ParseError(f"malformed alloc_bench line: {ln!r}") from e
    # A clock that does not advance gives latencies of 0: a broken
    # measurement, never a result (one vCPU under TCG without tsc=reliable).
    if settings.get("clock_cost") == "0":
        raise ParseError("alloc_bench clock_cost=0: the guest clock did not advance between reads")
    zero = [ln.op for ln in out if ln.p50 <= 0]
    if zero:
        raise ParseError(f"alloc_bench p50 of 0 for {', '.join(zero[:4])}: the guest clock is too coarse")
    return settings, out


LABEL_RE = re.compile(r"^#label (\d+) (\S+)$", re.M)
# alloc_bench window labels: op << 4 | pattern << 1 | free
PATTERNS = {0: "", 1: "_batch", 2: "_parallel"}


def bench_labels(text: str) -> dict[int, str]:
    """alloc_bench's "#label N op" lines: the label of each op's hot windows."""
    return {int(m.group(1)): m.group(2) for m in LABEL_RE.finditer(text)}


def window_name(label: int, ops: dict[int, str]) -> str | None:
    """The bench op a plugin window label stands for, e.g. pages_o0_batch_free."""
    op = ops.get(label & ~0xF)
    pattern = PATTERNS.get((label >> 1) & 0x7)
    if op is None or pattern is None:
        return None
    return f"{op}{pattern}_{'free' if label & 1 else 'alloc'}"


def call_site(op: str) -> str:
    """Which allocation tag an alloc_bench op is accounted to: ops named
    ksite_* allocate from call sites in the kernel image, the others from
    the benchmark module itself."""
    return "kernel tag call site" if op.startswith(KERNEL_SITE_PREFIX) else "module tag call site"


INSN_PROFILE_HEADER = "op,function,instructions"


def insn_profile(text: str) -> dict[str, dict[str, float]]:
    """insn-profile.csv: {op: {function: instructions per op}}."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != INSN_PROFILE_HEADER:
        raise ParseError(f"no {INSN_PROFILE_HEADER!r} header")
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for n, ln in enumerate(lines[1:], 2):
        parts = ln.split(",")
        try:
            if len(parts) != 3 or not parts[0] or not parts[1] or parts[1] in out[parts[0]]:
                raise ValueError
            v = float(parts[2])
            if not v > 0:
                raise ValueError
        except ValueError:
            raise ParseError(f"line {n}: malformed line: {ln!r}") from None
        out[parts[0]][parts[1]] = v
    if not out:
        raise ParseError("no functions")
    return dict(out)


# --- one boot ---------------------------------------------------------------

@dataclass
class Micro:
    bench: list[BenchLine]
    # cache model: {op_phase: {metric: stats}}, and its parameters
    cache: dict[str, dict[str, CacheStat]] | None = None
    cache_params: dict[str, str] = field(default_factory=dict)
    # insn-profile.csv: {op: {function: instructions per op}}
    functions: dict[str, dict[str, float]] | None = None


def load(r, warnings: list[str]) -> Micro:
    _, bench = r.parsed("alloc_bench.csv", alloc_bench)
    if not bench:
        raise r.error("alloc_bench.csv", "no measurements")
    d = Micro(bench)
    cs = r.boot_dir()
    if cs.exists("cachesim.csv"):
        d.cache_params, by_label = cs.parsed("cachesim.csv", cachesim)
        ops = bench_labels(r.text("alloc_bench.csv"))
        d.cache = {}
        for label, stats in by_label.items():
            name = window_name(label, ops)
            if name is None:
                raise cs.error("cachesim.csv", f"window label {label} is not an op of alloc_bench.csv")
            d.cache[name] = stats
    if cs.exists("insn-profile.csv"):
        d.functions = cs.parsed("insn-profile.csv", insn_profile)
    return d


# --- summary rows -------------------------------------------------------------

def figures(c, d) -> None:
    _latency(c, d)
    if d.data.cache:
        _cache(c, d)
    if d.data.functions:
        _functions(c, d)


def _latency(c, d) -> None:
    w, unit, bench = d.boot.workload, c.latency_unit(), d.data.bench
    single = [ln for ln in bench if ln.cpu == -1]
    par: dict[str, list] = defaultdict(list)
    for ln in bench:
        if ln.cpu >= 1000:
            par[ln.op].append(ln)
    for ln in single:
        site = call_site(ln.op)
        c.add(d, w, f"{ln.op}.outliers",
              MetricDef("samples", note="samples over 100x the median: an interrupt or reclaim "
                                        "hit them"), float(ln.outliers))
        for f in BENCH_FIELDS:
            c.add(d, w, f"{ln.op}.{f}",
                  MetricDef(unit, True, ("overhead", "delta", "delta_nopf") if f == "p50" else
                            ("overhead",) if f == "p99" else (),
                            site),
                  float(getattr(ln, f)))
    for op, lines in par.items():
        for f in BENCH_FIELDS:
            v = sum(getattr(x, f) for x in lines) / len(lines)
            c.add(d, w, f"parallel.{op}.{f}",
                  MetricDef(unit, True, ("overhead",) if f == "p50" else (),
                            "all CPUs at once; per boot the mean over CPUs"), v)


def _functions(c, d) -> None:
    """Instructions per op in each kernel function (insn-profile.csv)."""
    w = d.boot.workload
    mdef = MetricDef("instructions", False, (), "per kernel function, from the cache model's PCs")
    for op, funcs in d.data.functions.items():
        for f, v in funcs.items():
            c.add(d, w, f"fn.{op}.{f}", mdef, v)


def _cache(c, d) -> None:
    """Cache-model windows: misses per level, distinct lines and
    estimated cycles per op, p50 and mean; the pair as alloc + free
    means.  Only the parallel pattern is left out (its vCPUs share
    one LLC and interleave)."""
    w, params = d.boot.workload, d.data.cache_params
    note = "cache model: " + " ".join(f"{k}={params[k]}" for k in CACHE_PARAM_KEYS if k in params)
    pairs: dict[str, dict[str, float]] = defaultdict(dict)
    for name, per in (d.data.cache or {}).items():
        if "_parallel_" in name:
            continue
        for m in CACHE_REPORTED:
            st = per.get(m)
            if st is None:
                continue
            unit = CACHE_UNITS[m]
            for f in ("p50", "mean"):
                c.add(d, w, f"cache.{name}.{m}.{f}",
                      MetricDef(unit, False, ("delta", "delta_nopf"), note), float(getattr(st, f)))
            op, phase = name.rsplit("_", 1)
            pairs[f"{op}_pair.{m}"][phase] = st.mean
    for key, phases in pairs.items():
        if set(phases) == {"alloc", "free"}:
            m = key.rsplit(".", 1)[1]
            unit = CACHE_UNITS[m]
            c.add(d, w, f"cache.{key}.mean",
                  MetricDef(unit, False, ("delta", "delta_nopf"), note + "; alloc mean + free mean"),
                  phases["alloc"] + phases["free"])
