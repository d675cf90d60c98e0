"""mem: memory footprint right after boot, at each guest RAM size of
mem.conf, run by ./job.

Files: meminfo.txt, and what every boot leaves (dmesg.txt's page tag refs
line or page_ext allocation, allocinfo.txt).  Figures go to workload
mem-m<MiB>: page_ext bytes (per page, per TiB, % of RAM), MemTotal and
MemFree, allocinfo sums."""

from __future__ import annotations

from bench.parse import meminfo
from bench.workloads import MetricDef

PAGE = 4096
TIB = 1 << 40
MIB = 1 << 20


def load(r, warnings: list[str]) -> dict[str, int]:
    """/proc/meminfo after boot, {field: kB}."""
    return r.parsed("meminfo.txt", meminfo)


def figures(c, d) -> None:
    b, w = d.boot, f"mem-m{d.boot.mem_mb}"
    mi = d.data
    r = d.report
    is_ref = b.kernel == c.run.ref(b.kernel)
    peer = c.run.is_peer(b.kernel)
    if r is None and peer:
        # Upstream prints no "page tag refs" line: its page_ext
        # allocation line tells the cost, none means no page_ext at all.
        _page_ext(c, d, w, float(d.page_ext_allocated or 0), None, mi,
                  "from 'allocated N bytes of page_ext'" if d.page_ext_allocated
                  else "no page_ext allocated (no 'bytes of page_ext' line)")
    elif r is None and not is_ref:
        c.warnings.append(f"boot {b.id}: no 'page tag refs' line in dmesg.txt; "
                          f"page_ext figures left out")
    if r is not None:
        c.add(d, w, "ref_bits", MetricDef("bits"), float(r.ref_bits))
        c.add(d, w, "kernel_tags", MetricDef("tags"), float(r.kernel_tags))
    if (r is not None or is_ref) and not (peer and r is None):
        nbytes = float(r.page_ext_bytes) if r else 0.0
        npages = float(r.page_ext_pages) if r else 0.0
        note = "" if r else "no page tag refs line: kernel without profiling"
        _page_ext(c, d, w, nbytes, npages, mi, note)
    for k, name in (("MemTotal", "memtotal_kb"), ("MemFree", "memfree_kb")):
        if k in mi:
            c.add(d, w, name, MetricDef("kB", rel=("delta",)), float(mi[k]))
    if d.allocinfo is not None:
        c.add(d, w, "allocinfo_bytes", MetricDef("bytes", note="sum of /proc/allocinfo sizes"),
              float(sum(a.bytes for a in d.allocinfo)))
        c.add(d, w, "allocinfo_lines", MetricDef("tags", note="lines of /proc/allocinfo"),
              float(len(d.allocinfo)))


def _page_ext(c, d, w: str, nbytes: float, npages: float | None, mi: dict[str, int], note: str) -> None:
    ram = d.boot.mem_mb * MIB
    c.add(d, w, "page_ext_bytes", MetricDef("bytes", rel=("vs_baseline",)), nbytes, note)
    if npages is not None:
        c.add(d, w, "page_ext_pages", MetricDef("page_ext entries"), npages, note)
        if npages > 0:
            c.add(d, w, "page_ext_bytes_per_entry", MetricDef("bytes/entry"), nbytes / npages)
    total = mi.get("MemTotal", 0)
    if total > 0:
        c.add(d, w, "page_ext_bytes_per_page",
              MetricDef("bytes per 4 KiB page", note="page_ext_bytes / (MemTotal/4 KiB)"),
              nbytes / (total / (PAGE // 1024)))
    if ram > 0:
        c.add(d, w, "page_ext_pct_ram",
              MetricDef("% of RAM", note=f"of the guest's {d.boot.mem_mb} MiB"), nbytes / ram * 100)
        c.add(d, w, "page_ext_bytes_per_tib",
              MetricDef("bytes per TiB RAM", note="extrapolated linearly from this RAM size"),
              nbytes / ram * TIB)
