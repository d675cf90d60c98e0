"""bench/fastpath-insns, the static instruction counts of the page allocator's
hot functions, on stand-in kernels: a build directory of tiny fake vmlinux
files (a disassembly listing each) and a stand-in objdump that prints a
symbol's part of it.  No kernel is built or read."""

import os
import subprocess
from pathlib import Path

import pytest

from bench import kernels

REPO = Path(__file__).resolve().parent.parent

# Takes objdump's options as bench/fastpath-insns passes them and prints the
# listing of --disassemble=SYMBOL from the fake vmlinux (nothing but the
# header when the kernel has no such symbol, as objdump does).
FAKE_OBJDUMP = r"""#!/usr/bin/python3
import sys
sym = next(a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--disassemble="))
path = sys.argv[-1]
try:
    text = open(path).read()
except (OSError, UnicodeDecodeError):
    text = ""
if not text.startswith("ffffffff"):
    sys.exit(f"objdump: {path}: file format not recognized")
print(f"\n{path}:     file format elf64-x86-64\n\n\nDisassembly of section .text:\n")
for block in text.split("\n\n"):
    if block.split("\n", 1)[0].endswith(f"<{sym}>:"):
        print(block + "\n")
"""

# Symbol sizes (instructions) of the kernels, shaped like the real ones: in
# 7.3 __free_pages() wraps ___free_pages(); up-packed inlines ___free_pages()
# into __free_pages() and keeps its rare path in ___free_pages_split().
SIZES = {
    "off": {"get_page_from_freelist": 900, "post_alloc_hook": 29, "free_unref_page": 300,
            "__free_pages": 52, "free_unref_folios": 400},
    "packed": {"get_page_from_freelist": 910, "post_alloc_hook": 45, "free_unref_page": 310,
               "__free_pages": 72, "free_unref_folios": 410},
    "up-off": {"get_page_from_freelist": 1210, "post_alloc_hook": 13, "__free_frozen_pages": 326,
               "__free_pages": 3, "___free_pages": 36, "free_unref_folios": 424},
    "up": {"get_page_from_freelist": 1240, "post_alloc_hook": 60, "__free_frozen_pages": 350,
           "__free_pages": 3, "___free_pages": 169, "free_unref_folios": 450},
    "up-packed": {"get_page_from_freelist": 1234, "post_alloc_hook": 46, "__free_frozen_pages": 344,
                  "__free_pages": 13, "___free_pages_split": 166, "free_unref_folios": 441},
}

# Every variant counted against up-off, as bench/kernels has them; those not
# above look like up-packed (the series or part of it: the free path split).
GROUP_7_3 = tuple(v for v in kernels.read().variants() if kernels.read().static_ref(v) == "up-off")
for _v in GROUP_7_3:
    SIZES.setdefault(_v, SIZES["up-packed"])


def listing(sizes: dict[str, int]) -> str:
    """A disassembly listing with sizes[f] one-byte instructions for each f."""
    blocks, addr = [], 0xffffffff81000000
    for f, n in sizes.items():
        blocks.append(f"{addr:x} <{f}>:\n" + "\n".join(f"{addr + i:x}:\tnop" for i in range(n)))
        addr += 0x1000
    return "\n\n".join(blocks) + "\n"


@pytest.fixture
def fastpath(tmp_path):
    """run(*variants, sizes=SIZES) runs bench/fastpath-insns on fake kernels
    built from sizes, with the stand-in objdump first on PATH."""
    fake = tmp_path / "bin" / "objdump"
    fake.parent.mkdir()
    fake.write_text(FAKE_OBJDUMP)
    fake.chmod(0o755)
    build = tmp_path / "build"

    def run(*variants, sizes=SIZES):
        for v, s in sizes.items():
            (build / "out" / v).mkdir(parents=True, exist_ok=True)
            (build / "out" / v / "vmlinux").write_text(listing(s))
        env = dict(os.environ, BUILD_DIR=str(build), PATH=f"{fake.parent}:{os.environ['PATH']}")
        return subprocess.run([str(REPO / "bench/fastpath-insns"), *variants], cwd=REPO, env=env,
                              capture_output=True, text=True)

    run.build = build
    return run


def rows(out: str) -> dict[tuple[str, str], list[str]]:
    lines = out.splitlines()
    assert lines[0] == "variant,function,instructions,delta_vs_off,symbols"
    return {tuple(r.split(",")[:2]): r.split(",")[2:] for r in lines[1:]}


def test_free_path_is_the_sum_of_what_each_kernel_has(fastpath):
    r = fastpath("off", "packed", "up-off", "up", "up-packed")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    got = rows(r.stdout)
    # 7.3: ___free_pages() inlined into __free_pages() in up-packed, its rare
    # path split out: the free path compares like with like all the same
    assert got["up-off", "free path"] == ["39", "0", "__free_pages+___free_pages"]
    assert got["up", "free path"] == ["172", "133", "__free_pages+___free_pages"]
    assert got["up-packed", "free path"] == ["179", "140", "__free_pages+___free_pages_split"]
    # 6.12 has one __free_pages(), against off
    assert got["off", "free path"] == ["52", "0", "__free_pages"]
    assert got["packed", "free path"] == ["72", "20", "__free_pages"]
    # the other rows are one function each, per tree
    assert got["up-packed", "__free_frozen_pages"] == ["344", "18", "__free_frozen_pages"]
    assert got["packed", "free_unref_page"] == ["310", "10", "free_unref_page"]
    assert [k for k in got if k[0] == "up-packed"] == [
        ("up-packed", f) for f in ("get_page_from_freelist", "post_alloc_hook", "__free_frozen_pages",
                                   "free path", "free_unref_folios")]


def test_part_of_a_group_may_lack_a_function_another_kernel_has(fastpath):
    # up and its reference up-off: neither has ___free_pages_split, which
    # only up-packed of their group has
    r = fastpath("up")
    assert r.returncode == 0, r.stderr
    assert rows(r.stdout)["up", "free path"] == ["172", "133", "__free_pages+___free_pages"]


@pytest.mark.parametrize("variants, drop, msg", [
    # a set of which a kernel has nothing
    (("up-off", "up-packed"), {"up-packed": ("__free_pages", "___free_pages_split")},
     "error: no instructions for free path (__free_pages, ___free_pages, ___free_pages_split) in "
     "{build}/out/up-packed/vmlinux"),
    # a function of its own that one kernel lacks, or its reference
    (("packed",), {"packed": ("post_alloc_hook",)},
     "error: no instructions for post_alloc_hook in {build}/out/packed/vmlinux"),
    (("up",), {"up-off": ("free_unref_folios",)},
     "error: no instructions for free_unref_folios in {build}/out/up-off/vmlinux"),
    # a function of a set that no kernel of the whole group has: misspelt,
    # or gone from the tree
    (GROUP_7_3, {v: ("___free_pages_split",) for v in GROUP_7_3},
     "error: ___free_pages_split (free path) is in none of the kernels of its group "
     f"({', '.join(GROUP_7_3)}): misspelt in bench/fastpath_insns.py, or gone from the tree"),
])
def test_a_missing_function_is_a_one_line_error(fastpath, variants, drop, msg):
    sizes = {v: {f: n for f, n in s.items() if f not in drop.get(v, ())} for v, s in SIZES.items()}
    r = fastpath(*variants, sizes=sizes)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == msg.format(build=fastpath.build) + "\n"


def test_a_kernel_that_is_not_built_is_a_one_line_error(fastpath):
    r = fastpath("up-packed", sizes={"up-packed": SIZES["up-packed"]})
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == (f"error: kernel up-off is not built ({fastpath.build}/out/up-off/vmlinux): "
                        "the counts of up-packed are relative to it\n")


def test_a_kernel_objdump_cannot_read_is_a_one_line_error(fastpath):
    fastpath.build.joinpath("out/up-packed").mkdir(parents=True)
    fastpath.build.joinpath("out/up-packed/vmlinux").write_text("not an ELF file\n")
    r = fastpath("up-packed", sizes={"up-off": SIZES["up-off"]})
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == f"error: objdump: {fastpath.build}/out/up-packed/vmlinux: file format not recognized\n"
