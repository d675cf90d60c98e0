"""mem: memory footprint right after boot, at each guest RAM size of
mem.conf, run by ./job.

Files: meminfo.txt, slabinfo.txt (boots before 20261206 have none), and
what every boot leaves (dmesg.txt's page tag refs line or page_ext
allocation, allocinfo.txt).  Figures go to workload mem-m<MiB>: page_ext
bytes (per page frame, per TiB, % of RAM), MemTotal and MemFree, allocinfo sums,
and the slab object extension vectors: their bytes, how many, and bytes per
object slot of the caches whose vectors /proc/allocinfo counts."""

from __future__ import annotations

from dataclasses import dataclass

from bench.parse import ParseError, SlabinfoLine, meminfo, obj_ext_vectors, slabinfo
from bench.workloads import MetricDef


@dataclass
class MemData:
    meminfo: dict[str, int]
    slabinfo: dict[str, SlabinfoLine] | None

TIB = 1 << 40
MIB = 1 << 20


def load(r, warnings: list[str]) -> MemData:
    """/proc/meminfo ({field: kB}) and /proc/slabinfo after boot."""
    slabs = r.parsed("slabinfo.txt", slabinfo) if r.exists("slabinfo.txt") else None
    return MemData(r.parsed("meminfo.txt", meminfo), slabs)


def figures(c, d) -> None:
    b, w = d.boot, f"mem-m{d.boot.mem_mb}"
    mi = d.data.meminfo
    r = d.report
    is_ref = b.kernel == c.run.ref(b.kernel)
    peer = c.run.is_peer(b.kernel)
    if r is None and peer:
        # Upstream prints no "page tag refs" line: its page_ext
        # allocation line tells the cost, none means no page_ext at all.
        _page_ext(c, d, w, float(d.page_ext_allocated or 0), None,
                  "from 'allocated N bytes of page_ext'; the log names no page frame count"
                  if d.page_ext_allocated else "no page_ext allocated (no 'bytes of page_ext' line)")
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
        _page_ext(c, d, w, nbytes, npages, note)
    for k, name in (("MemTotal", "memtotal_kb"), ("MemFree", "memfree_kb")):
        if k in mi:
            c.add(d, w, name, MetricDef("kB", rel=("delta",)), float(mi[k]))
    if d.allocinfo is not None:
        c.add(d, w, "allocinfo_bytes", MetricDef("bytes", note="sum of /proc/allocinfo sizes"),
              float(sum(a.bytes for a in d.allocinfo)))
        c.add(d, w, "allocinfo_lines", MetricDef("tags", note="lines of /proc/allocinfo"),
              float(len(d.allocinfo)))
    if d.allocinfo is not None and d.data.slabinfo is not None:
        _obj_ext(c, d, w)


def _obj_ext(c, d, w: str) -> None:
    try:
        counts = obj_ext_vectors(d.allocinfo, d.data.slabinfo)
    except ParseError as e:
        c.warnings.append(f"boot {d.boot.id}: {e}; slab vector figures left out")
        return
    obj_ext_rows(c, d, w, counts)


def obj_ext_rows(c, d, w: str, counts: tuple[int, int, int], prefix: str = "", when: str = "",
                 rel: tuple[str, ...] = ()) -> None:
    """The slab vector rows of one snapshot, bench.parse.obj_ext_vectors()'s
    (bytes, vectors, object slots): metrics <prefix>objext_bytes, _vectors and
    _bytes_per_slot, their notes ending in ", <when>" if given (the objext
    workload has two snapshots)."""
    nbytes, vectors, slots = counts
    at = f", {when}" if when else ""
    c.add(d, w, f"{prefix}objext_bytes", MetricDef("bytes", rel=rel, note=f"allocinfo alloc_slab_obj_exts(){at}"),
          float(nbytes))
    c.add(d, w, f"{prefix}objext_vectors",
          MetricDef("vectors", note=f"calls of alloc_slab_obj_exts(): one per slab{at}"), float(vectors))
    if slots > 0:
        c.add(d, w, f"{prefix}objext_bytes_per_slot",
              MetricDef("bytes per object slot",
                        note="objext_bytes / slots (slabinfo num_objs) of caches other than "
                             f"kmalloc-<n>, kmem_cache, kmem_cache_node{at}"),
              nbytes / slots)


# Bytes per page frame, the one definition the report, slide, summary and
# cover letter quote: page_ext bytes over the page frames the kernel has
# page_ext for, both its own numbers (the page tag refs line).  MemTotal's
# pages are fewer (reserved memory, holes) and gave 8.22 B for an 8-byte
# entry; upstream logs no frame count, so it has no figure unless it has
# no page_ext bytes at all.
BYTES_PER_FRAME = MetricDef("bytes per 4 KiB page frame",
                            note="page_ext_bytes / page_ext_pages (page frames with page_ext, the kernel's count)")


def _page_ext(c, d, w: str, nbytes: float, npages: float | None, note: str) -> None:
    ram = d.boot.mem_mb * MIB
    c.add(d, w, "page_ext_bytes", MetricDef("bytes", rel=("vs_baseline",)), nbytes, note)
    if npages is not None:
        c.add(d, w, "page_ext_pages", MetricDef("page_ext entries"), npages, note)
    if npages:
        c.add(d, w, "page_ext_bytes_per_page", BYTES_PER_FRAME, nbytes / npages)
    elif nbytes == 0:
        c.add(d, w, "page_ext_bytes_per_page", BYTES_PER_FRAME, 0.0, "no page_ext bytes")
    if ram > 0:
        c.add(d, w, "page_ext_pct_ram",
              MetricDef("% of RAM", note=f"of the guest's {d.boot.mem_mb} MiB"), nbytes / ram * 100)
        c.add(d, w, "page_ext_bytes_per_tib",
              MetricDef("bytes per TiB RAM", note="extrapolated linearly from this RAM size"),
              nbytes / ram * TIB)
