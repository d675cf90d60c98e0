"""The series for Linux 7.3 (patches/packed-refs-7.3) booted as users ask
for it: sysctl.vm.mem_profiling=1,compressed.  Attribution and the module
parameter case are in test_system.py; this file checks the storage choices:
compressed mode kept, the fallback to page_ext at boot, and module tags past
the index space counted at an overflow line instead of profiling going off."""

import re

from bench import parse
from tests.guest import boot

COMPRESSED = "sysctl.vm.mem_profiling=1,compressed"
OVERFLOW_SITE = re.compile(r"mm/alloc_tag\.c:\d+ func:module_page_index_overflow")


def sysctl(b, name):
    return b.file(f"sysctl-{name}").strip()


def kernel_tag_count(b):
    """Allocation tags of the kernel image: allocinfo lines without a module."""
    lines = parse.allocinfo(b.file("allocinfo.txt"))
    assert lines, f"no /proc/allocinfo in {b.dir}/result"
    return sum(1 for a in lines if "[" not in a.tag)


def test_compressed_mode_stays_on_with_the_inline_hooks():
    b = boot("up-packed", "up-packed", append=COMPRESSED)
    assert b.ok, b.why()
    assert sysctl(b, "mem_profiling") == "1" and sysctl(b, "mem_profiling_compressed") == "1"
    assert "Memory allocation profiling is disabled" not in b.dmesg
    assert "using page_ext instead" not in b.dmesg
    # The overflow line exists from boot, idle: no module overflowed.
    over = [a for a in parse.allocinfo(b.file("allocinfo.txt")) if OVERFLOW_SITE.search(a.tag)]
    assert [(a.bytes, a.calls) for a in over] == [(0, 0)], over


def test_kernel_tags_that_do_not_fit_go_to_page_ext_and_profiling_stays_on():
    b = boot("up-packed-fallback", "up-packed", append=COMPRESSED + " alloc_tag.index_limit=100")
    assert b.ok, b.why()
    line = [ln for ln in b.dmesg.splitlines() if "do not fit" in ln]
    assert len(line) == 1 and "using page_ext instead" in line[0], line
    assert sysctl(b, "mem_profiling") == "1" and sysctl(b, "mem_profiling_compressed") == "0"
    assert b.file("allocinfo-present").strip() == "yes"
    assert sum(a.bytes for a in parse.allocinfo(b.file("allocinfo.txt"))) > 0


def test_module_tags_past_the_index_space_are_counted_at_the_overflow_line():
    plain = boot("up-packed", "up-packed", append=COMPRESSED)
    assert plain.ok, plain.why()
    k = kernel_tag_count(plain)
    # Kernel indexes are 2..k+1: leave the test module three of its own.
    limit = k + 4
    b = boot("systest-up-packed-limit", "up-packed", job="systest", smp=2,
             append=f"{COMPRESSED} alloc_tag.index_limit={limit}")
    assert b.ok, b.why()
    assert b.file("job.rc").strip() == "0", f"systest job failed, see {b.dir}/result/job.log"
    assert sysctl(b, "mem_profiling") == "1" and sysctl(b, "mem_profiling_compressed") == "1"
    note = [ln for ln in b.dmesg.splitlines() if "got no page tag index" in ln]
    assert any("alloctag_test:" in ln and "module_page_index_overflow" not in ln
               and "mm/alloc_tag.c:" in ln for ln in note), note
    over = [a for a in parse.allocinfo(b.file("allocinfo-alloc.txt")) if OVERFLOW_SITE.search(a.tag)]
    assert len(over) == 1 and over[0].bytes > 0 and over[0].calls > 0, over
    # Freed again: the overflow line goes back to zero with the module's pages.
    after = [a for a in parse.allocinfo(b.file("allocinfo-free.txt")) if OVERFLOW_SITE.search(a.tag)]
    assert [(a.bytes, a.calls) for a in after] == [(0, 0)], after


# Debian's 7.3 page->flags layout (configs/distro.config) leaves no spare
# bits: compressed mode takes the last_cpupid bits where NUMA balancing
# cannot run, and keeps profiling on in page_ext where it may.
UP_DISTRO = "up-packed-distro"


def up_numab(name, append=""):
    from tests.test_distro import numab
    b = numab(f"up-{name}", f"{COMPRESSED} {append}".strip(), variant=UP_DISTRO)
    assert "Memory allocation profiling is disabled" not in b.dmesg
    assert sysctl(b, "mem_profiling") == "1"
    return b


def borrowed(b, why):
    from tests.test_distro import attributed, memmap_allones, pgp, refused
    assert sysctl(b, "mem_profiling_compressed") == "1"
    # Lent before memmap_init(): no struct page starts with NUMA balancing's
    # all-ones "unset" there, which no index maps (reserved pages included).
    assert memmap_allones(b)[1] == 0
    # %pGp names the borrowed bits by what they hold: a module tag's index.
    f = pgp(b)
    assert "lastcpupid" not in f and int(f["alloctag"]) > 1, f
    assert f"page tag indexes in the last_cpupid page flag bits: NUMA balancing cannot run ({why})" \
        in b.dmesg
    attributed(b)
    refused(b)


def test_up_distro_layout_one_node_borrows_last_cpupid():
    b = up_numab("1node")
    borrowed(b, "one possible node")
    assert b.file("numab-end.txt").strip() == "0"


def test_up_distro_layout_two_nodes_keep_numa_balancing_and_use_page_ext():
    from tests.test_distro import numa_keeps_field
    b = up_numab("2nodes", "numa=fake=2")
    assert sysctl(b, "mem_profiling_compressed") == "0"
    assert ("which NUMA balancing may use (more than one possible node): using page_ext instead"
            in b.dmesg)
    numa_keeps_field(b)


def test_up_distro_layout_two_nodes_with_numa_balancing_disabled_borrow():
    b = up_numab("2nodes-disable", "numa=fake=2 numa_balancing=disable")
    borrowed(b, "numa_balancing=disable")
