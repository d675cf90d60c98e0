"""The packed series against Debian's distro config (linux-config-6.12):
it configures, the objects it touches compile, and the page->flags bit budget
there is what the layout says (compiled, not linked), and the kernels built
with that layout (configs/distro.config) borrow the last_cpupid bits exactly
where NUMA balancing cannot run.  packed-debug adds configs/narrow.config
(8 nodes, 512 CPUs): 12 spare bits next to a 17-bit last_cpupid, where the
boot prefers the spare bits and borrows last_cpupid only when told to
(alloc_tag.min_index_bits=16)."""

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
# has Debian's layout; packed-debug (make test builds it) has Debian's with
# narrow.config's node and CPU counts.
LAYOUT_KEYS = ("bits_per_long", "nr_pageflags", "zones_width", "nodes_width", "sections_width",
               "last_cpupid_width", "kasan_tag_width", "lru_gen_width", "lru_refs_width",
               "spare_bits", "index_width", "index_in_cpupid", "nr_cpus")
# The fields narrow.config changes, and what they become.
NARROW = {"nodes_width": 3, "nr_cpus": 512, "last_cpupid_width": 8 + 9, "spare_bits": 12,
          "index_width": 16, "index_in_cpupid": 1, "index_alt_width": 12}
DISTRO = "packed-debug"
# Boot parameter that makes packed-debug borrow last_cpupid on one node
# (its 12 spare bits are too few for 16) and fall back to page_ext16 on two.
WIDE = "alloc_tag.min_index_bits=16"


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
    assert [f for f in variant_fragments(DISTRO) if f not in ("debug.config", "narrow.config")] == \
        variant_fragments("packed-distro")
    rep = report()
    assert rep["index_alt_width"] == 0, rep     # one spare bit: no second field
    out = BUILD_DIR / "out" / "packed-distro"
    if (out / "include/generated/autoconf.h").exists():
        got = budget(out)
        assert {k: got[k] for k in LAYOUT_KEYS} == {k: rep[k] for k in LAYOUT_KEYS}, "packed-distro"
    out = BUILD_DIR / "out" / DISTRO
    assert (out / "include/generated/autoconf.h").exists(), f"{DISTRO} is not built"
    got = budget(out)
    want = {k: rep[k] for k in LAYOUT_KEYS} | NARROW
    assert {k: got[k] for k in want} == want, DISTRO


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


def numa_keeps_field(b, spare=False):
    """Two nodes: last_cpupid stays NUMA balancing's, and it runs.  With
    @spare the index is in the spare bits next to it."""
    f = pgp(b)
    assert "lastcpupid" in f, f
    if spare:
        assert int(f["alloctag"]) > 1, f
    else:
        # No index in page->flags: a two-field layout shows its empty
        # spare field, Debian's layout none.
        assert f.get("alloctag", "0") == "0", f
    # NUMA balancing's field: "unset" (all ones) in pages it has not seen.
    assert memmap_allones(b)[1] > 0
    attributed(b)
    # Default-enabled on two nodes, writable, and it really scanned.
    assert b.file("numab-boot.txt").strip() == "1"
    assert b.file("numab-set.txt").strip() == "rc=0 now=1"
    assert vmstat(b, "end")["numa_pte_updates"] > vmstat(b, "start")["numa_pte_updates"]


def test_one_node_borrows_last_cpupid_and_refuses_numa_balancing():
    b = numab("1node", WIDE)
    r = b.page_refs()
    assert (r.mode, r.extra.get("index_field"), r.page_ext_bytes) == ("flags", "last_cpupid", 0), r
    assert r.index_bits == 16, r
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
    b = numab("2nodes", "numa=fake=2 kunit.enable=1 " + WIDE)
    cases = {c.name: c.result for c in parse.ktap(b.dmesg) if c.suite == "alloc_tag_index"}
    assert cases.get("cpupid_field_starts_clear") == "ok", cases
    assert not [n for n, r in cases.items() if r == "not ok"], cases
    r = b.page_refs()
    assert (r.mode, r.extra.get("index_field")) == ("page_ext16", "page_ext"), r
    assert r.page_ext_bytes > 0
    assert re.search(r"the last_cpupid page->flags bits are NUMA balancing's \(possible nodes: 2\), "
                     r"12 spare bits for \d+ kernel tags \(min_index_bits 16\): 16-bit indices", b.dmesg)
    numa_keeps_field(b)


def test_two_nodes_keep_numa_balancing_and_the_index_in_12_spare_bits():
    """Issue 24 defect 4: 12 spare bits hold the kernel's tags, so two nodes
    need neither page_ext16 nor NUMA balancing's bits.  KUnit runs in this
    two-field layout with the spare field in use."""
    b = numab("2nodes-spare", "numa=fake=2 kunit.enable=1")
    cases = {c.name: c.result for c in parse.ktap(b.dmesg) if c.suite == "alloc_tag_index"}
    for n in ("cpupid_field_has_one_owner", "cpupid_field_starts_clear",
              "page_flags_format_shows_the_index", "index_set_and_clear_keep_other_fields",
              "index_field_chain_prefers_spare_bits"):
        assert cases.get(n) == "ok", (n, cases)
    assert not [n for n, r in cases.items() if r == "not ok"], cases
    r = b.page_refs()
    assert (r.mode, r.extra.get("index_field"), r.index_bits, r.page_ext_bytes) == \
        ("flags", "spare", 12, 0), r
    assert "NUMA balancing's" not in b.dmesg and "cannot run" not in b.dmesg
    numa_keeps_field(b, spare=True)


def test_two_nodes_with_numa_balancing_disabled_borrow_again():
    b = numab("2nodes-disable", "numa=fake=2 numa_balancing=disable " + WIDE)
    r = b.page_refs()
    assert (r.mode, r.extra.get("index_field"), r.page_ext_bytes) == ("flags", "last_cpupid", 0), r
    assert "NUMA balancing cannot run (numa_balancing=disable)" in b.dmesg
    attributed(b)
    refused(b)


def test_numa_balancing_enable_on_one_node_keeps_the_bits_for_numa():
    b = numab("1node-enable", "numa_balancing=enable " + WIDE)
    r = b.page_refs()
    assert (r.mode, r.extra.get("index_field")) == ("page_ext16", "page_ext"), r
    assert "(possible nodes: 1, numa_balancing=enable), 12 spare bits" in b.dmesg
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
