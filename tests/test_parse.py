"""The parsers of guest output (bench/parse.py, bench/workloads/<job>/parse.py)
read the guest's files correctly and reject bad ones."""

import re
from pathlib import Path

import pytest

from bench import parse
from bench.workloads.micro import parse as micro
from bench.workloads.stress import parse as stress
from tests import guest

pytestmark = pytest.mark.unit

LOG = """[    0.50] foo
[    2.10] alloc_tag: page tag refs: mode=flags ref_bits=16 kernel_tags=3912 index_bits=16 index_used=3913 index_max=65535 page_ext_bytes=0 page_ext_pages=0
"""


def test_page_refs_report_reads_every_field():
    r = parse.page_refs_report(LOG)
    assert (r.mode, r.ref_bits, r.kernel_tags, r.index_bits, r.index_used) == \
        ("flags", 16, 3912, 16, 3913)
    assert (r.page_ext_bytes, r.page_ext_pages) == (0, 0)
    assert r.extra == {"index_max": "65535"}


def test_page_refs_report_absent_and_malformed():
    assert parse.page_refs_report("nothing here") is None
    with pytest.raises(parse.ParseError):
        parse.page_refs_report("alloc_tag: page tag refs: mode=flags ref_bits=x")


def test_allocinfo_entries_and_header_check():
    text = ("allocinfo - version: 1.0\n#     <size>  <calls> <tag info>\n"
            "        4096        1 mm/foo.c:12 func:foo \n"
            "       8192        2 lib/bar.c:3 [mod] func:bar \n")
    lines = parse.allocinfo(text)
    assert [(a.bytes, a.calls, a.tag) for a in lines] == [
        (4096, 1, "mm/foo.c:12 func:foo"), (8192, 2, "lib/bar.c:3 [mod] func:bar")]
    with pytest.raises(parse.ParseError):
        parse.allocinfo("garbage\n1 2 3\n")
    with pytest.raises(parse.ParseError):
        parse.allocinfo("allocinfo - version: 1.0\nnotanumber 1 x\n")


def test_allocinfo_site_switched_off_keeps_its_tag():
    text = ("allocinfo - version: 1.0\n"
            "           0        0 mm/foo.c:12 func:foo enabled:no \n"
            "        4096        1 mm/foo.c:13 func:foo \n")
    lines = parse.allocinfo(text)
    assert [(a.tag, a.enabled) for a in lines] == [
        ("mm/foo.c:12 func:foo", False), ("mm/foo.c:13 func:foo", True)]


def test_allocinfo_accounted_key_and_summary():
    text = ("allocinfo - version: 1.0\n"
            "        8192        2 mm/foo.c:12 func:foo accounted:4096/1 \n"
            "        4096        1 mm/foo.c:13 func:bar accounted:4096/1 enabled:no \n"
            "        4096        1 mm/foo.c:14 func:baz \n")
    lines = parse.allocinfo(text)
    assert [(a.tag, a.accounted, a.enabled) for a in lines] == [
        ("mm/foo.c:12 func:foo", (4096, 1), True), ("mm/foo.c:13 func:bar", (4096, 1), False),
        ("mm/foo.c:14 func:baz", None, True)]
    summary = ("allocinfo_accounted - version: 1.0\n#     <size>  <calls> <part>\n"
               "     1048576      300 accounted\n    99999999    40000 unaccounted\n")
    assert parse.allocinfo_accounted(summary) == {"accounted": (1048576, 300),
                                                  "unaccounted": (99999999, 40000)}
    for bad in ("", "allocinfo_accounted - version: 1.0\n1 2 accounted\n",
                "allocinfo_accounted - version: 1.0\nx 2 accounted\n1 2 unaccounted\n"):
        with pytest.raises(parse.ParseError):
            parse.allocinfo_accounted(bad)


def test_allocinfo_control_count_and_sites():
    assert parse.allocinfo_control("# 2 call sites off\nmm/a.c:1 func:a\nx.c:2 [m] func:b\n") == \
        (2, ["mm/a.c:1 func:a", "x.c:2 [m] func:b"])
    assert parse.allocinfo_control("# 0 call sites off\n") == (0, [])
    for bad in ("", "mm/a.c:1 func:a\n", "# x call sites off\n"):
        with pytest.raises(parse.ParseError):
            parse.allocinfo_control(bad)


def test_meminfo_fields():
    m = parse.meminfo("MemTotal:        1000 kB\nMemFree:  500 kB\nActive(anon): 3 kB\n")
    assert m == {"MemTotal": 1000, "MemFree": 500, "Active(anon)": 3}
    with pytest.raises(parse.ParseError):
        parse.meminfo("nothing")


def test_ktap_cases_with_skip_and_failure():
    log = """[1.0]     # Subtest: alloc_tag_index
[1.0]     1..3
[1.1]     ok 1 first_case
[1.2]     not ok 2 second_case
[1.3]     ok 3 third_case # SKIP needs two CPUs
[1.4] ok 1 alloc_tag_index
"""
    cases = parse.ktap(log)
    assert [(c.suite, c.name, c.result) for c in cases] == [
        ("alloc_tag_index", "first_case", "ok"),
        ("alloc_tag_index", "second_case", "not ok"),
        ("alloc_tag_index", "third_case", "skip")]


def test_alloc_bench_csv_and_truncation():
    text = ("# samples=100 warmup=10 clock_cost=20 cpus=1\n"
            "op,cpu,count,min,p50,p90,p99,mean,max,outliers\n"
            "pages_o0_alloc,-1,100,300,350,400,500,360,900,0\n# end\n")
    settings, lines = micro.alloc_bench(text)
    assert settings["samples"] == "100"
    assert lines[0].op == "pages_o0_alloc" and lines[0].p50 == 350 and lines[0].cpu == -1
    with pytest.raises(parse.ParseError):
        micro.alloc_bench(text.replace("# end\n", ""))
    with pytest.raises(parse.ParseError):
        micro.alloc_bench(text.replace("350", "x"))


def test_stress_yaml_parser_agrees_with_pyyaml():
    from analysis.tests import synth
    text = synth._stress_yaml("vm", 2.5)
    entries = stress.stress_yaml(text)
    assert entries == [{"stressor": "vm", "bogo-ops": "1000",
                        "bogo-ops-per-second-usr-sys-time": "400.000000",
                        "bogo-ops-per-second-real-time": "400.000000", "wall-clock-time": "2.500000",
                        "user-time": "0.250000", "system-time": "2.000000",
                        "cpu-usage-per-instance": "90.0", "max-rss": "36000"}]
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load(text)
    assert {k: float(v) for k, v in doc["metrics"][0].items() if k != "stressor"} == \
        {k: float(v) for k, v in entries[0].items() if k != "stressor"}


def test_perf_stat_parser():
    c = parse.perf_stat("# started on x\n\n1.5,msec,task-clock,1,100.00,,\n<not counted>,,faults,0,0,,\n")
    assert c["task-clock"] == parse.PerfCounter(1.5, "msec", True)
    assert c["faults"].supported is False and c["faults"].value is None
    with pytest.raises(parse.ParseError):
        parse.perf_stat("garbage\n")


def test_warnings_finds_bug_reports_only():
    log = ("ok line\n[ 1.0] WARNING: CPU: 0 PID: 1 at mm/x.c:1\n[2.0] alloc_tag was not set\nfine\n"
           "[3.0] UBSAN: shift-out-of-bounds in ./include/linux/page_ext.h:90:16\n")
    assert len(parse.warnings(log)) == 3


def _result_dir(tmp_path, payload_files, corrupt=None):
    import hashlib
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for name, data in payload_files.items():
            info = tarfile.TarInfo("./" + name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    data = buf.getvalue()
    trailer = f"ALLOCTAG-END sha256={hashlib.sha256(data).hexdigest()} bytes={len(data)}\n"
    # A UART may emit a byte while the guest probes it (QEMU wrote 0xff):
    # the data start after the BEGIN line, not at offset 0.
    begin = b"\xffALLOCTAG-BEGIN\n"
    blob = begin + data + trailer.encode()
    if corrupt == "truncate":
        blob = begin + data[: len(data) // 2]
    elif corrupt == "flip":
        blob = begin + bytes([data[0] ^ 1]) + data[1:] + trailer.encode()
    elif corrupt == "no-begin":
        blob = data + trailer.encode()
    (tmp_path / "result.tar").write_bytes(blob)
    return tmp_path


@pytest.mark.parametrize("corrupt,status", [(None, "ok"), ("truncate", "no-result"),
                                            ("flip", "bad-checksum"),
                                            ("no-begin", "no-result")])
def test_result_channel_detects_truncation_and_corruption(tmp_path, corrupt, status):
    import subprocess
    from tests.guest import REPO
    d = _result_dir(tmp_path, {"job.rc": b"0\n", "dmesg.txt": b"x" * 5000}, corrupt)
    r = subprocess.run([str(REPO / "bench/boot/check-result"), str(d)], capture_output=True, text=True)
    assert r.stdout.strip() == status
    assert (r.returncode == 0) == (status == "ok")
    assert (d / "result" / "job.rc").exists() == (status == "ok")


def test_alloc_bench_zero_clock_or_zero_latency_is_an_error():
    ok = ("# samples=100 warmup=0 clock_cost=44 cpus=1 batch=0\n"
          "op,cpu,count,min,p50,p90,p99,mean,max,outliers\n"
          "pages_o0_alloc,-1,100,480,486,486,486,486,490,0\n# end\n")
    assert micro.alloc_bench(ok)[1][0].p50 == 486
    with pytest.raises(parse.ParseError, match="clock_cost=0"):
        micro.alloc_bench(ok.replace("clock_cost=44", "clock_cost=0"))
    with pytest.raises(parse.ParseError, match="p50 of 0 for pages_o0_alloc"):
        micro.alloc_bench(ok.replace("480,486,486,486,486,490", "0,0,0,0,0,999848"))


@pytest.mark.parametrize("payload,status", [(b"", "no-result"), (b"\xffALLOCTAG-BEGIN\nxx", "no-result")])
def test_boot_records_a_missing_result_instead_of_dying(tmp_path, payload, status):
    """bench/boot/boot under a stand-in QEMU that reaches userspace but sends no
    valid result: the boot fails with check-result's verdict in DIR/status
    (it used to end without a status: set -e and a failing assignment)."""
    import os
    import subprocess
    from tests.guest import REPO
    build = tmp_path / "build"
    (build / "out/off/arch/x86/boot").mkdir(parents=True)
    (build / "out/off/arch/x86/boot/bzImage").write_bytes(b"k")
    (build / "initramfs").mkdir()
    (build / "initramfs/base.cpio.gz").write_bytes(b"i")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "payload").write_bytes(payload)
    fake = bin_dir / "qemu-system-x86_64"
    fake.write_text("#!/bin/sh\n"
                    "n=0\n"
                    "for a; do case $a in file:*) n=$((n + 1)); f=${a#file:};\n"
                    "  if [ $n = 1 ]; then echo 'ALLOCTAG-GUEST: userspace reached' >\"$f\";\n"
                    f"  else cat {tmp_path / 'payload'} >\"$f\"; fi;; esac; done\n")
    fake.chmod(0o755)
    env = dict(os.environ, BUILD_DIR=str(build), CACHESIM="0",
               PATH=f"{bin_dir}:{os.environ['PATH']}")
    d = tmp_path / "boot"
    r = subprocess.run([str(REPO / "bench/boot/boot"), "-k", "off", "-o", str(d), "-t", "icount"],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 1
    assert (d / "status").read_text().strip() == status
    assert f"failed: {status}" in r.stderr


# Real guest output (tests/data/, where each file came from is in its
# README): the parsers on what kernels really printed, not on lines written
# for the test.  Each directory is shaped like a boot's, so guest.Boot reads it.
DATA = Path(__file__).resolve().parent / "data"


def real(name: str) -> guest.Boot:
    return guest.Boot(name, DATA / name, "ok")


def test_real_6_12_packed_boot_stores_the_index_in_spare_page_flags_bits():
    log = real("packed-6.12").dmesg
    r = parse.page_refs_report(log)
    assert (r.mode, r.ref_bits, r.kernel_tags, r.index_bits, r.index_used) == ("flags", 16, 1049, 16, 1050)
    assert (r.page_ext_bytes, r.page_ext_pages) == (0, 0)
    assert r.extra == {"index_max": "65535", "index_field": "spare"}
    assert parse.page_ext_allocated(log) is None
    assert parse.warnings(log) == []


def test_real_6_12_distro_layout_one_node_borrows_last_cpupid():
    from tests.test_distro import pgp, refused
    b = real("numab-1node-6.12")
    r = b.page_refs()
    assert (r.mode, r.kernel_tags, r.index_used, r.page_ext_bytes) == ("flags", 1172, 1173, 0)
    assert r.extra == {"index_max": "65534", "index_field": "last_cpupid"}
    assert parse.warnings(b.dmesg) == []
    assert pgp(b) == {"node": "0", "zone": "1", "alloctag": "1176"}
    refused(b)  # 6.12 says "indices"


def test_real_7_3_distro_layout_one_node_has_no_report_line_but_pgp_and_refused():
    from tests.test_distro import pgp, refused
    b = real("numab-up-1node-7.3")
    # 7.3's compressed mode prints no "page tag refs:" line.
    assert parse.page_refs_report(b.dmesg) is None
    with pytest.raises(AssertionError, match=r"boot numab-up-1node-7.3 \(ok\): no 'page tag refs:' line"):
        b.page_refs()
    assert parse.warnings(b.dmesg) == []
    # %pGp names the lent bits by what they hold: a module tag's index.
    assert pgp(b) == {"node": "0", "zone": "1", "alloctag": "1161"}
    refused(b)  # 7.3 says "indexes"


def test_real_page_ext16_boot_next_to_page_owner_allocates_more_page_ext():
    log = real("debug-ext16-owner-6.12").dmesg
    r = parse.page_refs_report(log)
    assert (r.mode, r.ref_bits, r.index_bits) == ("page_ext16", 16, 16)
    assert (r.page_ext_bytes, r.page_ext_pages) == (524288, 262144)
    assert r.extra["index_field"] == "page_ext"
    assert parse.page_ext_allocated(log) == 23068672


def test_real_ktap_block_with_skips_and_interleaved_kernel_lines():
    cases = parse.ktap(real("kunit-flags-6.12").dmesg)
    assert len(cases) == 17 and {c.suite for c in cases} == {"alloc_tag_index"}
    assert (cases[0].name, cases[-1].name) == ("kernel_tag_index_round_trip", "page_ext_clients_stay_aligned")
    skipped = {c.name: c.directive for c in cases if c.result == "skip"}
    assert skipped == dict.fromkeys(("cpupid_field_has_one_owner", "cpupid_field_starts_clear"),
                                    "SKIP the tag index has page->flags bits of its own")
    assert [c.result for c in cases].count("ok") == 15


def test_real_module_unload_warning_is_one_warning_line():
    assert parse.warnings(real("systest-packed-6.12").dmesg) == [
        "[    3.066289] WARNING: CPU: 0 PID: 473 at lib/alloc_tag.c:184 alloc_tag_module_unload+0xdf/0x1e0"]


def test_real_6_12_allocinfo_has_the_test_module_s_exact_sites():
    from tests.test_system import expected, module_sites
    b = real("numab-1node-6.12")
    lines = parse.allocinfo(b.file("allocinfo-alloc.txt"))
    assert len(lines) == 19
    assert (lines[0].bytes, lines[0].calls, lines[0].tag) == (0, 0, "init/main.c:1311 func:do_initcalls")
    sites = module_sites(b, "alloc")
    assert sorted(sites) == [47, 49, 51, 53, 55, 57, 59, 91, 170]
    assert sites[91].tag == ("/var/tmp/alloctag-build/kmod/packed-debug/tests/alloctag_test.c:91 "
                             "[alloctag_test] func:do_alloc")
    assert (sites[91].bytes, sites[91].calls) == (736, 23)
    assert (sites[55].bytes, sites[55].calls) == (131328, 34)
    exact = {line: (nbytes, calls) for line, (_, nbytes, calls, kind) in expected(b).items() if kind == "exact"}
    assert exact == {47: (16384, 4), 49: (32768, 2), 51: (24576, 3), 53: (8192, 8)}
    assert {line: (sites[line].bytes, sites[line].calls) for line in exact} == exact


def test_real_7_3_allocinfo_counts_module_pages_at_the_overflow_line():
    lines = parse.allocinfo(real("systest-up-packed-limit-7.3").file("allocinfo-alloc.txt"))
    assert len(lines) == 20 and sum(1 for a in lines if "[" not in a.tag) == 11
    over = [a for a in lines if a.tag.endswith("func:module_page_index_overflow")]
    assert [(a.bytes, a.calls, a.tag) for a in over] == [
        (204800, 41, "mm/alloc_tag.c:805 func:module_page_index_overflow")]
    pages = [a for a in lines if a.tag.endswith(("func:site_page0", "func:site_page2", "func:site_folio1"))]
    assert [(a.bytes, a.calls) for a in pages] == [(0, 0)] * 3


def test_real_meminfo_perf_stat_and_vmstat():
    m = parse.meminfo(real("packed-6.12").file("meminfo-boot.txt"))
    assert (m["MemTotal"], m["MemFree"], m["MemAvailable"]) == (1016416, 1005668, 934300)
    assert len(m) == 50
    c = parse.perf_stat(real("packed--stress--m1024--r1").file("perf-stress-vm.txt"))
    assert c["task-clock"] == parse.PerfCounter(267.39, "msec", True)
    assert c["page-faults"].value == 11556 and c["major-faults"].value == 0
    assert not c["cycles"].supported and not c["instructions"].supported
    assert parse.vmstat_pgalloc(real("packed--fio--m1024--r1").file("vmstat-after.txt")) == 47702


SLABINFO = """slabinfo - version: 2.1
# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>
alloctag_obj          16     21    192   21    1 : tunables    0    0    0 : slabdata      1      1      0
kmalloc-64           600    640     64   64    1 : tunables    0    0    0 : slabdata     10     10      0
kmalloc-8k             4      8   8192    4    8 : tunables    0    0    0 : slabdata      2      2      0
kmalloc-cg-64         30     64     64   64    1 : tunables    0    0    0 : slabdata      1      1      0
kmem_cache           100    120    256   16    1 : tunables    0    0    0 : slabdata      8      8      0
"""


def test_slabinfo_and_obj_ext_vectors_count_only_caches_with_tagged_vectors():
    slabs = parse.slabinfo(SLABINFO)
    assert slabs["alloctag_obj"] == parse.SlabinfoLine("alloctag_obj", 16, 21, 192, 21, 1)
    info = parse.allocinfo("allocinfo - version: 1.0\n"
                           "        1024        3 mm/slub.c:2010 func:alloc_slab_obj_exts\n"
                           "         256        1 mm/slub.c:2010 func:alloc_slab_obj_exts_other\n")
    # kmalloc-64, kmalloc-8k and kmem_cache have no counted vectors.
    assert parse.obj_ext_vectors(info, slabs) == (1024, 3, 21 + 64)


def test_slabinfo_and_obj_ext_vectors_reject_bad_input():
    with pytest.raises(parse.ParseError, match="not /proc/slabinfo"):
        parse.slabinfo("name 1 2 3\n")
    with pytest.raises(parse.ParseError, match="malformed slabinfo line"):
        parse.slabinfo("slabinfo - version: 2.1\nfoo 1 2 x 4 5\n")
    with pytest.raises(parse.ParseError, match="no alloc_slab_obj_exts"):
        parse.obj_ext_vectors([], parse.slabinfo(SLABINFO))


@pytest.mark.parametrize("text, err", [
    ("op,function,instructions\nkmalloc_64_alloc,kfree,1.5\nkmalloc_64_alloc,__kmalloc_noprof,70.00\n", None),
    ("function,instructions\nkfree,1\n", "no 'op,function,instructions' header"),
    ("op,function,instructions\n", "no functions"),
    ("op,function,instructions\nkmalloc_64_alloc,kfree,x\n", "line 2: malformed line: 'kmalloc_64_alloc,kfree,x'"),
    ("op,function,instructions\nkmalloc_64_alloc,kfree,0\n", "line 2: malformed line"),
    ("op,function,instructions\nkmalloc_64_alloc,kfree,nan\n", "line 2: malformed line"),
    ("op,function,instructions\na,kfree,1\na,kfree,2\n", "line 3: malformed line: 'a,kfree,2'"),
    ("op,function,instructions\n,kfree,1\n", "line 2: malformed line"),
])
def test_insn_profile_csv(text, err):
    """insn-profile.csv (bench/insn_profile.write_table): one value per op and
    function, positive; anything else names its line."""
    from bench.workloads.micro.parse import insn_profile
    if err is None:
        assert insn_profile(text) == {"kmalloc_64_alloc": {"kfree": 1.5, "__kmalloc_noprof": 70.0}}
        return
    with pytest.raises(parse.ParseError, match=re.escape(err)):
        insn_profile(text)
