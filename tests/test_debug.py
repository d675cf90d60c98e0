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
    assert parse.page_refs_report(b.dmesg).mode == "flags"
    bad = parse.warnings(b.dmesg)
    assert not bad, "\n".join(bad[:20])
