"""The "Measured" section of patches/packed-refs/0000-cover-letter.patch,
generated from one run, so that the cover letter quotes the reference run
and nothing typed by hand.

  python3 -m analysis.cover results/<run-id>            print the section
  python3 -m analysis.cover results/<run-id> --write    put it into the cover letter
  python3 -m analysis.cover --check                     exit 1 if the cover letter's
                                                        section is not what its run gives

The section starts at the line "Measured" and ends before the next
underlined heading or "Based on"; the run it names ("run <id>") is the one
--check regenerates it from.  A number the run does not have is an error,
never an empty cell."""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from pathlib import Path

from analysis import summarize
from analysis.load import AnalysisError, Run, cli, load_run, resolve_run_dir
from analysis.report import (BYTES_PER_FRAME, DISTRO_GROUP, FRAME, NO_FRAME_COUNT, cache_params, determinism,
                             mem_workloads_from, num, signed, unmet_targets)
from analysis.summarize import Summary
from bench.workloads.micro.parse import KERNEL_SITE_PREFIX

REPO = Path(__file__).resolve().parent.parent
COVER = REPO / "patches" / "packed-refs" / "0000-cover-letter.patch"
HEADING = "Measured"

# Kernels are named by (group, role) of bench/kernels, as the run's table
# gives them: group "main" is the project's own, "peer" the upstream peer's.
# (group, role, label) rows of the order-0 table; the reference ("noprof")
# is printed absolute.
PAIR_ROWS = (("main", "noprof", "off (no profiling)"),
             ("main", "pageext", "6.12 page_ext pointer"),
             ("main", "flags", "this series, page->flags index"),
             ("main", "ext16", "this series, page_ext16"),
             ("main", "flags-nopf", "this series, profiling off"),
             ("main", "nopf", "6.12, profiling off"),
             ("peer", "pageext", "7.3 page_ext pointer (vs 7.3 off)"),
             ("peer", "flags", "7.3 compressed (vs 7.3 off)"),
             ("peer", "nopf", "7.3, profiling off"))
PEER_ROLES = ("pageext", "flags", "nopf")
CACHE_KERNELS = (("main", "pageext", "page_ext pointer"), ("main", "flags", "page->flags index"),
                 ("main", "ext16", "page_ext16"), ("peer", "pageext", "7.3 page_ext pointer"),
                 ("peer", "flags", "7.3 compressed"))
SLAB_KERNELS = (("main", "pageext"), ("main", "flags"), ("peer", "pageext"))
MEM_KERNELS = (("main", "pageext", "6.12 page_ext"), ("main", "flags", "page->flags index"),
               ("main", "ext16", "page_ext16"), ("peer", "pageext", "7.3 page_ext"),
               ("peer", "flags", "7.3 compressed"))
WIDTH = 72


class CoverError(AnalysisError):
    pass


def _need(rows: Summary, kernel: str, workload: str, metric: str) -> float:
    v = rows.value(kernel, workload, metric)
    if v is None:
        raise CoverError(f"run has no {kernel} / {workload} / {metric}: cannot write the cover letter")
    return v


def _para(text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, break_on_hyphens=False) + [""]


def _kernel(run: Run, group: str, role: str) -> str:
    """The label of (group, role): the table's, whether or not the run has it."""
    t = run.table
    g = t.main_group if group == "main" else t.peer_group if group == "peer" else group
    k = t.role(role, g) if g else None
    if k is None:
        raise CoverError(f"{run.path}: the run's kernel table has no {role} kernel in group {group}: "
                         f"cannot write the cover letter")
    return k


def section(run: Run, rows: Summary) -> str:
    """The Measured section for run (title line to the last line, no trailing blank)."""
    pg = run.table.peer_group
    peers = [run.table.role(r, pg) for r in PEER_ROLES] if pg else []
    have_peer = bool(peers) and all(k and rows.has_kernel(k, "micro") for k in peers)
    pair = f"{KERNEL_SITE_PREFIX}pages_o0_pair.p50", "pages_o0_pair.p50"
    out = [HEADING, "-" * len(HEADING)]
    reps, flagged = determinism(rows)
    agree = ("the boots of every kernel agree on every metric" if reps >= 2 and not flagged
             else f"{flagged} workload(s) with metrics whose boots disagree" if flagged
             else "one boot per kernel, determinism not checked")
    out += _para(
        "QEMU TCG with -icount shift=0,sleep=off (guest time = executed instructions), "
        "guest config of the test harness; p50 of an in-kernel microbenchmark, in "
        "instructions; \"pair\" is one allocation plus its free.  Kernel-tag sites are in "
        "the kernel image, module-tag sites in the benchmark module."
        + (" Linux 7.3 (Debian's linux-source-7.3, its 6.13+ compressed tags) is measured "
           "the same way, each tree against its own kernel without profiling." if have_peer else ""))
    cmd = "make bench QUICK=1" if run.manifest.get("quick") else "make bench-all"
    out += _para(f"Command: {cmd} (run {run.run_id}: {len(run.boots)} boots, "
                 f"{reps} per kernel and workload, {len(run.failed)} failed; {agree}).")
    out.append(f"  {'order-0 page, alloc+free pair':<35}{'kernel tag':<13}module tag")
    for group, role, label in PAIR_ROWS:
        if group == "peer" and not have_peer:
            continue
        k = _kernel(run, group, role)
        if role == "noprof":
            cells = [num(_need(rows, k, "micro", m), 0) for m in pair]
        elif group == "peer" and not rows.get(k, "micro", pair[1] + ".delta"):
            cells = [signed(_need(rows, k, "micro", pair[0] + ".delta"), 0, ""), "(no module)"]
        else:
            cells = [signed(_need(rows, k, "micro", m + ".delta"), 0, "") for m in pair]
        out.append(f"  {label:<35}{cells[0]:<13}{cells[1]}".rstrip())
    out.append("")

    cm = f"cache.{KERNEL_SITE_PREFIX}pages_o0_batch_pair"
    params = cache_params(run)
    if params and rows.get(_kernel(run, "main", "pageext"), "micro", cm + ".llc_miss.mean.delta"):
        parts = []
        for group, role, label in CACHE_KERNELS:
            if group == "peer" and not have_peer:
                continue
            k = _kernel(run, group, role)
            parts.append(f"{label} {signed(_need(rows, k, 'micro', cm + '.llc_miss.mean.delta'), 2, '')} "
                         f"LLC misses, {signed(_need(rows, k, 'micro', cm + '.est_cycles.mean.delta'), 0, '')} "
                         "cycles")
        out += _para(
            f"A cache model on the same boots (QEMU plugin: LRU L1D {params.get('l1', '?')}, "
            f"L2 {params.get('l2', '?')}, LLC {params.get('llc', '?')} (size/ways), physical addresses; "
            f"estimated cycles = instructions + {params.get('pen_l2', '?')} / {params.get('pen_llc', '?')} / "
            f"{params.get('pen_mem', '?')} per L2 hit / LLC hit / miss), for 64Ki order-0 pages "
            "allocated, then freed in allocation order, per alloc+free pair vs off (kernel tag): "
            + "; ".join(parts) + ".")

    km = f"{KERNEL_SITE_PREFIX}kmalloc_64_pair.p50.delta"
    slab = [f"{k} {signed(_need(rows, k, 'micro', km), 0, '')}"
            for k in (_kernel(run, g, r) for g, r in SLAB_KERNELS if g != "peer" or have_peer)]
    mws = mem_workloads_from(rows)
    if not mws:
        raise CoverError("run has no mem-m* workload: cannot write the cover letter")
    w = max(mws, key=lambda w: int(w[5:]))
    bpp = BYTES_PER_FRAME
    mem = [_mem_cell(rows, _kernel(run, g, r), w, label, first=i == 0)
           for i, (g, r, label) in enumerate(MEM_KERNELS) if g != "peer" or have_peer]
    out += _para(
        "kmalloc paths are not touched by the series (kmalloc-64 pair vs off, kernel tag: "
        + ", ".join(slab) + f").  Memory for page tags per {FRAME} (page_ext bytes over the page "
        f"frames the kernel has page_ext for, both from its log), {w[5:]} MiB guest: "
        + ", ".join(mem) + "; an index mode adds 16 bytes per tag index in use.")

    dflags, dnuma = run.table.role("flags", DISTRO_GROUP), run.table.role("numa", DISTRO_GROUP)
    if dflags and rows.has_kernel(dflags, "micro"):
        d = _need(rows, dflags, "micro", pair[0] + ".delta")
        numa = (f"; with two NUMA nodes (numa=fake=2) NUMA balancing keeps the bits and page_ext16 "
                f"costs {num(_need(rows, dnuma, w, bpp), 2)} bytes per page frame"
                if dnuma and rows.has_kernel(dnuma, w) else "")
        out += _para(
            "With Debian's amd64 page->flags layout (one spare bit; NR_CPUS=8192, NUMA balancing), "
            f"same run: one node, the index in the last_cpupid bits, "
            f"{num(_need(rows, dflags, w, bpp), 2)} bytes per page frame and an order-0 "
            f"alloc+free pair {signed(d, 0, '')} instructions (kernel tag) against the same kernel "
            f"booted with profiling off{numa}.")
    unmet = unmet_targets(rows, run)
    out += _para("Targets not met in this run (report.md's target tables): " + "; ".join(unmet) + "."
                 if unmet else "This run meets every target of report.md's target tables.")
    return "\n".join(out).rstrip("\n")


def _mem_cell(rows: Summary, k: str, w: str, label: str, first: bool) -> str:
    """"<label> 8.00 bytes", or the kernel's page_ext bytes in all where its
    log names no page frame count (upstream): never a figure over MemTotal."""
    v = rows.value(k, w, BYTES_PER_FRAME)
    if v is not None:
        return f"{label} {num(v, 2)}" + (" bytes" if first else "")
    return f"{label} {num(_need(rows, k, w, 'page_ext_bytes'), 0)} bytes in all ({NO_FRAME_COUNT})"


_BOUNDARY = re.compile(r"^(?:[^\n]+\n[-=]{3,}$|Based on )", re.M)


def split_cover(text: str) -> tuple[str, str, str]:
    """(before, section, after) of a cover letter's Measured section."""
    m = re.search(rf"^{HEADING}\n-+\n", text, re.M)
    if not m:
        raise CoverError(f"{COVER.name}: no '{HEADING}' section")
    end = _BOUNDARY.search(text, m.end())
    if not end:
        raise CoverError(f"{COVER.name}: nothing after the '{HEADING}' section")
    return text[:m.start()], text[m.start():end.start()].rstrip("\n"), text[end.start():]


def named_run(sec: str) -> str:
    m = re.search(r"\(run (\S+?):", sec)
    if not m:
        raise CoverError(f"{COVER.name}: the '{HEADING}' section names no run")
    return m.group(1)


def generate_for(run_dir: Path) -> str:
    run = load_run(run_dir)
    return section(run, summarize.summarize(run))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m analysis.cover", description=__doc__.split("\n\n")[0])
    ap.add_argument("run", nargs="?", help="results/<run-id>")
    ap.add_argument("--write", action="store_true", help="replace the cover letter's section")
    ap.add_argument("--check", action="store_true",
                    help="regenerate the section from the run it names and compare")
    ap.add_argument("--cover", type=Path, default=COVER, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if not args.check and not args.run:
        ap.error("name a run, or give --check")

    def body() -> int:
        if args.check:
            sec = split_cover(args.cover.read_text())[1]
            run = named_run(sec)
            if sec != generate_for(REPO / "results" / run):
                print(f"error: {args.cover.name}: the '{HEADING}' section differs from what run {run} "
                      f"gives (python3 -m analysis.cover results/{run} --write)", file=sys.stderr)
                return 1
            print(f"{args.cover.name}: '{HEADING}' matches run {run}")
            return 0
        sec = generate_for(resolve_run_dir(args.run))
        if args.write:
            before, _, after = split_cover(args.cover.read_text())
            args.cover.write_text(before + sec + "\n\n" + after)
            print(f"{args.cover}: '{HEADING}' from {args.run}")
        else:
            print(sec)
        return 0
    return cli(body)


if __name__ == "__main__":
    sys.exit(main())
