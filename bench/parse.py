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
    return settings, out


def warnings(log: str) -> list[str]:
    """Kernel log lines that report a bug: WARN, BUG, lockdep, tag errors."""
    pat = re.compile(r"(WARNING:|BUG:|Oops|possible circular locking|"
                     r"possible recursive locking|inconsistent lock state|"
                     r"alloc_tag was not (set|cleared)|current->alloc_tag not set|"
                     r"Kernel panic)")
    return [ln for ln in log.splitlines() if pat.search(ln)]
