"""report.md of one run: run facts, what the timing mode can show, the LSFMM
2024 talk's figures beside this run's, the figures with one sentence each
(derived from the numbers) and the main tables.  Generated only; it holds no
generation timestamp, so regenerating it from the same run is byte-identical."""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass
from pathlib import Path

from analysis import stats
from analysis.load import Run
from analysis.summarize import BOOTS_DISAGREE, Row, Summary
from bench import insn_profile
from bench.workloads.micro.parse import KERNEL_SITE_PREFIX, Micro

# The group of kernels built with Debian's page->flags layout (bench/kernels).
DISTRO_GROUP = "distro"


@dataclass(frozen=True)
class Figure:
    kind: str        # memory, latency-overhead, latency-distribution, throughput
    workload: str
    name: str        # file name without extension (.png and .svg exist)
    title: str


# --- formatting -------------------------------------------------------------

def num(v: float | None, digits: int = 1) -> str:
    return "n/a" if v is None else f"{v:,.{digits}f}"


def signed(v: float | None, digits: int = 1, suffix: str = "%") -> str:
    if v is None:
        return "n/a"
    if round(v, digits) == 0:
        return f"{0:.{digits}f}{suffix}"
    return f"{v:+.{digits}f}{suffix}"


def interval_kind(r: Row) -> str:
    if r.ci_low is not None:
        return "CI"
    return "spread" if r.spread_low is not None else ""


INTERVALS_LEGEND = "<intervals legend>"   # replaced once the report's cells are known


def intervals_legend(text: str) -> str:
    """The legend of the kinds of interval the report's cells show (with_interval),
    and only those."""
    kinds = {"CI": "CI = 95% bootstrap confidence interval over boots",
             "spread": "spread = min..max over boots (icount, deterministic)"}
    used = [d for k, d in kinds.items() if f" ({k} " in text]
    head = ("Intervals: " + "; ".join(used) + ".") if used else \
        "No cell of this report has an interval: every figure's boots agree, or there is one boot."
    return head + (" The talk measured real hardware; see the timing section for what this run's "
                   "timing mode can show.")


def with_interval(r: Row | None, digits: int = 1, suffix: str = "%", sign: bool = True) -> str:
    if r is None or r.value is None:
        return "n/a"
    f = (lambda v: signed(v, digits, suffix)) if sign else (lambda v: num(v, digits) + suffix)
    est = stats.Estimate(r.value, r.ci_low, r.ci_high, r.spread_low, r.spread_high)
    iv = est.interval()
    if iv is None or (round(iv[0], digits) == round(iv[1], digits) == round(r.value, digits)):
        return f(r.value)
    return f"{f(r.value)} ({interval_kind(r)} {f(iv[0])}..{f(iv[1])})"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return out + [""]


# --- lookups ----------------------------------------------------------------

def main(run: Run, role: str) -> str:
    """The label of the kernel playing role (bench/kernels) in the project's
    own group, as the run's table names it (whether or not the run booted
    it); the role's name if the table has none."""
    return run.table.role(role, run.table.main_group) or role


def own_offs(run: Run) -> str:
    """"`off` for 6.12, `up-off` for 7.3": the reference of our group and the peer's."""
    refs = [(g, run.table.role("noprof", g)) for g in run.groups("main", "peer")]
    return ", ".join(f"`{k}` for {g}" for g, k in refs if k)


def distro(run: Run) -> tuple[str, str] | None:
    """(the flags kernel of the distro layout, its reference), if the run
    has a kernel of that group measured against another."""
    k = run.table.role("flags", DISTRO_GROUP)
    if k is None or not any(run.table.get(x).group == DISTRO_GROUP and run.ref(x) != x for x in run.kernels):
        return None
    return k, run.ref(k)



def config_hash(run: Run, k: str) -> str | None:
    """The config hash of kernel k's build, as the run recorded it."""
    bi = run.manifest.get("build_info") or {}
    return (bi.get(run.table.get(k).variant) or {}).get("config_hash")


def vs_main_off(rows: Summary, run: Run, k: str, w: str, m: str) -> str | None:
    """For a kernel of our tree measured against another reference than the
    run's off (packed-distro against its own nopf boot): "+78 vs 6.12 off",
    its p50 less off's, and whether the two builds' configs differ.  None
    for the others, and where either value is missing."""
    off = run.main_reference
    if run.ref(k) in (k, off) or run.is_peer(k):
        return None
    v, o = rows.value(k, w, m), rows.value(off, w, m)
    if v is None or o is None:
        return None
    ck, co = config_hash(run, k), config_hash(run, off)
    cfg = (" (configs not recorded)" if ck is None or co is None
           else " (configs differ)" if ck != co else "")
    return f"{signed(v - o, 0, '')} vs {run.table.get(off).group} {off}{cfg}"


def op_order(run: Run, workload: str) -> list[str]:
    """Operation metric bases ("pages_o0_alloc", "parallel.pages_o0_alloc") in
    the order alloc_bench prints them."""
    seen: list[str] = []
    for d in run.boots:
        if d.boot.workload != workload or not isinstance(d.data, Micro):
            continue
        for ln in d.data.bench:
            base = ln.op if ln.cpu == -1 else f"parallel.{ln.op}"
            if ln.cpu in (-1,) or ln.cpu >= 1000:
                if base not in seen:
                    seen.append(base)
    return seen


def page_modes(run: Run) -> dict[str, str]:
    out: dict[str, str] = {}
    for d in run.boots:
        if d.report is not None:
            out.setdefault(d.boot.kernel, f"{d.report.mode}, {d.report.ref_bits}-bit")
        elif d.boot.kernel == run.main_reference:
            out.setdefault(d.boot.kernel, "none (no profiling)")
    return out


# --- figure sentences -----------------------------------------------------------

def _sentence_memory(rows: Summary, run: Run) -> str:
    parts = []
    for w in mem_workloads_from(rows):
        vals = [(r.value, r.kernel) for k in run.kernels
                if (r := rows.get(k, w, BYTES_PER_FRAME)) is not None and r.value is not None
                and k != run.main_reference]
        if not vals:
            continue
        hi = max(vals, key=lambda v: v[0])  # ties: the first kernel in run order
        lo = min(vals, key=lambda v: v[0])
        pct = rows.value(hi[1], w, "page_ext_pct_ram")
        parts.append(f"at {w[5:]} MiB {hi[1]} spends the most on page tag references "
                     f"({num(hi[0], 2)} bytes per {FRAME}, {num(pct, 3)}% of RAM) and {lo[1]} the least "
                     f"({num(lo[0], 2)} bytes per page frame)")
    if not parts:
        return "No page tag reference memory was reported."
    return ("Page_ext memory owned by tagging: " + "; ".join(parts) + ".")


def mem_workloads_from(rows: Summary) -> list[str]:
    ws = {r.workload for r in rows.rows if r.workload.startswith("mem-m")}
    return sorted(ws, key=lambda w: int(w[5:]) if w[5:].isdigit() else 0)


# Bytes per page frame (bench/workloads/mem/parse.py): the kernel's page_ext
# bytes over the page frames it has page_ext for.  A kernel whose log names
# no frame count (upstream) has page_ext bytes but no such figure.
BYTES_PER_FRAME = "page_ext_bytes_per_page"
FRAME = "4 KiB page frame"
NO_FRAME_COUNT = "no page frame count in its log"


def bytes_per_frame(rows: Summary, k: str, w: str, digits: int = 2, unit: str = "") -> str:
    """Kernel k's bytes per page frame in workload w, or why it has none."""
    v = rows.value(k, w, BYTES_PER_FRAME)
    if v is not None:
        return num(v, digits) + unit
    return NO_FRAME_COUNT if rows.value(k, w, "page_ext_bytes") else "n/a"


def no_frame_count(rows: Summary, kernels: list[str], w: str) -> list[str]:
    """The kernels with page_ext bytes in w but no page frame count."""
    return [k for k in kernels if bytes_per_frame(rows, k, w) == NO_FRAME_COUNT]


def _sentence_latency(rows: Summary, run: Run, w: str) -> str:
    ov = [r for r in rows.workload_rows(w, ".p50.overhead")]
    if not ov:
        return "No latency overheads could be computed."
    top = max(ov, key=lambda r: (r.value, r.kernel, r.metric))
    # Page ops and the rest apart: page tag storage touches only the former.
    def is_page(r: Row) -> bool:
        return any(x in r.metric for x in ("pages_o", "folio_o"))

    parts = []
    for label, sel in (("page and folio", is_page), ("slab, vmalloc and percpu", lambda r: not is_page(r))):
        group = [r for r in ov if sel(r)]
        per_k = [f"{k} {signed(statistics.median(vs))}" for k in run.kernels
                 if (vs := [r.value for r in group if r.kernel == k])]
        if per_k:
            parts.append(f"median over the {len({r.metric for r in group})} {label} operations: "
                         + ", ".join(per_k))
    return (f"The largest p50 latency overhead vs off is {top.kernel} on "
            f"{top.metric[:-len('.p50.overhead')]} ({signed(top.value)}); " + "; ".join(parts) + ".")


def _sentence_distribution(rows: Summary, run: Run, w: str) -> str:
    best = None
    for r in rows.workload_rows(w, ".p99"):
        p50 = rows.value(r.kernel, w, r.metric[:-4] + ".p50")
        if p50 and p50 > 0:
            cand = (r.value / p50, r.kernel, r.metric[:-4], r.note)
            best = cand if best is None or cand[:3] > best[:3] else best
    if best is None:
        return "No latency percentiles were recorded."
    p50_row = rows.get(best[1], w, best[2] + ".p50")
    agree = (run.deterministic and BOOTS_DISAGREE not in best[3]
             and p50_row is not None and BOOTS_DISAGREE not in p50_row.note)
    det = " (icount, and its boots agree: the same in every boot)" if agree else ""
    return (f"The longest tail relative to its median is {best[1]} on {best[2]}: p99 is "
            f"{num(best[0], 2)}x its p50{det}.")


def _sentence_throughput(rows: Summary, run: Run) -> str:
    rel = [r for r in rows.rows if r.value is not None and (
        (r.workload == "stress" and r.metric.endswith(".bogo_ops_per_s.rel"))
        or (r.workload == "fio" and r.metric in ("read_bw.rel", "write_bw.rel")))]
    if not rel:
        return "No stress-ng or fio throughput was recorded."
    lo = min(rel, key=lambda r: (r.value, r.kernel, r.metric))
    hi = max(rel, key=lambda r: (r.value, r.kernel, r.metric))

    def name(r: Row) -> str:
        if r.workload == "stress":
            return f"stress-ng {r.metric.split('.')[0]} bogo-ops/s"
        return f"fio {r.metric[:-len('_bw.rel')]} bandwidth" if r.metric.endswith("_bw.rel") \
            else f"{r.workload} {r.metric[:-4]}"
    return (f"Lowest throughput relative to off: {lo.kernel} on {name(lo)} ({num(lo.value, 3)}x); "
            f"highest: {hi.kernel} on {name(hi)} ({num(hi.value, 3)}x).")


def figure_sentence(fig: Figure, rows: Summary, run: Run) -> str:
    if fig.kind == "memory":
        return _sentence_memory(rows, run)
    if fig.kind == "latency-overhead":
        return _sentence_latency(rows, run, fig.workload)
    if fig.kind == "latency-distribution":
        return _sentence_distribution(rows, run, fig.workload)
    if fig.kind == "throughput":
        return _sentence_throughput(rows, run)
    return ""


# --- sections ---------------------------------------------------------------

def timing_text(run: Run) -> list[str]:
    if run.timing == "icount":
        out = [
            "Guest time is **executed instructions** (QEMU `-icount shift=0`: one virtual "
            "nanosecond is one instruction); latencies are in instructions and stress-ng/fio "
            "times in virtual seconds, i.e. instruction counts of the whole workload (lower is better).",
            "",
            "- It shows: the extra code each way of storing page tag references executes, exactly and "
            "repeatably. Boots of one kernel are expected to replay exactly; the analysis "
            "checks that per metric (see Warnings) and shows the boot-to-boot **spread** (min..max) "
            "where they agree.",
            "- It cannot show by itself: memory-system cost. icount counts no cache misses, so the "
            "instruction figures **understate page_ext lookup costs on real hardware**: the extra cache "
            "line a page_ext reference touches is one load here but can be a miss on a real machine. "
            "The cache-model section (a QEMU plugin run on the same boots) estimates that part.",
            "- Not wall-clock time, and not real contention: with several vCPUs (micro-smp) QEMU runs "
            "them round-robin in one host thread, so their accesses interleave at instruction "
            "boundaries but never collide in a cache; those boots replay exactly too, and are checked "
            "like the others.",
        ]
    elif run.timing == "kvm":
        out = [
            "Guest time is **wall-clock nanoseconds** under KVM on the host CPU: caches and TLB are "
            "real, but so is noise from the host. Intervals are 95% bootstrap CIs over boots "
            f"(resampling each kernel's boots independently, {stats.RESAMPLES} resamples, fixed seed); "
            "with few repetitions they are wide.",
        ]
    else:
        out = [
            "**Timing is plain TCG wall clock (`--allow-tcg`): relative only.** Emulation distorts "
            "every latency, so the absolute figures are not latencies; only ratios between kernels "
            "are shown, and even those over-weight instruction count against memory effects.",
        ]
    return out + [""]


def run_facts(run: Run) -> list[str]:
    m, h = run.manifest, run.manifest.get("host") or {}
    qemu = h.get("qemu")
    qemu = ", ".join(qemu) if isinstance(qemu, list) else (qemu or "unknown")
    rev = str(m.get("git_revision") or "unknown") + (" (dirty tree)" if m.get("git_dirty") else "")
    facts = [
        ["Run", run.run_id], ["State", run.state], ["Git revision", rev],
        ["Start / end (UTC)", f"{m.get('start', '?')} / {m.get('end', '?')}"],
        ["Wall time", f"{m.get('wall_s', '?')} s"],
        ["Timing", f"{run.timing} (unit: {run.unit})"],
        ["Repetitions", f"{m.get('repetitions', '?')}" + (" (quick run)" if m.get("quick") else "")],
        ["Kernels", ", ".join(run.kernels)],
        ["Host CPU", f"{h.get('cpu') or 'unknown'} ({h.get('cpus', '?')} CPUs)"],
        ["Host memory", f"{h.get('mem_kb', '?')} kB"], ["Host kernel", str(h.get("kernel") or "unknown")],
        ["QEMU", qemu], ["KVM verdict", " ".join(str(h.get("kvm_verdict") or "none recorded").split())],
        ["Boots", f"{len(run.boots)} ok, {len(run.failed)} failed"],
    ]
    return table(["Fact", "Value"], facts)


def kernel_table(run: Run) -> list[str]:
    bi = run.manifest.get("build_info") or {}
    modes = page_modes(run)
    rows = []
    for k in run.kernels:
        boots = [d.boot for d in run.boots if d.boot.kernel == k]
        variant = boots[0].variant if boots else "?"
        extra = sorted({b.cmdline_extra if b.kernel_args is None else b.kernel_args for b in boots})
        info = bi.get(variant) or {}
        rows.append([k, variant, modes.get(k, "not reported"), "; ".join(e for e in extra if e) or "-",
                     str(info.get("kernel_release", "not recorded")), str(info.get("config_hash", "-")),
                     str(info.get("series_hash", "-")), str(info.get("compiler", "-"))])
    return table(["Kernel", "Variant", "Page tag refs", "Command line extra", "Release",
                  "Config hash", "Series hash", "Compiler"], rows)


@dataclass(frozen=True)
class TalkMark:
    """One allocation-time figure of the LSFMM 2024 talk: what it measured
    (allocation only, no free), on which kernel role (bench/kernels) and op
    of this benchmark that is the like of."""
    figure: str     # the talk table's row
    role: str
    op: str         # alloc_bench op (module tag, as the talk's benchmark module)
    value: float    # %
    cell: str       # as the talk put it
    mark: str       # its label on the slide


TALK_ALLOC = (TalkMark("Page allocation, baseline", "pageext", "pages_o0_alloc", 40.0, "+40%", "talk +40%"),
              TalkMark("Slab allocation, baseline", "pageext", "kmalloc_64_alloc", 7.0, "+7%", "talk slab +7%"),
              TalkMark("Page allocation, packed refs", "flags", "pages_o0_alloc", 7.0, "+7% (reported)",
                       "talk +7%"),
              TalkMark("Slab allocation, packed refs", "flags", "kmalloc_64_alloc", 9.5, "+9.5%",
                       "talk slab +9.5%"))


def talk_table(rows: Summary, run: Run) -> list[str]:
    tag = " (tcg: relative only)" if run.relative_only else ""

    def micro(k: str, op: str) -> tuple[str, str]:
        src = f"{k} / micro / {op}.p50.overhead"
        if k not in run.kernels or not rows.has_kernel(k, "micro"):
            return "not in this run", src
        cell = with_interval(rows.get(k, "micro", f"{op}.p50.overhead"))
        return cell + (tag if cell != "n/a" else ""), src

    baseline, ext16 = main(run, "pageext"), main(run, "ext16")
    mws = mem_workloads_from(rows)
    mem_parts, ext_parts = [], []
    for w in mws:
        pct = rows.value(baseline, w, "page_ext_pct_ram")
        if pct is not None:
            mem_parts.append(f"{num(pct, 3)}% of RAM, {bytes_per_frame(rows, baseline, w)} bytes per {FRAME} "
                             f"({w[5:]} MiB)")
        vb = rows.value(ext16, w, "page_ext_bytes.vs_baseline")
        if vb is not None:
            ext_parts.append(f"{signed(vb)} ({w[5:]} MiB)")
    mem_src = f"{baseline} / mem-m* / page_ext_pct_ram, {BYTES_PER_FRAME}"
    alloc = {t.figure: [t.figure, t.cell, *micro(main(run, t.role), t.op)] for t in TALK_ALLOC}
    body = [
        ["Memory overhead (page_ext refs)", "≈0.2% of RAM (8 bytes per 4 KiB page)",
         "; ".join(mem_parts) or "not measured", mem_src],
        alloc["Page allocation, baseline"], alloc["Slab allocation, baseline"],
        ["16-bit page_ext refs: page memory", "−75%", "; ".join(ext_parts) or "not measured",
         f"{ext16} / mem-m* / page_ext_bytes.vs_baseline"],
        alloc["Page allocation, packed refs"], alloc["Slab allocation, packed refs"],
    ]
    return table(["Figure", "LSFMM 2024 talk", "This run", "Row (kernel / workload / metric)"], body)


def micro_table(rows: Summary, run: Run, w: str) -> list[str]:
    ks = [k for k in run.kernels if k != run.ref(k) and rows.has_kernel(k, w)]
    body = []
    for op in op_order(run, w):
        ref = rows.get(run.main_reference, w, f"{op}.p50")
        cells = []
        for k in ks:
            c = with_interval(rows.get(k, w, f"{op}.p50.overhead"))
            d = rows.value(k, w, f"{op}.p50.delta")
            p99 = rows.value(k, w, f"{op}.p99.overhead")
            out = rows.value(k, w, f"{op}.outliers")
            cells.append(c + (f" ({signed(d, 0, '')})" if d is not None else "")
                         + (f"; p99 {signed(p99)}" if p99 is not None else "")
                         + (f"; {num(out, 0)} outliers" if out else ""))
        body.append([op, num(ref.value if ref else None, 0)] + cells)
    return table(["Operation", f"{run.main_reference} p50 ({rows_unit(rows, w)})"]
                 + [f"{k}: p50 (delta); p99" for k in ks], body)


FASTPATH_OPS = (("pages_o0", "order-0 page"), ("folio_o0", "order-0 folio"),
                ("kmalloc_64", "kmalloc-64 (slab: patches/packed-slab)"))
SITES = (("", "module tag"), (KERNEL_SITE_PREFIX, "kernel tag"))


def own_nopf(run: Run, k: str) -> bool:
    """k's reference is its group's nopf kernel (packed-distro): its .delta
    and .delta_nopf are one figure."""
    return run.ref(k) == run.counterpart(k, "nopf")


def fastpath_table(rows: Summary, run: Run, w: str = "micro") -> list[str]:
    """Absolute p50 instruction deltas per op and phase, vs off and vs nopf."""
    ks = [k for k in run.kernels if k != run.ref(k) and rows.has_kernel(k, w)]
    nopf = main(run, "nopf")
    body = []
    for op, label in FASTPATH_OPS:
        for prefix, site in SITES:
            for phase in ("alloc", "free", "pair"):
                m = f"{prefix}{op}_{phase}.p50"
                ref = rows.get(run.main_reference, w, m)
                if ref is None or ref.value is None:
                    continue
                cells = []
                for k in ks:
                    d = rows.value(k, w, m + ".delta")
                    dn = rows.value(k, w, m + ".delta_nopf")
                    x = vs_main_off(rows, run, k, w, m)
                    cells.append(signed(d, 0, "") if k == nopf or dn is None or own_nopf(run, k)
                                 else f"{signed(d, 0, '')} / {signed(dn, 0, '')}")
                    cells[-1] += f"; {x}" if x else ""
                body.append([label, site, phase, num(ref.value, 0)] + cells)
    if not body:
        return []
    head = ["Operation", "Call site", "Phase", f"{run.main_reference} p50 ({rows_unit(rows, w)})"]
    head += [f"{k} vs {run.ref(k)}" if k == nopf or own_nopf(run, k) else f"{k} vs {run.ref(k)} / vs nopf"
             for k in ks]
    return table(head, body)


def fastpath_checks(rows: Summary, run: Run, w: str = "micro") -> list[tuple[str, float, bool | None]]:
    """(target, measured, met) of the fast-path targets, computed from this
    run; met is None for a figure shown beside them that has no target."""
    def d(k: str, m: str, kind: str = ".delta") -> float | None:
        return rows.value(k, w, m + kind)

    off, baseline, nopf = run.main_reference, main(run, "pageext"), main(run, "nopf")
    packed, packed_nopf, ext16 = main(run, "flags"), main(run, "flags-nopf"), main(run, "ext16")
    checks = []
    for prefix, site, limit in ((KERNEL_SITE_PREFIX, "kernel tag", 30), ("", "module tag", 35)):
        m = f"{prefix}pages_o0_pair.p50"
        v = d(packed, m, ".delta_nopf")
        if v is not None:
            checks.append((f"order-0 pair, {site}: {packed} - nopf <= {limit}", v, v <= limit))
        pk, bl = d(packed, m), d(baseline, m)
        if pk is not None and bl is not None and bl > 0:
            checks.append((f"order-0 pair, {site}: {packed} vs {off} <= 1/8 of {baseline} vs {off} "
                           f"({num(bl / 8, 1)})", pk, pk <= bl / 8))
        for nk in (nopf, packed_nopf):
            nv = d(nk, m)
            if nv is not None:
                checks.append((f"order-0 pair, {site}: {nk} - {off} <= 15", nv, nv <= 15))
        pn = d(packed_nopf, m)
        if pk is not None and pn is not None:
            checks.append((f"order-0 pair, {site}: {packed} - {packed_nopf} <= {limit} "
                           "(profiling on vs off, same kernel)",
                           pk - pn, pk - pn <= limit))
        e16 = d(ext16, m)
        if e16 is not None and bl is not None:
            checks.append((f"order-0 pair, {site}: {ext16} vs {off} <= {baseline} vs {off} ({num(bl, 0)})",
                           e16, e16 <= bl))
    # Selective profiling: at a call site switched off, a pair costs what
    # it costs with profiling off, plus at most 5 (issue 28).
    tagoff = main(run, "tagoff")
    for prefix, site in SITES:
        for op, what in (("pages_o0", "order-0 pair"), ("kmalloc_64", "kmalloc-64 pair")):
            m = f"{prefix}{op}_pair.p50"
            t, pn = d(tagoff, m), d(packed_nopf, m)
            if t is not None and pn is not None:
                checks.append((f"{what}, {site} switched off: {tagoff} - {packed_nopf} <= 5",
                               t - pn, t - pn <= 5))
            # While one site is off, the others test their flag (static key on).
            ko, pk = d(main(run, "keyon"), m), d(packed, m)
            if ko is not None and pk is not None:
                checks.append((f"{what}, {site} on while another is off: {main(run, 'keyon')} - {packed}",
                               ko - pk, None))
    for prefix, site in SITES:
        m = f"{prefix}kmalloc_64_pair.p50"
        pk, bl = d(packed, m), d(baseline, m)
        if pk is not None:
            checks.append((f"kmalloc-64 pair, {site}: {packed} - {off} <= {SLAB_PAIR_LIMIT} (profiling on)",
                           pk, pk <= SLAB_PAIR_LIMIT))
        # Beside it, no target: patches/packed-slab changes the slab hooks on
        # purpose, so kmalloc's cost is no longer meant to equal 6.12's.
        if pk is not None and bl is not None:
            checks.append((f"kmalloc-64 pair, {site}: {packed} vs {off} beside {baseline} vs {off} ({num(bl, 0)})",
                           pk, None))
    return checks


# The slab target (patches/packed-slab): a kmalloc-64 pair with profiling
# on costs at most the order-0 page pair's level.
SLAB_PAIR_LIMIT = 45


def fastpath_targets(rows: Summary, run: Run, w: str = "micro") -> list[str]:
    """The fast-path targets, computed from this run (reported, not asserted)."""
    checks = fastpath_checks(rows, run, w)
    if not checks:
        return []
    return table(["Target", "Measured (instructions, p50)", "Met"],
                 [[t, num(v, 0), "no target" if ok is None else "yes" if ok else "**no**"]
                  for t, v, ok in checks])


def window_insns_table(rows: Summary, run: Run, w: str = "micro") -> list[str]:
    """Instructions inside the plugin's window around the allocator call
    (p50): the same op as the clock-timed rows without the clock reads and
    the benchmark's own dispatch code, which is compiled per kernel."""
    ks = [k for k in run.kernels if k != run.ref(k) and rows.has_kernel(k, w)]
    nopf = main(run, "nopf")
    body = []
    for prefix, site in SITES:
        for phase in ("alloc", "free", "pair"):
            m = f"cache.{prefix}pages_o0_{phase}.insns.{'mean' if phase == 'pair' else 'p50'}"
            ref = rows.value(run.main_reference, w, m)
            if ref is None:
                continue
            cells = []
            for k in ks:
                d, dn = rows.value(k, w, m + ".delta"), rows.value(k, w, m + ".delta_nopf")
                cells.append(signed(d, 0, "") if dn is None or k == nopf else f"{signed(d, 0, '')} / {signed(dn, 0, '')}")
            body.append([f"order-0 page, {site}", phase, num(ref, 0)] + cells)
    if not body:
        return []
    return table(["Operation", "Phase", f"{run.main_reference} (instructions)"]
                 + [f"{k} vs own off" + ("" if k == nopf or run.is_peer(k) else " / vs nopf") for k in ks],
                 body)


def static_insns_table(run: Run) -> list[str]:
    """bench/fastpath-insns as recorded at the start of the run, if it was."""
    p = run.path / "fastpath-insns.csv"
    if not p.exists():
        return []
    recs = list(csv.DictReader(p.read_text().splitlines()))
    funcs = list(dict.fromkeys(r["function"] for r in recs))
    variants = list(dict.fromkeys(r["variant"] for r in recs))
    by = {(r["variant"], r["function"]): r for r in recs}
    peer_variants = {k.variant for k in run.table if k.peer}

    def cell(v: str, f: str) -> str:
        if (v, f) in by:
            return f"{by[v, f]['instructions']} ({signed(float(by[v, f]['delta_vs_off']), 0, '')})"
        # A function another variant of the same tree has is missing; one
        # that no variant of this tree has does not exist there.
        peer = v in peer_variants
        if any((u, f) in by for u in variants if (u in peer_variants) == peer):
            return "missing"
        return f"not in {'7.3' if peer else '6.12'}"

    # A row may be a set of functions, summed over those a kernel has
    # ("symbols"; runs before 2026-12-06 recorded one function a row).
    def symbols(v: str, f: str) -> str:
        return by[v, f].get("symbols") or f

    sets = [f for f in funcs if any(symbols(v, f) != f for v in variants if (v, f) in by)]
    body = [[v] + [cell(v, f) for f in funcs] for v in variants]
    out = table(["Variant"] + [f if f in sets else f"`{f}`" for f in funcs], body)
    for f in sets:
        which: dict[str, list[str]] = {}
        for v in variants:
            if (v, f) in by:
                which.setdefault(symbols(v, f), []).append(v)
        out += [f"{f} sums the functions of its set that each kernel has (one may be inlined into "
                "another or split out of it): "
                + "; ".join(" + ".join(f"`{s}`" for s in syms.split("+")) + f" ({', '.join(vs)})"
                            for syms, vs in which.items()) + ".", ""]
    return out


CACHE_OPS = (("pages_o0", "order-0 page"), ("kmalloc_64", "kmalloc-64"))
CACHE_PATTERNS = (("", "hot loop"), ("_batch", "batch"))


def cache_params(run: Run) -> dict[str, str] | None:
    """The cache model's parameters, as the first boot with a cache model recorded them."""
    return next((d.data.cache_params for d in run.boots
                 if isinstance(d.data, Micro) and d.data.cache_params), None)


def cache_params_text(run: Run) -> str:
    p = cache_params(run)
    if p:
        return (f"Cache model (bench/qemu-plugin): L1D {p.get('l1', '?')}, L2 {p.get('l2', '?')}, "
                f"LLC {p.get('llc', '?')} (KiB/ways, LRU, physical addresses); estimated cycles = "
                f"instructions + {p.get('pen_l2', '?')} per L2 hit + {p.get('pen_llc', '?')} per LLC hit "
                f"+ {p.get('pen_mem', '?')} per LLC miss. A model, not a measurement of any CPU: "
                f"it shows which extra lines an operation needs, not what they cost on a given part.")
    return ""


def cache_table(rows: Summary, run: Run, w: str = "micro") -> list[str]:
    """Per kernel: LLC misses and estimated cycles per op (mean), and the
    difference to the kernel's own off, for hot and batch patterns.  Kernels
    that did not run workload w get no column; one that ran it without cache
    data gets "missing" cells."""
    kernels = [k for k in run.kernels if rows.has_kernel(k, w)]
    body = []
    for op, olabel in CACHE_OPS:
        for prefix, site in SITES:
            for pat, plabel in CACHE_PATTERNS:
                for phase in ("alloc", "free", "pair"):
                    base = f"cache.{prefix}{op}{pat}_{phase}"
                    if not any(rows.get(k, w, f"{base}.llc_miss.mean") for k in kernels):
                        continue
                    cells = []
                    for k in kernels:
                        miss = rows.value(k, w, f"{base}.llc_miss.mean")
                        cyc = rows.value(k, w, f"{base}.est_cycles.mean")
                        dc = rows.value(k, w, f"{base}.est_cycles.mean.delta")
                        if miss is None or cyc is None:
                            cells.append("missing")
                        elif k == run.ref(k):
                            cells.append(f"{num(miss, 2)} / {num(cyc, 0)}")
                        else:
                            cells.append(f"{num(miss, 2)} / {num(cyc, 0)} ({signed(dc, 0, '')})")
                    body.append([olabel, site, plabel, phase] + cells)
    if not body:
        return []
    return table(["Operation", "Call site", "Pattern", "Phase"] + kernels, body)


def cache_checks(rows: Summary, run: Run, w: str = "micro") -> list[tuple[str, float, bool, int]]:
    """(target, measured, met, digits) of the cache-model targets."""
    off, baseline, packed = run.main_reference, main(run, "pageext"), main(run, "flags")
    checks = []
    for prefix, site in SITES:
        m = f"cache.{prefix}pages_o0_batch_pair"
        bl = rows.value(baseline, w, f"{m}.llc_miss.mean.delta")
        pk = rows.value(packed, w, f"{m}.llc_miss.mean.delta")
        if bl is not None:
            checks.append((f"batch order-0 pair, {site}: {baseline} LLC misses - {off} >= 1", bl, bl >= 1, 2))
        if pk is not None:
            checks.append((f"batch order-0 pair, {site}: {packed} LLC misses within 0.1 of {off}", pk,
                           abs(pk) <= 0.1, 2))
        bc = rows.value(baseline, w, f"{m}.est_cycles.mean.delta")
        pc = rows.value(packed, w, f"{m}.est_cycles.mean.delta")
        if bc is not None and pc is not None and bc > 0:
            checks.append((f"batch order-0 pair, {site}: {packed} est. cycles overhead <= 1/5 of {baseline}'s "
                           f"({num(bc / 5, 0)})", pc, pc <= bc / 5, 0))
    return checks


def unmet_targets(rows: Summary, run: Run) -> list[str]:
    """Every target of the fast-path and cache-model tables this run does not
    meet, with its measured value: "<target> (measured <value>)"."""
    out = [f"{t} (measured {num(v, 0)})" for t, v, ok in fastpath_checks(rows, run) if ok is False]
    out += [f"{t} (measured {signed(v, dg, '')})" for t, v, ok, dg in cache_checks(rows, run) if not ok]
    return out


def cache_targets(rows: Summary, run: Run, w: str = "micro") -> list[str]:
    checks = cache_checks(rows, run, w)
    if not checks:
        return []
    return table(["Target (cache model)", "Measured (mean per pair, vs off)", "Met"],
                 [[t, signed(v, dg, ""), "yes" if ok else "**no**"] for t, v, ok, dg in checks])


# Roles (bench/kernels) shown side by side: ours, then the peer's.
PEER_PAIRS = (("nopf", "profiling compiled in, off"),
              ("pageext", "page_ext references (8 B/page)"),
              ("flags", "index in page->flags"),
              ("ext16", "16-bit page_ext references"))


def peer_table(rows: Summary, run: Run, w: str = "micro") -> list[str]:
    """Ours next to upstream's, each against its own tree's off."""
    if not any(run.is_peer(k) for k in run.kernels):
        return []
    ops = [(f"{p}{op}_{ph}.p50", f"{ol}, {site}, {ph}") for op, ol in (("pages_o0", "order-0 page"),
                                                                     ("kmalloc_64", "kmalloc-64"))
           for p, site in SITES for ph in ("alloc", "free", "pair")]
    head = ["Metric"]
    cols = []
    for role, what in PEER_PAIRS:
        for k in (run.role(role, "main"), run.role(role, "peer")):
            if k and k in run.kernels:
                cols.append(k)
                head.append(f"{k} ({what})")
    body = []
    for m, label in ops:
        if rows.get(run.main_reference, w, m) is None:
            continue
        body.append([f"{label} (instructions vs own off)"] + [signed(rows.value(k, w, m + ".delta"), 0, "")
                                                             for k in cols])
    for prefix, site in SITES:
        m = f"cache.{prefix}pages_o0_batch_pair"
        if rows.get(run.main_reference, w, f"{m}.llc_miss.mean"):
            body.append([f"batch order-0 pair, {site}: LLC misses vs own off"]
                        + [signed(rows.value(k, w, f"{m}.llc_miss.mean.delta"), 2, "") for k in cols])
            body.append([f"batch order-0 pair, {site}: est. cycles vs own off"]
                        + [signed(rows.value(k, w, f"{m}.est_cycles.mean.delta"), 0, "") for k in cols])
    for mw in mem_workloads_from(rows):
        body.append([f"page_ext bytes per {FRAME} ({mw[5:]} MiB)"]
                    + [bytes_per_frame(rows, k, mw) for k in cols])
    return table(head, body)


def attribution_table(rows: Summary, run: Run, w: str = "micro") -> list[str]:
    """The peer tree's compressed mode, step by step: upstream's (flags), the
    series' first patches (series-step), the whole series (series), each
    against the tree's off, and what each step took away."""
    steps = [k for k in (run.role(r, "peer") for r in ("flags", "series-step", "series"))
             if k and rows.has_kernel(k, w)]
    if len(steps) < 2:
        return []
    head = ["Metric"] + [f"{k} vs {run.ref(k)}" for k in steps] + \
        [f"{b} - {a}" for a, b in zip(steps, steps[1:])]
    body = []

    def line(label: str, m: str, digits: int) -> None:
        vals = [rows.value(k, w, f"{m}.delta") for k in steps]
        if all(v is None for v in vals):
            return
        diffs = [None if a is None or b is None else b - a for a, b in zip(vals, vals[1:])]
        body.append([label] + [signed(v, digits, "") for v in vals + diffs])

    for prefix, site in SITES:
        for op, ol in (("pages_o0", "order-0 page"), ("kmalloc_64", "kmalloc-64")):
            line(f"{ol} pair, {site} (instructions, p50)", f"{prefix}{op}_pair.p50", 0)
        m = f"cache.{prefix}pages_o0_batch_pair"
        line(f"batch order-0 pair, {site}: LLC misses", f"{m}.llc_miss.mean", 2)
        line(f"batch order-0 pair, {site}: est. cycles", f"{m}.est_cycles.mean", 0)
    return table(head, body) if body else []


FUNCTION_OPS = (("ksite_kmalloc_64", "kmalloc-64, kernel tag"), ("ksite_pages_o0", "order-0 page, kernel tag"),
                ("cache_192", "kmem_cache 192 B, module tag"))


def function_values(rows: Summary, w: str) -> dict[tuple[str, str], dict[str, float]]:
    """{(kernel, op): {function: instructions per op}} from the fn.<op>.<function>
    rows; a value the boots disagree on is an error, not a blank cell."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    for r in rows.rows:
        if r.workload != w or not r.metric.startswith("fn."):
            continue
        op, f = r.metric[3:].split(".", 1)
        if r.value is None:
            raise ValueError(f"{r.kernel} / {w} / {r.metric}: no value ({r.note or 'boots disagree'})")
        out.setdefault((r.kernel, op), {})[f] = r.value
    return out


def function_table(rows: Summary, run: Run, w: str = "micro") -> list[str]:
    """Where an op's instructions go: per kernel function, each kernel's
    instructions per op and, in parentheses, the difference to its own off
    (a function a kernel does not run counts 0).  Only functions some kernel
    differs in by half an instruction or more."""
    fv = function_values(rows, w)
    profiled = {k for k, _ in fv}
    # kernels with a profile and a profiled off: the table's columns
    ks = [k for k in run.kernels if k != run.ref(k) and k in profiled and run.ref(k) in profiled]
    head = ["Op", "Function"] + [f"{k} (vs {run.ref(k)})" for k in ks]
    body = []
    for prefix, what in FUNCTION_OPS:
        for phase in ("alloc", "free"):
            op = f"{prefix}_{phase}"
            vals = {k: fv.get((k, op)) for k in ks + [run.ref(k) for k in ks]}
            if all(v is None for v in vals.values()):
                continue    # an op this run did not profile
            missing = [k for k in ks if vals[k] is None or vals[run.ref(k)] is None]
            if missing:
                raise ValueError(f"{missing[0]} / {w}: no per-function profile of {op} (or none of "
                                 f"its {run.ref(missing[0])}), which the other kernels have")
            funcs = sorted({f for k in ks for f in (*vals[k], *vals[run.ref(k)])})
            diff = {(k, f): vals[k].get(f, 0.0) - vals[run.ref(k)].get(f, 0.0) for k in ks for f in funcs}
            shown = [f for f in funcs if any(abs(diff[k, f]) >= 0.5 for k in ks)]
            shown.sort(key=lambda f: (-max(abs(diff[k, f]) for k in ks), f))
            for f in shown + ["all functions"]:
                cells = []
                for k in ks:
                    if f == "all functions":
                        v = sum(vals[k].values())
                        d = v - sum(vals[run.ref(k)].values())
                    else:
                        v, d = vals[k].get(f, 0.0), diff[k, f]
                    cells.append(f"{num(v, 1)} ({signed(d, 1, '')})")
                body.append([f"{what}, {phase}", f"`{f}`" if f != "all functions" else f] + cells)
    return table(head, body) if body else []


def rows_unit(rows: Summary, w: str) -> str:
    """The unit of workload w's timed ops (<op>.p50), not of the cache
    model's or the function profiles' rows (cache.*, fn.*)."""
    for r in rows.rows:
        if r.workload == w and r.metric.endswith(".p50") and r.metric.count(".") == 1:
            return r.unit
    return "?"


def macro_table(rows: Summary, run: Run, w: str, metrics: list[tuple[str, str]]) -> list[str]:
    ks = [k for k in run.kernels if k != run.ref(k) and rows.has_kernel(k, w)]
    body = []
    for metric, label in metrics:
        ref = rows.get(run.main_reference, w, metric.rsplit(".", 1)[0])
        is_rel = metric.endswith(".rel")
        cells = [with_interval(rows.get(k, w, metric), 3, "x", sign=False) if is_rel
                 else with_interval(rows.get(k, w, metric)) for k in ks]
        body.append([label, f"{num(ref.value if ref else None, 3)} {ref.unit if ref else ''}".strip()] + cells)
    return table(["Metric", run.main_reference] + ks, body)


def memory_table(rows: Summary, run: Run) -> list[str]:
    out: list[str] = []
    for w in mem_workloads_from(rows):
        body = []
        for k in run.kernels:
            v = lambda m, d=1: num(rows.value(k, w, m), d)  # noqa: E731
            body.append([k, v("page_ext_bytes", 0), bytes_per_frame(rows, k, w), v("page_ext_pct_ram", 3),
                         num((rows.value(k, w, "page_ext_bytes_per_tib") or 0) / (1 << 30), 2)
                         if rows.value(k, w, "page_ext_bytes_per_tib") is not None else "n/a",
                         signed(rows.value(k, w, "memtotal_kb.delta"), 0, " kB") if k != run.ref(k) else "-",
                         signed(rows.value(k, w, "memfree_kb.delta"), 0, " kB") if k != run.ref(k) else "-",
                         *((v("allocinfo_bytes", 0), v("allocinfo_lines", 0))
                           if rows.value(k, w, "allocinfo_lines") is not None or k != run.ref(k)
                           else ("-", "-"))])
        out += [f"Guest RAM {w[5:]} MiB:", ""]
        out += table(["Kernel", "page_ext bytes", f"bytes / {FRAME}", "% of RAM", "GiB per TiB RAM",
                      "MemTotal vs off", "MemFree vs off", "allocinfo bytes", "allocinfo tags"], body)
    return out


def determinism(summary: Summary) -> tuple[int, int]:
    """Boots per kernel and workload, and how many workloads have metrics
    whose boots disagree (summarize's warnings)."""
    return (max((r.n_boots for r in summary.rows), default=0),
            sum(1 for w in summary.warnings if "disagree" in w))


def five_lines(rows: Summary, run: Run, summary: Summary) -> list[str]:
    """What the run shows, in five generated lines (none hard-coded)."""
    def listed(w: str, kernels: list[str], key: str, fmt) -> list[str]:
        return [f"{k} {fmt(k)}" for k in kernels if rows.value(k, w, key) is not None]

    out = []
    mws = mem_workloads_from(rows)
    if mws:
        w = max(mws, key=lambda w: int(w[5:]))
        ks = run.pick(("pageext", "ext16", "flags", "numa"), ("main", "peer", "other"))
        parts = listed(w, ks, BYTES_PER_FRAME, lambda k: bytes_per_frame(rows, k, w, unit=" B"))
        parts += [f"{k}: {NO_FRAME_COUNT}" for k in no_frame_count(rows, ks, w)]
        out.append(f"Memory for page tags per {FRAME} ({w[5:]} MiB guest): " + ", ".join(parts) + ".")
    # Upstream's kernels and this project's 7.3 series, in both lines (the
    # series was missing from them: issue 26's headline numbers).
    up = [k for k in run.pick(("nopf", "pageext", "flags", "series-step", "series"), ("peer", "other"))
          if run.is_peer(k)]
    for site, prefix, peers in (("kernel", KERNEL_SITE_PREFIX, up), ("module", "", up)):
        m = f"{prefix}pages_o0_pair.p50"
        fmt = (lambda k: f"{signed(rows.value(k, 'micro', m + '.delta'), 0, '')} "  # noqa: E731
                         f"({signed(rows.value(k, 'micro', m + '.overhead'))})"
                         + (f" vs {run.ref(k)}, {x}" if (x := vs_main_off(rows, run, k, "micro", m)) else ""))
        mine = [k for k in run.pick(("pageext", "nopf", "flags-nopf", "flags", "ext16"), ("main", "other"))
                if not run.is_peer(k)]
        parts = listed("micro", mine, m + ".delta", fmt)
        ups = listed("micro", peers, m + ".delta", fmt)
        if parts:
            out.append(f"Order-0 alloc+free, {site} tag, instructions vs own off (p50): " + ", ".join(parts)
                       + ("; Linux 7.3: " + ", ".join(ups) if ups else "") + ".")
    m = f"cache.{KERNEL_SITE_PREFIX}pages_o0_batch_pair"
    parts = listed("micro", run.pick(("pageext", "flags", "ext16", "series"), ("main", "peer")),
                   m + ".llc_miss.mean.delta",
                   lambda k: f"{signed(rows.value(k, 'micro', m + '.llc_miss.mean.delta'), 2, '')} LLC misses, "
                             f"{signed(rows.value(k, 'micro', m + '.est_cycles.mean.delta'), 0, '')} est. cycles")
    if parts:
        out.append("Cache model, batch of 64Ki order-0 pages, per alloc+free vs own off: " + "; ".join(parts) + ".")
    reps, flagged = determinism(summary)
    det = ("one boot per kernel and workload, so determinism was not checked (needs R >= 2)" if reps < 2
           else f"{flagged} workload(s) have metrics whose boots disagree (see Warnings)" if flagged
           else "boots of each kernel agree on every metric")
    unmet = unmet_targets(rows, run)
    # The last line, never left out: the boots, and every target missed.
    out.append(f"{len(run.boots)} boots ok, {len(run.failed)} failed; {det}"
               + (". Targets not met: " + "; ".join(unmet) if unmet else "") + ".")
    return out[:5] if len(out) <= 5 else out[:4] + out[-1:]


def render(run: Run, summary: Summary, figures: list[Figure]) -> str:
    rows = summary
    dist = distro(run)
    L: list[str] = [f"# Allocation profiling overhead: run {run.run_id}", "",
                    "Generated by `analysis/plots.py` from the raw files of this run; do not edit. "
                    f"All overheads are relative to the `{run.main_reference}` kernel (no profiling) of the same tree"
                    + (f"; `{dist[0]}*` kernels, built with Debian's page->flags layout, against "
                       f"`{dist[1]}` (the same kernel with profiling switched off)" if dist else "")
                    + ". Numbers are in `summary.csv` / `summary.json` beside this file.", ""]
    if run.relative_only:
        L += ["> **Relative only:** plain TCG wall clock; absolute times are not latencies.", ""]
    slide = next((f for f in figures if f.kind == "slide"), None)
    if slide:
        L += [f"![{slide.title}]({slide.name}.png)", ""]
    L += ["## Summary", ""] + [f"{i}. {ln}" for i, ln in enumerate(five_lines(rows, run, summary), 1)] + [""]
    L += ["## Run", ""] + run_facts(run)
    L += ["## What this timing mode can and cannot show", ""] + timing_text(run)
    L += ["## Kernels", ""] + kernel_table(run)
    L += ["## Failed boots", ""]
    if run.failed:
        L += table(["Boot", "Status"], [[b.id, b.status] for b in run.failed])
    else:
        L += ["None.", ""]
    # always there: the summary and the timing section point to it
    L += ["## Warnings", ""] + ([f"- {w}" for w in summary.warnings] if summary.warnings else ["None."]) + [""]
    L += ["## LSFMM 2024 talk vs this run", ""] + talk_table(rows, run)
    L += [INTERVALS_LEGEND, ""]
    fp = fastpath_table(rows, run)
    if fp:
        L += ["## Page allocator fast path: instruction deltas (micro, p50)", "",
              f"Absolute p50 differences in instructions per operation, against `{run.main_reference}` "
              f"(no profiling) and against `{main(run, 'nopf')}` (profiling compiled in, switched off). "
              "`pair` is one "
              "allocation plus its free, timed as one sample (the talk's loop). Module-tag ops "
              "allocate in the benchmark module, kernel-tag ops through `CONFIG_TEST_ALLOC_SITES` "
              "call sites in the kernel image.", ""] + fp
        L += ["Targets of the fast-path work, computed from the rows above:", ""] + fastpath_targets(rows, run)
    wt = window_insns_table(rows, run)
    if wt:
        L += ["Instructions inside the cache-model window around the allocator call (plugin, p50; the "
              "pair is alloc + free means): the clock-timed rows above also count the clock reads and "
              "the benchmark's dispatch code, which is compiled against each kernel and so differs by a "
              "few instructions.", ""] + wt
    st = static_insns_table(run)
    if st:
        L += ["Static instruction counts of the hot functions in each vmlinux (`bench/fastpath-insns`, "
              f"recorded at the start of the run), in parentheses the difference to `{run.main_reference}`: what the "
              "hooks add, cold paths included."
              + (f" `{run.table.get(dist[0]).variant}` is built with Debian's page->flags layout (NUMA, "
                 f"NUMA balancing, 8192 CPUs), not with `{run.main_reference}`'s config, so its differences "
                 "include that config too." if dist else ""), ""] + st
    ct = cache_table(rows, run)
    if ct:
        L += ["## Cache model: LLC misses and estimated cycles per operation (micro, mean)", "",
              cache_params_text(run), "",
              "Each cell: LLC misses / estimated cycles per operation, in parentheses the estimated "
              "cycles against the kernel's own `off`. The hot loop allocates and frees one object "
              "again and again (everything cached); the batch pattern allocates 64Ki objects, then "
              "frees them in allocation order, so their `struct page` and page_ext lines have left "
              "the modelled LLC. `pair` = alloc mean + free mean.", ""] + ct
        L += cache_targets(rows, run)
    ft = function_table(rows, run)
    if ft:
        L += ["## Where the instructions go: per kernel function (micro, hot loop)", "",
              "Instructions per op in each kernel function, from the PCs the cache model "
              "counted inside the op's windows (`insn-profile.csv` of each micro boot, "
              "`bench/insn_profile.py`), and in parentheses the difference to the kernel's "
              "own `off`. Code inlined into a function counts as that function's: the slab "
              "tag hooks are inside `__kmalloc_noprof()`, `kfree()`, `kmem_cache_alloc_noprof()` "
              "and `kmem_cache_free()`; the call site's `current->alloc_tag` save and restore is "
              "in the caller (`test_alloc_site_*`, `[module]` for module code). Functions with "
              f"under {insn_profile.MIN_INSNS} instructions per op are not recorded; only "
              "functions where some kernel differs by 0.5 or more are shown.", ""] + ft
    pt = peer_table(rows, run)
    if pt:
        L += ["## Upstream side by side: Linux 7.3 (6.13+ compressed page tags)", "",
              f"Each kernel against its own tree's `off` ({own_offs(run)}); absolute "
              "counts of the two trees are never compared. Besides tag storage the trees differ in "
              "6.14's `alloc_hooks()` that touches `current->alloc_tag` only when profiling is on "
              "(our baseline patch 0003 does the same for 6.12), slab `obj_ext` changes, allocator "
              "changes between 6.12 and 7.3, and the compiler inlining that follows; a version "
              "difference is not a design difference. Upstream cannot fall back: where its tags do "
              "not fit it disables profiling.", ""] + pt
    at = attribution_table(rows, run)
    if at:
        L += ["## Upstream's compressed mode, step by step (micro)", "",
              "The same tree and config: upstream's compressed mode, then the first patches of "
              "this project's 7.3 series (`bench/kernels`, role `series-step`: the fixes, the "
              "index constants and the index table behind 7.3's out-of-line hooks), then the "
              "whole series (inline hooks behind one static key, plain stores, fallbacks). Each "
              "column against the tree's `off`; the last columns are what each step took away.",
              ""] + at
    if (run.path / "peer-missing.txt").exists():
        L += ["> **Upstream peer missing:** " + (run.path / "peer-missing.txt").read_text().strip(), ""]
    L += ["## Figures", ""]
    if not figures:
        L += ["No figures: the run has no data to plot.", ""]
    for f in figures:
        if f.kind == "slide":
            continue
        L += [f"### {f.title}", "", f"![{f.title}]({f.name}.png)", "",
              figure_sentence(f, rows, run) + f" ([SVG]({f.name}.svg))", ""]
    for w in ("micro", "micro-smp"):
        if op_order(run, w):
            L += [f"## Microbenchmark p50 latency overhead vs off ({w})", ""] + micro_table(rows, run, w)
    stressors = sorted({r.metric.split(".")[0] for r in rows.rows
                        if r.workload == "stress" and r.metric.endswith(".wall_time")})
    if stressors:
        ms = []
        for s in stressors:
            ms += [(f"{s}.wall_time.overhead", f"{s}: run time overhead"),
                   (f"{s}.bogo_ops_per_s.rel", f"{s}: bogo-ops/s vs off")]
            if rows.get(run.main_reference, "stress", f"{s}.insns_per_bogo_op"):
                ms.append((f"{s}.insns_per_bogo_op.overhead", f"{s}: instructions per bogo-op overhead"))
        L += ["## stress-ng (fixed op counts)", ""] + macro_table(rows, run, "stress", ms)
    if any(r.workload == "fio" for r in rows.rows):
        fm = [("runtime.overhead", "run time overhead"), ("perf.task-clock.overhead", "task-clock overhead"),
              ("write_bw.rel", "write bandwidth vs off")]
        if rows.get(run.main_reference, "fio", "read_bw"):
            fm.insert(2, ("read_bw.rel", "read bandwidth vs off"))
        L += ["## fio (page cache on tmpfs)", "",
              "fio writes a fresh file each loop and unlinks it at the loop's end, so the timed phase "
              "allocates and frees page cache; `pgalloc` in summary.csv counts the pages.", ""]
        L += macro_table(rows, run, "fio", fm)
    if mem_workloads_from(rows):
        L += ["## Memory", "",
              "page_ext is allocated after the kernel has fixed MemTotal, so its cost shows in "
              "MemFree (and in the page_ext bytes the kernel reports), not in MemTotal. MemTotal "
              "falls on every profiling kernel by the growth of the kernel image itself (code, "
              "tag sections, bss), the same with or without page_ext.", ""] + memory_table(rows, run)
    acct = accounted_table(rows, run)
    if acct:
        L += ["## Accounted and unaccounted", "",
              "/proc/allocinfo_accounted (patches/packed-select, kernels with MEMCG) during and after "
              "a stress-ng run (fork, open, vm) in a child memory cgroup, `memcg` workload: the bytes "
              "and calls of every call site summed, charged to a memory cgroup or not. Unaccounted "
              "kernel memory is what no memcg limit covers; the kernel's own boot-time allocations "
              "are all unaccounted.", ""] + acct
    vec = objext_table(rows, run)
    if vec:
        L += ["## Slab object extension vectors", "",
              "The vectors of tag references (and memcg's objcg pointers) that slab keeps per object "
              "slot, `objext` workload: their bytes and number from /proc/allocinfo's "
              "alloc_slab_obj_exts() line (the vectors are themselves tagged), and bytes per object "
              "slot of the caches whose vectors carry a tag (/proc/slabinfo), after boot and after a "
              "slab-heavy stress-ng run (fork, open, dentry). 8 bytes per slot is a codetag_ref, 16 "
              "with memcg's objcg next to it; patches/packed-slab keeps a 2-byte index instead (2 + 8 "
              "with memcg). Each vector is one kmalloc() allocation: the bytes include the rounding "
              "up to its kmalloc size class. Kernels "
              "booted with profiling off count no vectors and have no row.", ""] + vec
    text = "\n".join(L).rstrip("\n") + "\n"
    return text.replace(INTERVALS_LEGEND, intervals_legend(text), 1)


def _point_rows(rows: Summary, run: Run, w: str, points: tuple[tuple[str, str], ...],
                metrics: tuple[str, ...]):
    """(kernel, point label, values) for each kernel with figures in workload
    w and each of its points; a missing value is an error, not a blank cell."""
    for k in run.kernels:
        if not rows.has_kernel(k, w):
            continue
        for point, what in points:
            vals = [rows.value(k, w, f"{point}.{m}") for m in metrics]
            if any(v is None for v in vals):
                raise ValueError(f"{k} / {w} / {point}: missing {', '.join(metrics)}")
            yield k, what, vals


def objext_table(rows: Summary, run: Run, w: str = "objext") -> list[str]:
    """Slab vector bytes, vectors and bytes per slot per kernel and point."""
    body = [[k, what, num(vals[0], 0), num(vals[1], 0), num(vals[2], 2)]
            for k, what, vals in _point_rows(rows, run, w, (("boot", "after boot"), ("after", "after stress-ng")),
                                             ("objext_bytes", "objext_vectors", "objext_bytes_per_slot"))]
    if not body:
        return []
    return table(["Kernel", "When", "Vector bytes", "Vectors", "Bytes per object slot"], body)


def accounted_table(rows: Summary, run: Run, w: str = "memcg") -> list[str]:
    """The accounted/unaccounted split per kernel and point of the memcg workload."""
    body = []
    for k, what, vals in _point_rows(rows, run, w, (("run", "while stress-ng runs"), ("end", "after it")),
                                     ("accounted_bytes", "accounted_calls", "unaccounted_bytes",
                                      "unaccounted_calls")):
        if vals[0] + vals[2] <= 0:
            raise ValueError(f"{k} / {w} / {what}: no profiled bytes at all")
        share = vals[0] / (vals[0] + vals[2]) * 100
        body.append([k, what] + [num(v, 0) for v in vals] + [num(share, 2) + "%"])
    if not body:
        return []
    return table(["Kernel", "When", "Accounted bytes", "Accounted calls", "Unaccounted bytes",
                  "Unaccounted calls", "Accounted share of bytes"], body)


def write(run: Run, summary: Summary, figures: list[Figure], out: Path) -> Path:
    p = out / "report.md"
    p.write_text(render(run, summary, figures))
    return p
