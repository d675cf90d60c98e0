"""Selective profiling (patches/packed-select) on a booted packed kernel: call
sites switched off by alloc_tag.control= and /proc/allocinfo_control, the
test module's allocations checked before, while and after (the guest side
is bench/guest/jobs/select)."""

import re

from bench import parse
from tests.guest import boot
from tests.test_system import expected, matches, module_sites

# Off from boot: one kernel site (lib/test_alloc_sites.c, the baseline
# series' benchmark sites) and, at each load, one of alloctag_test's.
KERNEL_SITE = "lib/test_alloc_sites.c:22 func:test_alloc_site_folio"
BOOT_QUERIES = ('alloc_tag.control="file test_alloc_sites.c func test_alloc_site_folio -p;'
                'module alloctag_test func site_page2 -p"')
BAD_BOOT = 'alloc_tag.control="module alloctag_test line 5-1 -p"'


def problems(b):
    """Kernel bug reports (bench/parse.py warnings()) and unload leaks in a boot's log."""
    return parse.warnings(b.dmesg) + [ln for ln in b.dmesg.splitlines() if "allocated at module unload" in ln]


def select_boot(name="select-packed", append=BOOT_QUERIES):
    b = boot(name, "packed", job="select", append=append, smp=2)
    assert b.ok, b.why()
    assert b.file("job.rc").strip() == "0", f"select job failed, see {b.dir}/result/job.log"
    return b


def control(b, snap):
    text = b.file(f"control-{snap}.txt")
    assert text, f"no control snapshot '{snap}' in {b.dir}/result"
    n, tags = parse.allocinfo_control(text)
    assert n == len(tags), f"{snap}: the header says {n} sites off, the file lists {len(tags)}"
    return tags


def module_tags_off(tags):
    """alloctag_test's sites among @tags, as {line}."""
    return {int(m.group(1)) for t in tags
            if (m := re.search(r"alloctag_test\.c:(\d+) \[alloctag_test\]", t))}


def check_snapshot(b, snap, off=(), freed=False):
    """Every alloctag_test site as expected after "alloc" (or at zero after
    "free"); the sites named in @off at zero and marked enabled:no."""
    exp = expected(b)
    lines = {site: line for line, (site, *_) in exp.items()}
    off_lines = {lines[s] for s in off}
    got = module_sites(b, snap)
    for line, (site, nbytes, calls, check) in exp.items():
        assert line in got, f"{snap}: {site} (line {line}) missing from allocinfo"
        a = got[line]
        assert a.enabled == (line not in off_lines), f"{snap}: {site} enabled:{a.enabled}"
        if freed or line in off_lines:
            assert (a.bytes, a.calls) == (0, 0), f"{snap}: {site} not at zero: {a}"
        else:
            assert matches(check, nbytes, calls, got[line]), f"{snap}: {site} ({check} {nbytes} {calls}): {a}"


def test_boot_parameter_switches_kernel_and_module_sites_off():
    b = select_boot()
    assert re.search(r"alloc_tag\.control=: 1 of \d+ kernel allocation call sites off", b.dmesg), \
        f"no boot parameter report in {b.dir}/result/dmesg.txt"
    assert control(b, "boot") == [KERNEL_SITE]
    exp = expected(b)
    page2 = next(line for line, (site, *_) in exp.items() if site == "page2")
    loaded = control(b, "loaded")
    assert KERNEL_SITE in loaded and module_tags_off(loaded) == {page2}, loaded
    check_snapshot(b, "boot-off", off={"page2"})
    check_snapshot(b, "boot-off-freed", off={"page2"}, freed=True)


def test_sites_switched_at_run_time_count_exactly_before_during_and_after():
    b = select_boot()
    steps = b.file("steps.txt")
    assert "step query module alloctag_test func site_kmalloc -p" in steps, steps
    check_snapshot(b, "runtime-off", off={"page2", "kmalloc1024"})
    assert control(b, "module-on") == [KERNEL_SITE]
    check_snapshot(b, "all-on")
    # frees of allocations made while on uncount them, off or not ...
    check_snapshot(b, "off-while-live", off={"kmalloc1024"}, freed=True)
    # ... and allocations made while off uncount nothing when freed on.
    check_snapshot(b, "on-after-alloc", freed=True)


def test_malformed_queries_are_rejected_with_one_line_and_change_nothing():
    b = select_boot()
    steps = b.file("steps.txt")
    for q in ("module alloctag_test line 9-3 -p", "module alloctag_test -p; bogus x -p"):
        assert f"step rejected {q}" in steps, steps
    assert control(b, "after-bad") == control(b, "before-bad")
    assert ("allocinfo_control: bad query 'module alloctag_test line 9-3 -p' "
            "(bad line range), nothing changed") in b.dmesg
    assert "allocinfo_control: bad query 'bogus x -p'" in b.dmesg


def test_switching_under_load_keeps_counts_exact():
    b = select_boot()
    assert control(b, "key-off") == []
    assert b.file("load-rounds.txt").split() == ["200", "0"], b.file("load-rounds.txt")
    assert b.file("load-switches.txt").split() == ["200", "0"], b.file("load-switches.txt")
    check_snapshot(b, "load", freed=True)
    assert not problems(b), problems(b)


def test_module_unloaded_while_off_and_reloaded_gets_only_the_boot_queries():
    b = select_boot()
    assert "step rmmod while off" in b.file("steps.txt")
    exp = expected(b)
    # every site of the module, the tested ones and its bookkeeping's
    assert module_tags_off(control(b, "module-off")) >= set(exp)
    assert control(b, "unloaded") == []
    page2 = next(line for line, (site, *_) in exp.items() if site == "page2")
    assert module_tags_off(control(b, "reload")) == {page2}
    check_snapshot(b, "reload-alloc", off={"page2"})
    # the last site off went with the module
    assert control(b, "end") == []


def test_malformed_boot_parameter_is_rejected_and_changes_nothing():
    b = boot("select-packed-bad", "packed", job="smoke", append=BAD_BOOT)
    assert b.ok, b.why()
    assert ("alloc_tag.control: bad query 'module alloctag_test line 5-1 -p' "
            "(bad line range), nothing changed") in b.dmesg, f"see {b.dir}/result/dmesg.txt"
    assert "kernel allocation call sites off" not in b.dmesg
    lines = parse.allocinfo(b.file("allocinfo.txt"))
    assert lines and all(a.enabled for a in lines)


def test_sites_switched_off_in_page_ext16_mode_count_exactly():
    # The same job with 16-bit indices in page_ext instead of page->flags.
    b = select_boot("select-packed-ext16", BOOT_QUERIES + " alloc_tag.page_refs=page_ext16")
    assert b.page_refs().mode == "page_ext16"
    check_snapshot(b, "boot-off", off={"page2"})
    check_snapshot(b, "runtime-off", off={"page2", "kmalloc1024"})
    check_snapshot(b, "all-on")
    check_snapshot(b, "off-while-live", off={"kmalloc1024"}, freed=True)
    check_snapshot(b, "on-after-alloc", freed=True)
    check_snapshot(b, "load", freed=True)
    assert not problems(b), problems(b)
