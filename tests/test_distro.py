"""The packed series against Debian's distro config (linux-config-6.12):
it configures, the objects it touches compile, and the page->flags bit budget
there is what the layout says (compiled, not linked), and the kernels built
with that layout (configs/distro.config) borrow the last_cpupid bits exactly
where NUMA balancing cannot run."""

import re
import subprocess

import pytest

from bench import parse
from tests.guest import BUILD_DIR, REPO, TEST_DIR, boot
from tests.test_system import expected, matches, module_sites

OUT = BUILD_DIR / "out" / "distro-check"
OUT_7_3 = BUILD_DIR / "out" / "distro-check-7.3"


def report(tree="packed"):
    out = OUT if tree == "packed" else OUT_7_3
    r = subprocess.run([str(REPO / "bench/build/distro-check"), "-t", tree, "-o", str(out)],
                       capture_output=True, text=True, check=False)
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert r.returncode == 0, errors[-1] if errors else r.stderr[-500:]
    rep = dict(ln.split("=", 1) for ln in r.stdout.splitlines() if "=" in ln)
    return {k: (int(v) if v.lstrip("-").isdigit() else v) for k, v in rep.items()}


# Both build into OUT: on one pytest worker (tests/run), one after the other.
@pytest.mark.xdist_group("distro-check")
def test_packed_series_compiles_against_the_debian_distro_config():
    rep = report()
    objs = rep["objects"].split()
    for o in ("lib/alloc_tag.o", "lib/alloc_tag_index.o", "lib/codetag.o",
              "mm/page_alloc.o", "mm/mm_init.o", "mm/page_ext.o", "mm/migrate.o"):
        assert o in objs, f"{o} was not compiled with the distro config"
    # The index gets what every other field leaves, at most 16 bits.
    spare = rep["bits_per_long"] - sum(rep[k] for k in (
        "nr_pageflags", "zones_width", "nodes_width", "sections_width",
        "last_cpupid_width", "kasan_tag_width", "lru_gen_width", "lru_refs_width"))
    assert rep["spare_bits"] == spare, rep
    # Debian's layout leaves 1 spare bit; the index borrows last_cpupid.
    assert spare == 1, rep
    assert rep["index_in_cpupid"] == 1 and rep["index_width"] == min(16, rep["last_cpupid_width"]), rep
    tags = boot("packed", "packed").page_refs().kernel_tags
    verdict = (f"{rep['config']}: {rep['spare_bits']} spare page->flags bits "
               f"(last_cpupid {rep['last_cpupid_width']}, nodes {rep['nodes_width']}, "
               f"LRU gen+refs {rep['lru_gen_width'] + rep['lru_refs_width']}, "
               f"NR_CPUS {rep['nr_cpus']}): {rep['index_width']}-bit indices in the "
               f"last_cpupid bits where NUMA balancing cannot run, page_ext16 elsewhere "
               f"(the guest kernel alone has {tags} tags)")
    TEST_DIR.mkdir(parents=True, exist_ok=True)
    (TEST_DIR / "distro-verdict.txt").write_text(verdict + "\n")
    print(verdict)


# The kernels built with configs/distro.config: packed-distro (benchmarks)
# and packed-debug (make test builds it).  Their layout must be Debian's.
LAYOUT_KEYS = ("bits_per_long", "nr_pageflags", "zones_width", "nodes_width", "sections_width",
               "last_cpupid_width", "kasan_tag_width", "lru_gen_width", "lru_refs_width",
               "spare_bits", "index_width", "index_in_cpupid", "nr_cpus")
DISTRO = "packed-debug"


def variant_fragments(v):
    for ln in (REPO / "bench/build/variants").read_text().splitlines():
        f = ln.split()
        if f and not ln.startswith("#") and f[0] == v:
            return f[2:]
    raise AssertionError(f"variant {v} missing from bench/build/variants")


def budget(out, tree="packed"):
    r = subprocess.run([str(REPO / "bench/build/flags-budget"), str(BUILD_DIR / "src" / tree), str(out)],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr[-500:]
    return {k: int(v) for k, v in (ln.split("=", 1) for ln in r.stdout.splitlines())}


@pytest.mark.xdist_group("distro-check")
def test_distro_variants_have_the_page_flags_layout_of_the_debian_config():
    assert "distro.config" in variant_fragments("packed-distro")
    assert [f for f in variant_fragments(DISTRO) if f != "debug.config"] == \
        variant_fragments("packed-distro")
    rep = report()
    checked = 0
    for v in ("packed-distro", DISTRO):
        out = BUILD_DIR / "out" / v
        if not (out / "include/generated/autoconf.h").exists():
            continue
        got = budget(out)
        assert {k: got[k] for k in LAYOUT_KEYS} == {k: rep[k] for k in LAYOUT_KEYS}, v
        checked += 1
    assert checked, f"neither packed-distro nor {DISTRO} is built"


def numab(name, append="", variant=DISTRO):
    b = boot(f"numab-{name}", variant, job="numab", append=append, tools=True)
    assert b.ok, b.why()
    assert b.file("job.rc").strip() == "0", f"numab job failed, see {b.dir}/result/job.log"
    assert b.file("stress-rc.txt").strip() == "0", f"stress-ng failed, see {b.dir}/result/stress.log"
    assert not parse.warnings(b.dmesg), parse.warnings(b.dmesg)
    return b


def pgp(b):
    """The %pGp fields of alloctag_test's page (the numab job's "pgp")."""
    lines = [ln for ln in b.dmesg.splitlines() if "alloctag_test: pgp " in ln]
    assert len(lines) == 1, lines
    return dict(f.split("=", 1) for f in lines[0].rsplit("(", 1)[1].rstrip(")").split("|") if "=" in f)


def memmap_allones(b):
    """(struct pages of online memory, those whose tag index field is all
    ones), from the numab job's memmapcheck."""
    f = dict(kv.split("=") for kv in b.file("memmapcheck.txt").split()[1:])
    assert int(f["pages"]) > 100_000, f   # a 1 GiB guest has about 262,000
    return int(f["pages"]), int(f["allones"])


def attributed(b):
    """alloctag_test's call sites have their exact bytes after alloc, 0 after free."""
    exp = expected(b)
    for snap, zero in (("alloc", False), ("free", True), ("after", True)):
        got = module_sites(b, snap)
        for line, (_site, nbytes, calls, kind) in exp.items():
            assert line in got, f"line {line} missing from allocinfo-{snap}"
            have = (got[line].bytes, got[line].calls)
            if zero:
                assert have == (0, 0), (snap, line, have)
            else:
                assert matches(kind, nbytes, calls, got[line]), (snap, line, kind, have)


def vmstat(b, snap):
    return {k: int(v) for k, v in (ln.split() for ln in b.file(f"vmstat-{snap}.txt").splitlines())}


def refused(b):
    assert b.file("numab-boot.txt").strip() == "0"
    assert b.file("numab-set.txt").strip() == "rc=1 now=0", b.file("numab-set.txt")
    assert "busy" in b.file("numab-set-error.txt").lower(), b.file("numab-set-error.txt")
    # 6.12's series says "indices", 7.3's "indexes" as upstream 7.3 does.
    assert re.search(r"kernel\.numa_balancing=1 refused: the last_cpupid page->flags bits "
                     r"hold allocation tag ind(ices|exes)", b.dmesg)


def numa_keeps_field(b):
    """Two nodes: last_cpupid stays NUMA balancing's, and it runs."""
    f = pgp(b)
    assert "alloctag" not in f and "lastcpupid" in f, f
    # NUMA balancing's field: "unset" (all ones) in pages it has not seen.
    assert memmap_allones(b)[1] > 0
    attributed(b)
    # Default-enabled on two nodes, writable, and it really scanned.
    assert b.file("numab-boot.txt").strip() == "1"
    assert b.file("numab-set.txt").strip() == "rc=0 now=1"
    assert vmstat(b, "end")["numa_pte_updates"] > vmstat(b, "start")["numa_pte_updates"]


def test_one_node_borrows_last_cpupid_and_refuses_numa_balancing():
    b = numab("1node")
    r = b.page_refs()
    assert (r.mode, r.extra.get("index_field"), r.page_ext_bytes) == ("flags", "last_cpupid", 0), r
    assert "NUMA balancing cannot run (one possible node)" in b.dmesg
    attributed(b)
    refused(b)
    f = pgp(b)
    assert "lastcpupid" not in f and int(f["alloctag"]) > 1, f
    # Lent before memmap_init(): no struct page starts with NUMA balancing's
    # all-ones "unset" there (reserved pages included).
    assert memmap_allones(b)[1] == 0
    assert b.file("numab-end.txt").strip() == "0"


def test_two_nodes_keep_numa_balancing_and_use_page_ext16():
    # KUnit too: where NUMA balancing keeps last_cpupid, pages that were
    # never allocated must read "unset" there (cpupid_field_starts_clear).
    b = numab("2nodes", "numa=fake=2 kunit.enable=1")
    cases = {c.name: c.result for c in parse.ktap(b.dmesg) if c.suite == "alloc_tag_index"}
    assert cases.get("cpupid_field_starts_clear") == "ok", cases
    assert not [n for n, r in cases.items() if r == "not ok"], cases
    r = b.page_refs()
    assert (r.mode, r.extra.get("index_field")) == ("page_ext16", "page_ext"), r
    assert r.page_ext_bytes > 0
    assert "the last_cpupid page->flags bits are NUMA balancing's (possible nodes: 2)" in b.dmesg
    numa_keeps_field(b)


def test_two_nodes_with_numa_balancing_disabled_borrow_again():
    b = numab("2nodes-disable", "numa=fake=2 numa_balancing=disable")
    r = b.page_refs()
    assert (r.mode, r.extra.get("index_field"), r.page_ext_bytes) == ("flags", "last_cpupid", 0), r
    assert "NUMA balancing cannot run (numa_balancing=disable)" in b.dmesg
    attributed(b)
    refused(b)


def test_numa_balancing_enable_on_one_node_keeps_the_bits_for_numa():
    b = numab("1node-enable", "numa_balancing=enable")
    r = b.page_refs()
    assert (r.mode, r.extra.get("index_field")) == ("page_ext16", "page_ext"), r
    assert "(possible nodes: 1, numa_balancing=enable): 16-bit indices in page_ext instead" in b.dmesg
    assert b.file("numab-boot.txt").strip() == "1"
    attributed(b)


# The 7.3 series against Debian's own 7.3 configuration (linux-config-7.3).
@pytest.mark.xdist_group("distro-check")
def test_7_3_series_compiles_against_the_debian_7_3_config_and_borrows_last_cpupid():
    rep = report("up-packed")
    assert rep["tree"] == "up-packed" and rep["config"] == "config.amd64_none_amd64.xz", rep
    objs = rep["objects"].split()
    for o in ("mm/alloc_tag.o", "mm/page_alloc.o", "mm/mmzone.o", "mm/mempolicy.o",
              "kernel/sched/core.o", "kernel/module/main.o"):
        assert o in objs, f"{o} was not compiled with Debian's 7.3 config"
    # No unused bit: upstream's compressed mode cannot work there; the
    # series takes the whole last_cpupid field instead.
    assert rep["spare_bits"] <= 0, rep
    assert rep["index_in_cpupid"] == 1 and rep["index_width"] == rep["last_cpupid_width"] > 16, rep
    # configs/distro.config gives up-packed-distro the same layout.
    out = BUILD_DIR / "out" / "up-packed-distro"
    assert (out / "include/generated/autoconf.h").exists(), "up-packed-distro is not built"
    got = budget(out, "up-packed")
    assert {k: got[k] for k in LAYOUT_KEYS} == {k: rep[k] for k in LAYOUT_KEYS}
