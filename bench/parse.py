"""Parse what a guest boot leaves behind: kernel log lines, KTAP, allocinfo,
meminfo and the alloc_bench CSV.  Pure functions over text; no I/O besides
reading the files a caller names."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

REPORT_RE = re.compile(r"alloc_tag: page tag refs: (?P<kv>.*)$", re.M)
KV_RE = re.compile(r"(\w+)=(\S+)")


class ParseError(ValueError):
    """Input that does not have the expected shape."""


@dataclass
class PageRefsReport:
    """The kernel's one-line report of how page tag references are stored."""

    mode: str
    ref_bits: int
    kernel_tags: int
    index_bits: int
    index_used: int
    page_ext_bytes: int
    page_ext_pages: int
    extra: dict = field(default_factory=dict)


def page_refs_report(log: str) -> PageRefsReport | None:
    """The last "page tag refs:" line of a kernel log, or None."""
    matches = list(REPORT_RE.finditer(log))
    if not matches:
        return None
    kv = dict(KV_RE.findall(matches[-1].group("kv")))
    try:
        ints = {k: int(kv.pop(k)) for k in ("ref_bits", "kernel_tags", "index_bits",
                                            "index_used", "page_ext_bytes",
                                            "page_ext_pages")}
        mode = kv.pop("mode")
    except (KeyError, ValueError) as e:
        raise ParseError(f"malformed page tag refs line: {matches[-1].group(0)!r}") from e
    return PageRefsReport(mode=mode, extra=kv, **ints)


@dataclass
class AllocinfoLine:
    bytes: int
    calls: int
    tag: str


def allocinfo(text: str) -> list[AllocinfoLine]:
    """Entries of /proc/allocinfo (header lines skipped)."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("allocinfo - version:"):
        raise ParseError("not /proc/allocinfo output: missing version header")
    out = []
    for ln in lines[1:]:
        if ln.startswith("#") or not ln.strip():
            continue
        parts = ln.split(None, 2)
        if len(parts) < 3:
            raise ParseError(f"malformed allocinfo line: {ln!r}")
        try:
            out.append(AllocinfoLine(int(parts[0]), int(parts[1]), parts[2].strip()))
        except ValueError as e:
            raise ParseError(f"malformed allocinfo line: {ln!r}") from e
    return out


def meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo as {field: kB}."""
    out = {}
    for ln in text.splitlines():
        m = re.match(r"(\w+(?:\(\w+\))?):\s+(\d+)", ln)
        if m:
            out[m.group(1)] = int(m.group(2))
    if "MemTotal" not in out:
        raise ParseError("not /proc/meminfo output: no MemTotal")
    return out


@dataclass
class KtapCase:
    suite: str
    name: str
    result: str  # ok, not ok, skip
    directive: str = ""


def ktap(log: str) -> list[KtapCase]:
    """Test cases from KUnit's KTAP output in a kernel log."""
    cases = []
    suite = None
    for ln in log.splitlines():
        ln = re.sub(r"^\[[^\]]*\] ?", "", ln)
        m = re.match(r"\s*# Subtest: (\S+)", ln)
        if m:
            suite = m.group(1)
            continue
        m = re.match(r"(\s+)(ok|not ok) \d+ (\S+)(?:\s+#\s*(.*))?$", ln)
        if m and suite:
            result = m.group(2)
            directive = (m.group(4) or "").strip()
            if result == "ok" and directive.upper().startswith("SKIP"):
                result = "skip"
            cases.append(KtapCase(suite, m.group(3), result, directive))
    return cases


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


def warnings(log: str) -> list[str]:
    """Kernel log lines that report a bug: WARN, BUG, lockdep, tag errors."""
    pat = re.compile(r"(WARNING:|BUG:|Oops|possible circular locking|"
                     r"possible recursive locking|inconsistent lock state|"
                     r"alloc_tag was not (set|cleared)|current->alloc_tag not set|"
                     r"Kernel panic|UBSAN:)")
    return [ln for ln in log.splitlines() if pat.search(ln)]


LABEL_RE = re.compile(r"^#label (\d+) (\S+)$", re.M)
CACHE_FIELDS = ("count", "min", "p50", "p90", "p99", "mean", "max")
CACHE_METRICS = ("insns", "loads", "stores", "lines", "l1_miss", "l2_miss", "llc_miss",
                 "split", "est_cycles")
# alloc_bench window labels: op << 4 | pattern << 1 | free
PATTERNS = {0: "", 1: "_batch", 2: "_parallel"}


@dataclass
class CacheStat:
    count: int
    min: int
    p50: int
    p90: int
    p99: int
    mean: float
    max: int


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


def cachesim(text: str) -> tuple[dict[str, str], dict[int, dict[str, CacheStat]]]:
    """The cache-model plugin's CSV: (parameters, {label: {metric: stats}}).
    Its "# end" line is written last, so without it the output is cut short."""
    lines = text.splitlines()
    if not lines or lines[-1] != "# end":
        raise ParseError("cachesim output is truncated (no '# end' line)")
    if not lines[0].startswith("# cachesim "):
        raise ParseError("not cachesim output: no '# cachesim' parameter line")
    params = dict(re.findall(r"(\w+)=(\S+)", lines[0]))
    out: dict[int, dict[str, CacheStat]] = {}
    for ln in lines[1:-1]:
        if ln.startswith("label,"):
            continue
        parts = ln.split(",")
        if len(parts) != 9 or parts[1] not in CACHE_METRICS:
            raise ParseError(f"malformed cachesim line: {ln!r}")
        try:
            vals = [int(parts[0])] + [int(x) for x in parts[2:7]] + [float(parts[7]), int(parts[8])]
        except ValueError as e:
            raise ParseError(f"malformed cachesim line: {ln!r}") from e
        st = CacheStat(*vals[1:])
        if st.count <= 0 or not st.min <= st.p50 <= st.p90 <= st.p99 <= st.max:
            raise ParseError(f"inconsistent cachesim line: {ln!r}")
        out.setdefault(vals[0], {})[parts[1]] = st
    if not out:
        raise ParseError("cachesim output has no windows: the guest set no markers")
    return params, out


PAGE_EXT_ALLOC_RE = re.compile(r"allocated (\d+) bytes of page_ext$", re.M)


def page_ext_allocated(log: str) -> int | None:
    """Bytes of page_ext the kernel allocated at boot ("allocated N bytes of
    page_ext"), or None when it allocated none (no page_ext client)."""
    m = PAGE_EXT_ALLOC_RE.findall(log)
    return sum(int(x) for x in m) if m else None


def vmstat_pgalloc(text: str) -> int:
    """Sum of the pgalloc_* counters of /proc/vmstat."""
    total, seen = 0, False
    for ln in text.splitlines():
        parts = ln.split()
        if len(parts) == 2 and parts[0].startswith("pgalloc_"):
            try:
                total += int(parts[1])
            except ValueError as e:
                raise ParseError(f"malformed /proc/vmstat line: {ln!r}") from e
            seen = True
    if not seen:
        raise ParseError("not /proc/vmstat output: no pgalloc_* counters")
    return total
