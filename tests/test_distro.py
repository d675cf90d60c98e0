"""The packed series against Debian's distro config (linux-config-6.12):
it configures, the objects it touches compile, and the page->flags bit budget
there is what the layout says.  Compile only: no distro kernel is linked."""

import subprocess

from bench import parse
from tests.guest import BUILD_DIR, REPO, TEST_DIR, boot

OUT = BUILD_DIR / "out" / "distro-check"


def report():
    r = subprocess.run([str(REPO / "bench/distro-check"), "-o", str(OUT)],
                       capture_output=True, text=True, check=False)
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert r.returncode == 0, errors[-1] if errors else r.stderr[-500:]
    rep = dict(ln.split("=", 1) for ln in r.stdout.splitlines() if "=" in ln)
    return {k: (int(v) if v.lstrip("-").isdigit() else v) for k, v in rep.items()}


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
    assert rep["index_width"] == max(0, min(16, spare)), rep

    # Flags or fallback: the distro kernel has at least the guest kernel's
    # tags (its config is a superset), so it keeps indices in page->flags
    # only if those fit in index_width bits.
    packed = boot("packed", "packed")
    assert packed.ok, packed.why()
    tags = parse.page_refs_report(packed.dmesg).kernel_tags
    fits = (1 << rep["index_width"]) - 1 >= tags
    verdict = (f"{rep['config']}: {rep['index_width']} spare page->flags bits "
               f"(last_cpupid {rep['last_cpupid_width']}, nodes {rep['nodes_width']}, "
               f"LRU gen+refs {rep['lru_gen_width'] + rep['lru_refs_width']}, "
               f"NR_CPUS {rep['nr_cpus']}); the guest kernel alone has {tags} tags: "
               + ("indices fit in page->flags" if fits
                  else "falls back to 16-bit indices in page_ext at boot" if tags + 1 <= 65535
                  else "falls back to page_ext references at boot"))
    TEST_DIR.mkdir(parents=True, exist_ok=True)
    (TEST_DIR / "distro-verdict.txt").write_text(verdict + "\n")
    print(verdict)
    # The guest kernel's tag count is a lower bound of the distro kernel's
    # (its config is a superset): "does not fit" is certain, "fits" would
    # be unproven.  Debian's 6.12 layout leaves 1 spare bit: no fit.
    assert tags > 1000, tags
    assert not fits, verdict
