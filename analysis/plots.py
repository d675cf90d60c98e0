"""Regenerate everything of one run from its raw files: summary.csv,
summary.json, PNG+SVG plots and report.md, in results/<run-id>/analysis/.

    /usr/bin/python3 -m analysis.plots results/<run-id> [--allow-tcg]
    /usr/bin/python3 -m analysis.plots results          # the newest run
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib
import matplotlib.layout_engine

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
import numpy as np  # noqa: E402

from analysis import report, summarize  # noqa: E402
from analysis.load import Run, cli, load_run, resolve_run_dir  # noqa: E402
from analysis.report import Figure, op_order  # noqa: E402
from analysis.summarize import Row, Summary  # noqa: E402

# One colour per role of the project's own kernels (bench/kernels roles, as
# the run's table gives them), used by every plot; the other kernels take
# _FALLBACK colours in run order.
ROLE_COLOURS = {"noprof": "#7f7f7f", "pageext": "#d62728", "nopf": "#ff9f80", "flags": "#1f77b4",
                "ext16": "#2ca02c"}
# Enough for every label of a full run (about 25): a colour used twice made
# two kernels look like one.  The first six as before, then tab20 and tab20b.
_FALLBACK = list(dict.fromkeys(
    ["#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#ff7f0e"]
    + [c for c in (to_hex(x) for n in ("tab20", "tab20b") for x in matplotlib.colormaps[n].colors)
       if c not in ROLE_COLOURS.values()]))

STYLE = {
    "font.size": 16, "axes.titlesize": 18, "axes.labelsize": 16, "xtick.labelsize": 14,
    "ytick.labelsize": 14, "legend.fontsize": 14, "figure.titlesize": 20,
    "font.family": "DejaVu Sans", "svg.hashsalt": "alloctag-analysis", "svg.fonttype": "none",
    "axes.grid": True, "grid.alpha": 0.3, "axes.axisbelow": True, "path.simplify": False,
}
DPI = 100


def kernel_colours(run: Run) -> dict[str, str]:
    t = run.table
    return {k: c for role, c in ROLE_COLOURS.items() if (k := t.role(role, t.main_group)) is not None}


def colour(kernel: str, run: Run) -> str:
    fixed = kernel_colours(run)
    if kernel in fixed:
        return fixed[kernel]
    others = [k for k in run.kernels if k not in fixed]
    return _FALLBACK[others.index(kernel) % len(_FALLBACK)] if kernel in others else "#000000"


def _freeze_layout(fig) -> None:
    """Run the constrained layout once and keep its result, rounded: it can
    differ in the 13th digit from one generation to the next, and the SVG's
    clip-path ids hash the unrounded boxes (regeneration must be
    byte-identical)."""
    if not isinstance(fig.get_layout_engine(), matplotlib.layout_engine.ConstrainedLayoutEngine):
        return
    fig.canvas.draw()
    fig.set_layout_engine("none")
    for ax in fig.axes:
        ax.set_position([round(v, 6) for v in ax.get_position().bounds])


def _save(fig, out: Path, name: str) -> None:
    _freeze_layout(fig)
    fig.savefig(out / f"{name}.png", dpi=DPI, metadata={"Software": None})
    fig.savefig(out / f"{name}.svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)


def _err(rows: list[Row | None]) -> tuple[np.ndarray, bool]:
    """Asymmetric error bars from each row's CI, else its spread."""
    lo, hi, any_ci = [], [], False
    for r in rows:
        if r is None or r.value is None:
            lo.append(0.0)
            hi.append(0.0)
            continue
        if r.ci_low is not None and r.ci_high is not None:
            a, b, any_ci = r.ci_low, r.ci_high, True
        elif r.spread_low is not None and r.spread_high is not None:
            a, b = r.spread_low, r.spread_high
        else:
            a = b = r.value
        lo.append(max(r.value - a, 0.0))
        hi.append(max(b - r.value, 0.0))
    return np.array([lo, hi]), any_ci


def _interval_label(run: Run) -> str:
    return "error bars: min..max over boots" if run.deterministic else "error bars: 95% bootstrap CI"


def _bars(ax, cats: list[str], kernels: list[str], get, run: Run, horizontal: bool) -> None:
    # A kernel limited to other workloads gets no empty slot or legend entry.
    kernels = [k for k in kernels if any(get(k, c) is not None for c in cats)]
    n = max(len(kernels), 1)
    width = 0.8 / n
    pos = np.arange(len(cats))
    for i, k in enumerate(kernels):
        rows = [get(k, c) for c in cats]
        vals = [r.value if r is not None else np.nan for r in rows]
        err, _ = _err(rows)
        off = pos + (i - (n - 1) / 2) * width
        kw = dict(color=colour(k, run), label=k, ecolor="black", capsize=3)
        if horizontal:
            ax.barh(off, vals, height=width, xerr=err, **kw)
        else:
            ax.bar(off, vals, width=width, yerr=err, **kw)
    if horizontal:
        ax.set_yticks(pos, cats)
        ax.invert_yaxis()
    elif len(cats) > 3:
        ax.set_xticks(pos, cats, rotation=30, ha="right")
    else:
        ax.set_xticks(pos, cats)


def _legend(ax) -> None:
    """Legend right of the plot, where it hides no bar."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def plot_memory(run: Run, summary: Summary, out: Path) -> Figure | None:
    idx = summary
    ws = report.mem_workloads_from(summary)
    if not ws:
        return None
    cats = [f"{w[5:]} MiB" for w in ws]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(16, 7), layout="constrained")
    _bars(a1, cats, run.kernels, lambda k, c: idx.valid(k, ws[cats.index(c)], "page_ext_pct_ram"), run, False)
    a1.set_ylabel("page_ext memory for tags (% of RAM)")
    a1.set_title("Page tag reference storage (labels: bytes per page frame)")
    for i, k in enumerate(run.kernels):  # annotate bytes per page
        for j, w in enumerate(ws):
            r = idx.valid(k, w, report.BYTES_PER_FRAME)
            pr = idx.valid(k, w, "page_ext_pct_ram")
            if r is not None and pr is not None:
                n = len(run.kernels)
                x = j + (i - (n - 1) / 2) * (0.8 / n)
                a1.annotate(f"{r.value:g} B", (x, pr.value), ha="center", va="bottom", fontsize=12)
    ks = [k for k in run.kernels if k != run.ref(k)]
    # MemFree, not MemTotal: page_ext is allocated after MemTotal is fixed,
    # so only MemFree shows it (MemTotal moves with the kernel image).
    _bars(a2, cats, ks, lambda k, c: _scaled(idx.valid(k, ws[cats.index(c)], "memfree_kb.delta"), 1 / 1024),
          run, False)
    a2.axhline(0, color="black", lw=1)
    a2.set_ylabel("MemFree after boot vs own off (MiB)")
    a2.set_title("Memory taken after boot (page_ext and tag data)")
    _legend(a2 if ks else a1)
    if ks:  # one legend for both panels: a2 lacks off, so list every kernel
        a2.get_legend().remove()
        h, lab = a1.get_legend_handles_labels()
        a2.legend(h, lab, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.suptitle(f"Memory overhead per kernel (run {run.run_id})")
    _save(fig, out, "memory-overhead")
    return Figure("memory", "mem", "memory-overhead", "Memory overhead per kernel")


def _scaled(r: Row | None, f: float) -> Row | None:
    if r is None:
        return None
    s = lambda v: None if v is None else v * f  # noqa: E731
    return Row(r.kernel, r.workload, r.metric, r.unit, s(r.value), s(r.ci_low), s(r.ci_high),
               s(r.spread_low), s(r.spread_high), r.n_boots, r.note)


def plot_latency_overhead(run: Run, summary: Summary, out: Path, w: str) -> Figure | None:
    idx = summary
    ops = op_order(run, w)
    ks = [k for k in run.kernels if k != run.ref(k) and idx.has_kernel(k, w)]
    panels = [(kind, [o for o in ops if o.endswith(f"_{kind}")]) for kind in ("alloc", "free")]
    panels = [(kind, os) for kind, os in panels if os and any(idx.valid(k, w, f"{o}.p50.overhead")
                                                              for o in os for k in ks)]
    if not panels or not ks:
        return None
    nmax = max(len(os) for _, os in panels)
    fig, axes = plt.subplots(1, len(panels), figsize=(9 * len(panels), 2 + nmax * (0.25 + 0.18 * len(ks))),
                             layout="constrained", squeeze=False)
    for ax, (kind, os) in zip(axes[0], panels):
        _bars(ax, os, ks, lambda k, o: idx.valid(k, w, f"{o}.p50.overhead"), run, True)
        ax.axvline(0, color="black", lw=1)
        ax.set_xlabel("p50 latency overhead vs off (%)")
        ax.set_title(f"{kind} ({_interval_label(run)})", fontsize=15)
    _legend(axes[0][-1])
    unit = summarize.latency_unit(run)
    fig.suptitle(f"Allocator latency overhead, {w} (latency measured in {unit})")
    name = f"latency-overhead-{w}"
    _save(fig, out, name)
    return Figure("latency-overhead", w, name, f"Latency overhead per operation ({w})")


def plot_latency_distribution(run: Run, summary: Summary, out: Path, w: str) -> Figure | None:
    idx = summary
    ops = [o for o in op_order(run, w) if not o.startswith("parallel.")]
    ops = [o for o in ops if any(idx.valid(k, w, f"{o}.p50") for k in run.kernels)]
    if not ops:
        return None
    ncol = min(5, len(ops))
    nrow = (len(ops) + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 1.5 + 4.2 * nrow), layout="constrained",
                             squeeze=False)
    for ax, o in zip(axes.flat, ops):
        stats_, cols = [], []
        for k in run.kernels:
            g = {f: idx.valid(k, w, f"{o}.{f}") for f in ("min", "p50", "p90", "p99", "mean")}
            if g["p50"] is None or any(v is None for v in g.values()):
                continue
            v = {f: r.value for f, r in g.items()}
            stats_.append({"label": k, "med": v["p50"], "q1": v["p50"], "q3": v["p90"], "whislo": v["min"],
                           "whishi": v["p99"], "mean": v["mean"], "fliers": []})
            cols.append(colour(k, run))
        bp = ax.bxp(stats_, showmeans=True, patch_artist=True, showfliers=False,
                    medianprops={"color": "black", "lw": 2},
                    meanprops={"marker": "D", "markerfacecolor": "white", "markeredgecolor": "black"})
        for patch, c in zip(bp["boxes"], cols):
            patch.set_facecolor(c)
        ax.set_title(o, fontsize=14)
        ax.set_xticks(range(1, len(stats_) + 1), [s["label"] for s in stats_], rotation=45, ha="right",
                      fontsize=12)
    for ax in list(axes.flat)[len(ops):]:
        ax.set_visible(False)
    unit = summarize.latency_unit(run)
    for row in axes:
        row[0].set_ylabel(f"latency ({unit})")
    fig.suptitle(f"Latency distribution, {w}: box p50..p90, whiskers min..p99, diamond mean "
                 f"(medians over boots)")
    name = f"latency-distribution-{w}"
    _save(fig, out, name)
    return Figure("latency-distribution", w, name, f"Latency distribution per operation ({w})")


def plot_throughput(run: Run, summary: Summary, out: Path) -> Figure | None:
    idx = summary
    cats: list[tuple[str, str, str]] = []  # label, workload, metric
    for s in sorted({r.metric.split(".")[0] for r in summary.rows
                     if r.workload == "stress" and r.metric.endswith(".bogo_ops_per_s.rel")}):
        cats.append((f"stress-ng {s}", "stress", f"{s}.bogo_ops_per_s.rel"))
    for m, label in (("read_bw.rel", "fio read bw"), ("write_bw.rel", "fio write bw")):
        if any(r.workload == "fio" and r.metric == m for r in summary.rows):
            cats.append((label, "fio", m))
    ks = [k for k in run.kernels if k != run.ref(k)]
    if not cats or not ks:
        return None
    labels = [c[0] for c in cats]
    fig, ax = plt.subplots(figsize=(max(10, 1.2 * len(cats) * max(len(ks), 2) / 2 + 4), 7),
                           layout="constrained")
    by = {c[0]: c for c in cats}
    _bars(ax, labels, ks, lambda k, lab: idx.valid(k, by[lab][1], by[lab][2]), run, False)
    ax.axhline(1.0, color="black", lw=1)
    vals = [r.value for c in cats for k in ks if (r := idx.valid(k, c[1], c[2])) is not None]
    if vals:
        lo, hi = min(vals + [1.0]), max(vals + [1.0])
        pad = max((hi - lo) * 0.3, 0.02)
        ax.set_ylim(lo - pad, hi + pad)
    ax.set_ylabel("throughput relative to off (higher is better)")
    unit = "per virtual second (instructions)" if run.timing == "icount" else "per second"
    ax.set_title(f"stress-ng bogo-ops and fio bandwidth {unit}; {_interval_label(run)}", fontsize=15)
    _legend(ax)
    _save(fig, out, "throughput-relative")
    return Figure("throughput", "stress", "throughput-relative", "stress-ng and fio relative throughput")


FIGURE_GLOBS = ("slide.*", "memory-overhead.*", "latency-overhead-*.*", "latency-distribution-*.*",
                "throughput-relative.*")


# The slide's kernels: these roles (bench/kernels) in our group, the peer's,
# then the others; its memory half also shows our reference.
SLIDE_ROLES = ("pageext", "ext16", "flags")
SLIDE_GROUPS = ("main", "peer", "other")
SLIDE_STYLE = {"font.size": 22, "axes.titlesize": 26, "axes.labelsize": 22, "xtick.labelsize": 20,
               "ytick.labelsize": 20, "legend.fontsize": 18, "figure.titlesize": 28}
TALK_PAGE_EXT_BYTES = 8      # the talk: 8 B per 4 KiB page, ~0.2% of RAM
# The talk's allocation-time figures (report.TALK_ALLOC) sit on the slide's
# alloc-only panel, each over the bar of the kernel and op it is the like
# of; the alloc+free pair panel has none (a pair is not what the talk timed).
TALK_OPS = (("pages_o0_alloc", "order-0 page", ""), ("kmalloc_64_alloc", "kmalloc-64", "//"))


def _slide_mem_workload(idx: Summary, ws: list[str], ref: str) -> str | None:
    return next((w for w in sorted(ws, key=lambda w: -int(w[5:])) if idx.valid(ref, w, report.BYTES_PER_FRAME)),
                None)


def plot_slide(run: Run, summary: Summary, out: Path) -> Figure | None:
    """The one figure for a slide: memory per page and the order-0 pair
    overhead, with the talk's figures as reference marks."""
    idx = summary
    ws = report.mem_workloads_from(summary)
    mw = _slide_mem_workload(idx, ws, run.main_reference) if ws else None
    site = "ksite_" if any(idx.valid(k, "micro", "ksite_pages_o0_pair.p50.overhead") for k in run.kernels) else ""
    pair = f"{site}pages_o0_pair.p50"
    cpu = [k for k in run.pick(SLIDE_ROLES, SLIDE_GROUPS) if idx.valid(k, "micro", pair + ".overhead")]
    if not cpu:
        return None
    with plt.rc_context(SLIDE_STYLE):
        fig, (a1, a3, a2) = plt.subplots(1, 3, figsize=(16, 9), layout="constrained",
                                         gridspec_kw={"width_ratios": [2, 3, 3]})
        mem = [k for k in [run.main_reference] + run.pick(SLIDE_ROLES, SLIDE_GROUPS)
               if mw and idx.valid(k, mw, report.BYTES_PER_FRAME)] if mw else []
        if mem:
            vals = [idx.valid(k, mw, report.BYTES_PER_FRAME).value for k in mem]
            bars = a1.bar(range(len(mem)), vals, color=[colour(k, run) for k in mem])
            for b, v in zip(bars, vals):
                # "0", not "0.00 B": seven bars' labels must not run together
                a1.annotate(f"{v:.2f}".rstrip("0").rstrip("."), (b.get_x() + b.get_width() / 2, v),
                            ha="center", va="bottom")
            a1.axhline(TALK_PAGE_EXT_BYTES, color="black", ls="--", lw=2)
            a1.text(0.98, TALK_PAGE_EXT_BYTES * 1.18, "talk: 8 B/page\n(0.2% of RAM)",
                    transform=a1.get_yaxis_transform(), ha="right", va="bottom", fontsize=17)
            a1.set_xticks(range(len(mem)), mem, rotation=35, ha="right")
            a1.set_ylim(0, max(max(vals), TALK_PAGE_EXT_BYTES) * 1.6)
            # a kernel with page_ext bytes but no frame count in its log has no bar: say so
            unknown = report.no_frame_count(summary, run.pick(SLIDE_ROLES, SLIDE_GROUPS), mw)
            if unknown:
                a1.text(0.02, 0.98, "\n".join(f"{k}: no page frame\ncount in its log" for k in unknown),
                        transform=a1.transAxes, ha="left", va="top", fontsize=15)
        a1.set_ylabel(f"tag memory, bytes per {report.FRAME}", fontsize=18)
        a1.set_title(f"Memory ({mw[5:]} MiB guest)" if mw else "Memory (not measured)", fontsize=20)
        x = np.arange(len(cpu))
        pct = [idx.valid(k, "micro", pair + ".overhead").value for k in cpu]
        delta = [idx.valid(k, "micro", pair + ".delta") for k in cpu]
        cyc_m = f"cache.{site}pages_o0_batch_pair.est_cycles.mean"
        cyc = [idx.valid(k, "micro", cyc_m) for k in cpu]
        cyc_ref = [idx.valid(run.ref(k), "micro", cyc_m) for k in cpu]
        have_cyc = all(c is not None and r is not None and r.value > 0 for c, r in zip(cyc, cyc_ref))
        w = 0.4 if have_cyc else 0.7
        b1 = a2.bar(x - (w / 2 if have_cyc else 0), pct, width=w, color=[colour(k, run) for k in cpu],
                    label="instructions (hot loop, p50)")
        for b, d in zip(b1, delta):
            if d is not None:
                a2.annotate(f"{d.value:+.0f}", (b.get_x() + b.get_width() / 2, b.get_height()), ha="center",
                            va="bottom", fontsize=16)
        if have_cyc:
            cp = [(c.value / r.value - 1) * 100 for c, r in zip(cyc, cyc_ref)]
            b2 = a2.bar(x + w / 2, cp, width=w, color=[colour(k, run) for k in cpu], hatch="//",
                        alpha=0.55, label="est. cycles (cache model, batch, mean)")
            for b, c, r in zip(b2, cyc, cyc_ref):
                a2.annotate(f"{c.value - r.value:+.0f}", (b.get_x() + b.get_width() / 2, b.get_height()),
                            ha="center", va="bottom", fontsize=16)
        a2.set_ylim(min(0, min(pct)) * 1.2, max(pct) * 1.45)
        a2.axhline(0, color="black", lw=1)
        a2.set_xticks(x, _slide_labels(run, cpu), rotation=35, ha="right")
        a2.set_ylabel("overhead vs own reference (%)")
        a2.set_title(f"alloc+free pair, order-0,\n{'kernel' if site else 'module'}-tag site (no talk figure)",
                     fontsize=20)
        a2.set_xlabel("bar labels: added instructions" + (" / est. cycles" if have_cyc else ""), fontsize=15)
        a2.legend(loc="upper right", fontsize=14)
        _slide_alloc_only(a3, run, idx, cpu)
        fig.suptitle("Allocation profiling: tag index in page->flags vs page_ext")
        _save(fig, out, "slide")
    return Figure("slide", "micro", "slide", "The slide: memory per page and page allocation overhead")


def _slide_labels(run: Run, kernels: list[str]) -> list[str]:
    """A kernel measured against another reference than the run's off says so
    (packed-distro against its own nopf boot, 7.3 labels against 7.3's off)."""
    return [k if run.ref(k) == run.main_reference else f"{k}\n(vs {run.ref(k)})" for k in kernels]


def _slide_alloc_only(ax, run: Run, idx: Summary, kernels: list[str]) -> None:
    """Allocation alone (p50 overhead, module tag) of the order-0 page and of
    kmalloc-64 where the run has it, with each talk figure as a mark over the
    bar of the kernel and op it is the like of."""
    ops = [(op, what, hatch) for op, what, hatch in TALK_OPS
           if any(idx.valid(k, "micro", f"{op}.p50.overhead") for k in kernels)]
    x = np.arange(len(kernels))
    w = 0.8 / max(len(ops), 1)
    tops = [0.0]
    for i, (op, what, hatch) in enumerate(ops):
        rows = [idx.valid(k, "micro", f"{op}.p50.overhead") for k in kernels]
        vals = [r.value if r is not None else np.nan for r in rows]
        xs = x + (i - (len(ops) - 1) / 2) * w
        ax.bar(xs, vals, width=w, color=[colour(k, run) for k in kernels], hatch=hatch,
               edgecolor="black" if hatch else None, label=f"{what} alloc")
        tops += [v for v in vals if not np.isnan(v)]
        for t in report.TALK_ALLOC:
            k = report.main(run, t.role)
            if t.op == op and k in kernels:
                j = kernels.index(k)
                ax.plot([xs[j] - w / 2, xs[j] + w / 2], [t.value, t.value], color="black", ls="--", lw=3)
                # centred over the mark, two short lines: the marks of one
                # kernel's two bars must not run together
                ax.annotate(t.mark.replace(" +", "\n+"), (xs[j], t.value), xytext=(0, 3),
                            textcoords="offset points", ha="center", va="bottom", fontsize=12,
                            bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8})
                tops.append(t.value)
    ax.set_ylim(min(0.0, min(tops)) * 1.2, max(tops) * 1.35)
    ax.axhline(0, color="black", lw=1)
    ax.set_xticks(x, _slide_labels(run, kernels), rotation=35, ha="right")
    ax.set_ylabel("p50 overhead vs own reference (%)")
    ax.set_title("allocation only, module-tag site\n(dashes: the talk's figures)", fontsize=20)
    if ops:
        ax.legend(loc="upper right", fontsize=14)


def generate(run: Run, out: Path | None = None) -> Path:
    """Write summary files, figures and report.md; returns the output directory."""
    summary = summarize.summarize(run)
    out = summarize.write(run, summary, out)
    for pat in FIGURE_GLOBS:  # figures of an earlier generation that may not come back
        for p in out.glob(pat):
            if p.suffix in (".png", ".svg"):
                p.unlink()
    figures: list[Figure] = []
    with plt.rc_context(STYLE):
        for f in (plot_slide(run, summary, out),
                  plot_memory(run, summary, out),
                  *(plot_latency_overhead(run, summary, out, w) for w in ("micro", "micro-smp")),
                  plot_latency_distribution(run, summary, out, "micro"),
                  plot_throughput(run, summary, out)):
            if f is not None:
                figures.append(f)
    report.write(run, summary, figures, out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m analysis.plots", description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="results/<run-id>, or a results directory for its newest run")
    ap.add_argument("--allow-tcg", action="store_true",
                    help="accept a plain-TCG run and label its timings relative only")
    args = ap.parse_args(argv)

    def body() -> int:
        out = generate(load_run(resolve_run_dir(args.run), allow_tcg=args.allow_tcg))
        print(f"{out}/report.md")
        return 0
    return cli(body)


if __name__ == "__main__":
    sys.exit(main())
