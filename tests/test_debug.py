"""packed-debug (DEBUG_VM, MEM_ALLOC_PROFILING_DEBUG, lockdep) runs the
stress-ng page-heavy workload without a single warning."""

from bench import parse
from tests.guest import boot

QUICK_STRESS = "vm_ops=10 mmap_ops=4 fork_ops=40 malloc_ops=1000 bigheap_ops=4 pagemove_ops=4"


def test_debug_kernel_runs_stress_ng_without_warnings():
    b = boot("debug-stress", "packed-debug", job="stress", append=QUICK_STRESS,
             smp=2, tools=True, timeout=1500)
    assert b.ok, b.why()
    rcs = [ln.split() for ln in b.file("stress-rc.txt").splitlines()]
    assert len(rcs) == 6 and all(r[1] == "0" for r in rcs), rcs
    # Its default index field: the 12 spare bits (configs/narrow.config).
    r = b.page_refs()
    assert (r.mode, r.extra.get("index_field"), r.index_bits) == ("flags", "spare", 12), r
    bad = parse.warnings(b.dmesg)
    assert not bad, "\n".join(bad[:20])


def test_page_ext16_next_to_page_owner_and_page_table_check():
    """A 2-byte page_ext client before page_owner's u64s and page_table_check's
    atomic_t: with misaligned page_ext data, x86 split-lock detection or
    lockdep/KASAN-free debug checks fire under page-table-heavy stress."""
    b = boot("debug-ext16-owner", "packed-debug", job="stress", append=QUICK_STRESS +
             " alloc_tag.page_refs=page_ext16 page_owner=on page_table_check=on",
             smp=2, tools=True, timeout=1500)
    assert b.ok, b.why()
    rcs = [ln.split() for ln in b.file("stress-rc.txt").splitlines()]
    assert len(rcs) == 6 and all(r[1] == "0" for r in rcs), rcs
    rep = b.page_refs()
    assert rep.mode == "page_ext16", rep
    # page_owner and page_table_check really share page_ext with the index
    assert parse.page_ext_allocated(b.dmesg) > rep.page_ext_bytes, (rep, parse.page_ext_allocated(b.dmesg))
    bad = parse.warnings(b.dmesg)
    assert not bad, "\n".join(bad[:20])
