"""Each kernel variant boots to userspace and reports its page tag storage."""

import re

import pytest

from bench import parse
from tests.guest import boot


def test_off_boots_without_allocinfo():
    b = boot("off", "off")
    assert b.ok, b.why()
    assert b.file("allocinfo-present").strip() == "no"
    assert parse.page_refs_report(b.dmesg) is None


def test_baseline_stores_pointers_in_page_ext():
    b = boot("baseline", "baseline")
    assert b.ok, b.why()
    assert b.file("allocinfo-present").strip() == "yes"
    r = b.page_refs()
    assert (r.mode, r.ref_bits, r.index_bits) == ("page_ext", 64, 0)
    assert r.page_ext_pages > 0
    assert r.page_ext_bytes == 8 * r.page_ext_pages


def test_packed_stores_index_in_page_flags_without_page_ext():
    b = boot("packed", "packed")
    assert b.ok, b.why()
    assert b.file("allocinfo-present").strip() == "yes"
    r = b.page_refs()
    assert r.mode == "flags"
    assert 0 < r.index_bits <= 16
    # The guest layout has bits of its own: last_cpupid stays NUMA's.
    assert r.extra.get("index_field") == "spare", r
    assert r.page_ext_bytes == 0 and r.page_ext_pages == 0
    assert r.index_used == r.kernel_tags + 1
    assert "allocated" not in "".join(ln for ln in b.dmesg.splitlines() if "page_ext" in ln)


def test_packed_and_baseline_know_the_same_kernel_tags():
    base, packed = boot("baseline", "baseline").page_refs(), boot("packed", "packed").page_refs()
    # The packed series adds its KUnit suites' few call sites and the call
    # site control's query parser (lib/alloc_tag_control.c), nothing else.
    assert 0 <= packed.kernel_tags - base.kernel_tags <= 24


def test_packed_page_ext16_mode_uses_two_bytes_per_page():
    b = boot("packed-ext16", "packed", append="alloc_tag.page_refs=page_ext16")
    assert b.ok, b.why()
    r = b.page_refs()
    assert (r.mode, r.ref_bits, r.index_bits) == ("page_ext16", 16, 16)
    assert r.page_ext_pages > 0 and r.page_ext_bytes == 2 * r.page_ext_pages
    assert b.file("allocinfo-present").strip() == "yes"


def test_packed_falls_back_to_page_ext_when_tags_do_not_fit():
    b = boot("packed-fallback", "packed", append="alloc_tag.index_limit=100")
    assert b.ok, b.why()
    assert "do not fit flags" in b.dmesg
    r = b.page_refs()
    assert (r.mode, r.ref_bits) == ("page_ext", 64)
    assert r.page_ext_bytes == 8 * r.page_ext_pages > 0
    assert b.file("mem_profiling").strip() == "1"


@pytest.mark.parametrize("arg,message", [
    ("alloc_tag.page_refs=bogus", "invalid alloc_tag.page_refs=bogus"),
    ("alloc_tag.index_limit=-3", "invalid alloc_tag.index_limit=-3"),
    ("alloc_tag.min_index_bits=17", "invalid alloc_tag.min_index_bits=17"),
    ("sysctl.vm.mem_profiling=2", "invalid sysctl.vm.mem_profiling=2"),
    # kstrtobool() reads only the first letter: this was taken for 0
    ("sysctl.vm.mem_profiling=neverland", "invalid sysctl.vm.mem_profiling=neverland"),
    # 6.13+ syntax: ",compressed" only after 0 or 1
    ("sysctl.vm.mem_profiling=never,compressed", "invalid sysctl.vm.mem_profiling=never,compressed"),
    ("sysctl.vm.mem_profiling=1,compresed", "invalid sysctl.vm.mem_profiling=1,compresed"),
])
def test_invalid_boot_parameter_is_rejected_with_a_message(arg, message):
    b = boot("packed-bad-" + re.sub(r"[^a-z0-9]+", "-", arg), "packed", append=arg)
    assert b.ok, b.why()
    assert message in b.dmesg
    assert b.page_refs().mode == "flags"
    assert b.file("mem_profiling").strip() == "1"


@pytest.mark.parametrize("variant", ["baseline", "packed"])
def test_garbage_written_to_the_sysctl_is_refused(variant):
    b = boot(f"sysctl-{variant}", variant, job="sysctl")
    assert b.ok, b.why()
    lines = b.file("sysctl.txt").splitlines()
    assert len(lines) == (6 if variant == "packed" else 5), lines
    for ln in lines[:3]:
        assert "rc=1 now=1" in ln, ln
    assert lines[3] == "off now=0" and lines[4] == "on now=1"
    if variant == "packed":
        # 6.13+ syntax at run time: accepted while indices are in use.
        assert lines[5] == "compressed 0 rc=0 now=0 compressed=1", lines[5]


def test_upstream_compressed_syntax_and_sysctl():
    """Linux 6.13+ command lines work unchanged: ",compressed" is accepted,
    /proc/sys/vm/mem_profiling_compressed says whether indices are used, and
    an explicit alloc_tag.page_refs=page_ext wins (and says so)."""
    b = boot("packed-compressed", "packed", append="sysctl.vm.mem_profiling=1,compressed")
    assert b.ok, b.why()
    assert "invalid sysctl" not in b.dmesg
    assert b.page_refs().mode == "flags"
    assert b.file("sysctl-mem_profiling").strip() == "1"
    assert b.file("sysctl-mem_profiling_compressed").strip() == "1"
    # The boot replays sysctl.* arguments through the sysctl handler.
    assert "Failed to set sysctl parameter" not in b.dmesg
    p = boot("packed-compressed-pageext", "packed",
             append="alloc_tag.page_refs=page_ext sysctl.vm.mem_profiling=1,compressed")
    assert p.ok, p.why()
    assert p.page_refs().mode == "page_ext"
    assert "alloc_tag.page_refs=page_ext takes precedence" in p.dmesg
    assert p.file("sysctl-mem_profiling_compressed").strip() == "0"
    assert "Failed to set sysctl parameter" not in p.dmesg
    z = boot("packed-compressed-off", "packed", append="sysctl.vm.mem_profiling=0,compressed")
    assert z.ok, z.why()
    assert "invalid sysctl" not in z.dmesg and z.file("sysctl-mem_profiling").strip() == "0"
    assert "Failed to set sysctl parameter" not in z.dmesg


def test_never_stores_nothing_and_numbers_nothing():
    """sysctl.vm.mem_profiling=never: profiling cannot be switched on, so no
    storage mode, no index table and no index bits are set up."""
    b = boot("packed-never", "packed", append="sysctl.vm.mem_profiling=never")
    assert b.ok, b.why()
    assert "invalid sysctl" not in b.dmesg
    r = b.page_refs()
    assert (r.mode, r.index_bits, r.index_used, r.page_ext_bytes) == ("none", 0, 0, 0), r
    assert r.extra.get("index_field") == "none", r
    assert b.file("mem_profiling").strip() == "0"


def test_two_boots_side_by_side_are_byte_identical():
    """Under -icount a boot must replay exactly, also when another runs next
    to it: nothing host-timed may reach the guest (a virtio-serial device did,
    README "Determinism").  Two packed boots at once, every result file and
    the console equal byte for byte."""
    import filecmp
    import subprocess
    from tests.guest import REPO, TEST_DIR

    dirs = [TEST_DIR / f"replay-{i}" for i in (1, 2)]
    procs = [subprocess.Popen([str(REPO / "bench/boot/boot"), "-k", "packed", "-j", "smoke",
                               "-o", str(d), "-t", "icount", "-w", "600"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for d in dirs]
    for p in procs:
        p.wait()
    for d in dirs:
        assert (d / "status").read_text().strip() == "ok", f"boot failed: {d}/console.log"
    a, b = (d / "result" for d in dirs)
    names = sorted(p.name for p in a.iterdir())
    assert "dmesg.txt" in names and names == sorted(p.name for p in b.iterdir())
    differ = [n for n in names if not filecmp.cmp(a / n, b / n, shallow=False)]
    assert differ == [], f"boots of one kernel differ in {differ} ({a} vs {b})"
    assert (dirs[0] / "console.log").read_bytes() == (dirs[1] / "console.log").read_bytes()


def test_both_trees_boot_with_the_same_preemption_model():
    """configs/guest.config fixes full preemption for 6.12 and 7.3 alike: the
    banner's build flags are "SMP PREEMPT", neither PREEMPT_DYNAMIC (6.12's
    defconfig) nor PREEMPT_LAZY (7.3's default)."""
    banners = {}
    for name, variant, append in (("off", "off", ""),
                                  ("up-packed", "up-packed", "sysctl.vm.mem_profiling=1,compressed")):
        b = boot(name, variant, append=append)
        assert b.ok, b.why()
        m = re.search(r"Linux version (\S+) .* #\d+ (SMP(?: [A-Z_]+)*)", b.dmesg, re.M)
        assert m, f"no 'Linux version' banner with build flags in {b.dir}/result/dmesg.txt"
        banners[variant] = m.group(1, 2)
    assert {flags for _, flags in banners.values()} == {"SMP PREEMPT"}, banners
    assert banners["off"][0].startswith("6.12") and banners["up-packed"][0].startswith("7.3"), banners
