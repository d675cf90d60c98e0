"""Parse what every guest boot leaves behind, and the formats several jobs
share: kernel log lines, KTAP, allocinfo, meminfo, vmstat, perf stat and
the cache-model plugin's CSV.  A benchmark workload's own output (the
alloc_bench CSV, stress-ng's YAML, fio's JSON) is parsed in its folder,
bench/workloads/<job>/parse.py; nothing in analysis/ parses guest output.
Pure functions over text; no I/O besides reading the files a caller names."""

from __future__ import annotations

import math
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
    # False for a call site switched off (" enabled:no" after the tag,
    # patches/packed-select); the tag is the same either way.
    enabled: bool = True
    # (bytes, calls) charged to a memory cgroup (" accounted:B/C" after the
    # tag, MEMCG kernels with patches/packed-select), None where not shown.
    accounted: tuple[int, int] | None = None


DISABLED_MARK = " enabled:no"
ACCOUNTED_RE = re.compile(r" accounted:(-?\d+)/(\d+)\Z")


def _data_lines(text: str, header: str, what: str) -> list[str]:
    """The lines of a /proc file whose first line starts with @header,
    without that line, comments and blank lines."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith(header):
        raise ParseError(f"not {what} output: missing version header")
    return [ln for ln in lines[1:] if ln.strip() and not ln.startswith("#")]


def allocinfo(text: str) -> list[AllocinfoLine]:
    """Entries of /proc/allocinfo (header lines skipped)."""
    out = []
    for ln in _data_lines(text, "allocinfo - version:", "/proc/allocinfo"):
        parts = ln.split(None, 2)
        if len(parts) < 3:
            raise ParseError(f"malformed allocinfo line: {ln!r}")
        try:
            tag = parts[2].strip()
            enabled = not tag.endswith(DISABLED_MARK)
            if not enabled:
                tag = tag[:-len(DISABLED_MARK)]
            acct = None
            m = ACCOUNTED_RE.search(tag)
            if m:
                acct = (int(m.group(1)), int(m.group(2)))
                tag = tag[:m.start()]
            out.append(AllocinfoLine(int(parts[0]), int(parts[1]), tag, enabled, acct))
        except ValueError as e:
            raise ParseError(f"malformed allocinfo line: {ln!r}") from e
    return out


def allocinfo_accounted(text: str) -> dict[str, tuple[int, int]]:
    """/proc/allocinfo_accounted: {"accounted": (bytes, calls),
    "unaccounted": (bytes, calls)}."""
    out = {}
    for ln in _data_lines(text, "allocinfo_accounted - version:", "/proc/allocinfo_accounted"):
        parts = ln.split()
        if len(parts) != 3 or parts[2] not in ("accounted", "unaccounted"):
            raise ParseError(f"malformed allocinfo_accounted line: {ln!r}")
        try:
            out[parts[2]] = (int(parts[0]), int(parts[1]))
        except ValueError as e:
            raise ParseError(f"malformed allocinfo_accounted line: {ln!r}") from e
    if set(out) != {"accounted", "unaccounted"}:
        raise ParseError(f"allocinfo_accounted without both parts: {sorted(out)}")
    return out


CONTROL_HEADER_RE = re.compile(r"# (\d+) call sites off\Z")


def allocinfo_control(text: str) -> tuple[int, list[str]]:
    """/proc/allocinfo_control read back: (the number of call sites off it
    states, the tags it lists)."""
    lines = text.splitlines()
    m = CONTROL_HEADER_RE.match(lines[0]) if lines else None
    if not m:
        raise ParseError("not /proc/allocinfo_control output: missing '# N call sites off' header")
    return int(m.group(1)), [ln.strip() for ln in lines[1:] if ln.strip()]


@dataclass(frozen=True)
class SlabinfoLine:
    name: str
    active_objs: int
    num_objs: int
    objsize: int
    objperslab: int
    pagesperslab: int


def slabinfo(text: str) -> dict[str, SlabinfoLine]:
    """/proc/slabinfo (version 2.1) as {cache name: line}."""
    out = {}
    for ln in _data_lines(text, "slabinfo - version: 2.", "/proc/slabinfo"):
        parts = ln.split()
        try:
            line = SlabinfoLine(parts[0], *(int(x) for x in parts[1:6]))
        except (ValueError, TypeError, IndexError):
            raise ParseError(f"malformed slabinfo line: {ln!r}") from None
        out[line.name] = line
    return out


# The allocation site of slab object extension vectors (mm/slub.c).
OBJ_EXT_SITE = re.compile(r"mm/slub\.c:\d+ func:alloc_slab_obj_exts\b")
# Caches whose slabs never have a counted vector: the normal kmalloc caches
# allocate theirs with __GFP_NO_OBJ_EXT (so the vectors carry no tag), and
# kmem_cache/kmem_cache_node are SLAB_NO_OBJ_EXT.
_UNCOUNTED_CACHE = re.compile(r"kmalloc-\d+k?|kmem_cache|kmem_cache_node")


def obj_ext_vectors(lines: list[AllocinfoLine], slabs: dict[str, SlabinfoLine]) -> tuple[int, int, int]:
    """(bytes, vectors, object slots) of the slab object extension vectors
    /proc/allocinfo counts: bytes and calls of alloc_slab_obj_exts(), and the
    object slots of every cache whose vectors carry a tag."""
    vec = [a for a in lines if OBJ_EXT_SITE.search(a.tag)]
    if not vec:
        raise ParseError("no alloc_slab_obj_exts line in allocinfo")
    slots = sum(s.num_objs for s in slabs.values() if not _UNCOUNTED_CACHE.fullmatch(s.name))
    return sum(a.bytes for a in vec), sum(a.calls for a in vec), slots


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


@dataclass(frozen=True)
class PerfCounter:
    value: float | None  # None: not supported / not counted
    unit: str
    supported: bool


def number(s: str) -> float | None:
    """s as a finite float, None if it is not one."""
    try:
        v = float(s)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def perf_stat(text: str) -> dict[str, PerfCounter]:
    """perf stat -x, output: {event: PerfCounter}."""
    out: dict[str, PerfCounter] = {}
    for ln in text.splitlines():
        if not ln.strip() or ln.startswith("#"):
            continue
        parts = ln.split(",")
        if len(parts) < 3 or not parts[2]:
            raise ParseError(f"malformed perf stat line: {ln!r}")
        raw, unit, event = parts[0].strip(), parts[1].strip(), parts[2].strip()
        if raw.startswith("<"):  # <not supported>, <not counted>
            out[event] = PerfCounter(None, unit, False)
            continue
        v = number(raw)
        if v is None:
            raise ParseError(f"malformed perf stat value: {ln!r}")
        out[event] = PerfCounter(v, unit, True)
    return out


def warnings(log: str) -> list[str]:
    """Kernel log lines that report a bug: WARN, BUG, lockdep, tag errors."""
    pat = re.compile(r"(WARNING:|BUG:|Oops|possible circular locking|"
                     r"possible recursive locking|inconsistent lock state|"
                     r"alloc_tag was not (set|cleared)|current->alloc_tag not set|"
                     r"Kernel panic|UBSAN:)")
    return [ln for ln in log.splitlines() if pat.search(ln)]


# The cache-model plugin (bench/qemu-plugin) writes one CSV per boot, next to
# result/; which op a window label stands for is alloc_bench's business
# (bench/workloads/micro/parse.py window_name).
CACHE_FIELDS = ("count", "min", "p50", "p90", "p99", "mean", "max")
CACHE_METRICS = ("insns", "loads", "stores", "lines", "l1_miss", "l2_miss", "llc_miss",
                 "split", "est_cycles")


@dataclass
class CacheStat:
    count: int
    min: int
    p50: int
    p90: int
    p99: int
    mean: float
    max: int


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
