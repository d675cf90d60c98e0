"""How many instructions the page tag hooks add to the page allocator's hot
functions, read from each built vmlinux with objdump, so a change to the hot
path can be judged before a benchmark run (bench/fastpath-insns runs it).

    python3 -m bench.fastpath_insns [VARIANT...]    (default: every variant)

Prints CSV: variant,function,instructions,delta_vs_off,symbols.  A row
("function") is one function, or a named set of functions whose
instructions are summed over those of them the kernel has ("symbols", joined
by "+"): where a kernel inlines a function into its caller or splits a rare
path out of it, the set still compares like with like across the kernels of
one group ("free path": Linux 7.3's __free_pages() wraps ___free_pages(),
which this project's 7.3 series inlines into it, keeping its rare path in
___free_pages_split()).  "instructions" is the static count of the row's
machine code (free_pages_prepare() is inlined into the free functions);
delta_vs_off is the difference to the kernel without profiling of the same
tree (bench/kernels role noprof: "off", or "up-off" for the upstream peer),
whose hooks compile to nothing.  A static count includes cold paths, so it
bounds rather than equals the instructions one allocation executes
(bench/kmod/alloc_bench measures those).

Errors, each one "error: ..." line on stderr and exit status 1, before any
output: an unknown or unbuilt kernel, a row of which a kernel has no
instructions, and a function of a set that no kernel of its group has when
the whole group is counted (a misspelt name, or one gone from the tree; part
of a group may lack a function only another of its kernels has)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bench import kernels, manifest


@dataclass(frozen=True)
class Row:
    name: str
    symbols: tuple[str, ...]

    def describe(self) -> str:
        return self.name if self.symbols == (self.name,) else f"{self.name} ({', '.join(self.symbols)})"


def _one(name: str) -> Row:
    return Row(name, (name,))


# The same roles under Linux 7.3's names (upstream peer): free_unref_page()
# became __free_frozen_pages(), and __free_pages() wraps ___free_pages().
ROWS = (_one("get_page_from_freelist"), _one("post_alloc_hook"), _one("free_unref_page"),
        Row("free path", ("__free_pages",)), _one("free_unref_folios"))
PEER_ROWS = (_one("get_page_from_freelist"), _one("post_alloc_hook"), _one("__free_frozen_pages"),
             Row("free path", ("__free_pages", "___free_pages", "___free_pages_split")),
             _one("free_unref_folios"))

INSN_LINE = re.compile(r"^\s*[0-9a-f]+:\s", re.M)


class FastpathError(Exception):
    """One line: what is wrong with which kernel."""


def count(vmlinux: Path, symbol: str) -> int:
    """Instructions objdump disassembles for symbol (0: no such symbol)."""
    r = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--disassemble={symbol}", str(vmlinux)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        why = r.stderr.strip().splitlines()
        raise FastpathError(why[0] if why else f"objdump failed on {vmlinux} (exit status {r.returncode})")
    return len(INSN_LINE.findall(r.stdout))


def rows_of(table: kernels.Table, variant: str) -> tuple[Row, ...]:
    return PEER_ROWS if any(k.peer for k in table if k.variant == variant) else ROWS


def measure(vmlinux: Path, rows: tuple[Row, ...]) -> dict[str, tuple[int, tuple[str, ...]]]:
    """{row name: (instructions, the row's symbols the kernel has)}."""
    out = {}
    for row in rows:
        n = {s: count(vmlinux, s) for s in row.symbols}
        found = tuple(s for s in row.symbols if n[s] > 0)
        if not found:
            raise FastpathError(f"no instructions for {row.describe()} in {vmlinux}")
        out[row.name] = (sum(n.values()), found)
    return out


def csv_rows(variants: list[str], table: kernels.Table, out_dir: Path) -> list[str]:
    """The CSV lines (header first) for variants, each against its static reference."""
    ref = {v: table.static_ref(v) for v in variants}
    for v in variants:
        for k, what in ((v, ""), (ref[v], f": the counts of {v} are relative to it")):
            if not (out_dir / k / "vmlinux").is_file():
                raise FastpathError(f"kernel {k} is not built ({out_dir / k / 'vmlinux'}){what}")
    counted = list(dict.fromkeys(x for v in variants for x in (ref[v], v)))
    got = {k: measure(out_dir / k / "vmlinux", rows_of(table, k)) for k in counted}
    # A function of a set that no kernel of a whole group has is misspelt or
    # gone; part of a group may lack one that only another kernel has.
    for r in dict.fromkeys(ref.values()):
        group = [x for x in table.variants() if table.static_ref(x) == r]
        if not set(group) <= set(counted):
            continue
        for row in rows_of(table, r):
            for s in row.symbols:
                if not any(s in got[k].get(row.name, (0, ()))[1] for k in group):
                    raise FastpathError(f"{s} ({row.name}) is in none of the kernels of its group "
                                        f"({', '.join(group)}): misspelt in bench/fastpath_insns.py, "
                                        "or gone from the tree")
    lines = ["variant,function,instructions,delta_vs_off,symbols"]
    for v in variants:
        for row in rows_of(table, v):
            n, found = got[v][row.name]
            lines.append(f"{v},{row.name},{n},{n - got[ref[v]][row.name][0]},{'+'.join(found)}")
    return lines


def main(argv: list[str]) -> int:
    try:
        table = kernels.read()
        variants = list(dict.fromkeys(argv)) or table.variants()
        if shutil.which("objdump") is None:
            raise FastpathError("objdump is missing (binutils)")
        lines = csv_rows(variants, table, manifest.build_dir() / "out")
    except (kernels.KernelsError, FastpathError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
