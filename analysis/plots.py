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

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from analysis import report, summarize  # noqa: E402
from analysis.load import REFERENCE, AnalysisError, Run, load_run, resolve_run_dir  # noqa: E402
from analysis.report import Figure, op_order  # noqa: E402
from analysis.summarize import Row, Summary  # noqa: E402

# One colour per kernel label, used by every plot.
KERNEL_COLOURS = {
    "off": "#7f7f7f",
    "baseline": "#d62728",
    "baseline-nopf": "#ff9f80",
    "packed": "#1f77b4",
    "packed-ext16": "#2ca02c",
}
_FALLBACK = ["#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#ff7f0e"]

STYLE = {
    "font.size": 16, "axes.titlesize": 18, "axes.labelsize": 16, "xtick.labelsize": 14,
    "ytick.labelsize": 14, "legend.fontsize": 14, "figure.titlesize": 20,
    "font.family": "DejaVu Sans", "svg.hashsalt": "alloctag-analysis", "svg.fonttype": "none",
    "axes.grid": True, "grid.alpha": 0.3, "axes.axisbelow": True, "path.simplify": False,
}
DPI = 100


def colour(kernel: str, kernels: list[str]) -> str:
    if kernel in KERNEL_COLOURS:
        return KERNEL_COLOURS[kernel]
    others = [k for k in kernels if k not in KERNEL_COLOURS]
    return _FALLBACK[others.index(kernel) % len(_FALLBACK)] if kernel in others else "#000000"


def _save(fig, out: Path, name: str) -> None:
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


def _interval_label(run: Run, workload: str) -> str:
    return "error bars: min..max over boots" if run.deterministic(workload) else "error bars: 95% bootstrap CI"


class _Index:
    def __init__(self, summary: Summary):
        self.by = {(r.kernel, r.workload, r.metric): r for r in summary.rows}

    def get(self, k: str, w: str, m: str) -> Row | None:
        r = self.by.get((k, w, m))
        return r if r is not None and r.value is not None else None


def _bars(ax, cats: list[str], kernels: list[str], get, run: Run, horizontal: bool) -> None:
    n = max(len(kernels), 1)
    width = 0.8 / n
    pos = np.arange(len(cats))
    for i, k in enumerate(kernels):
        rows = [get(k, c) for c in cats]
        vals = [r.value if r is not None else np.nan for r in rows]
        err, _ = _err(rows)
        off = pos + (i - (n - 1) / 2) * width
        kw = dict(color=colour(k, run.kernels), label=k, ecolor="black", capsize=3)
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
    idx = _Index(summary)
    ws = report.mem_workloads_from(report._Rows(summary))
    if not ws:
        return None
    cats = [f"{w[5:]} MiB" for w in ws]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(16, 7), layout="constrained")
    _bars(a1, cats, run.kernels, lambda k, c: idx.get(k, ws[cats.index(c)], "page_ext_pct_ram"), run, False)
    a1.set_ylabel("page_ext memory for tags (% of RAM)")
    a1.set_title("Page tag reference storage (labels: bytes/page)")
    for i, k in enumerate(run.kernels):  # annotate bytes per page
        for j, w in enumerate(ws):
            r = idx.get(k, w, "page_ext_bytes_per_entry")
            pr = idx.get(k, w, "page_ext_pct_ram")
            if r is not None and pr is not None:
                n = len(run.kernels)
                x = j + (i - (n - 1) / 2) * (0.8 / n)
                a1.annotate(f"{r.value:g} B", (x, pr.value), ha="center", va="bottom", fontsize=12)
    ks = [k for k in run.kernels if k != REFERENCE]
    # MemFree, not MemTotal: page_ext is allocated after MemTotal is fixed,
    # so only MemFree shows it (MemTotal moves with the kernel image).
    _bars(a2, cats, ks, lambda k, c: _scaled(idx.get(k, ws[cats.index(c)], "memfree_kb.delta"), 1 / 1024),
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
    idx = _Index(summary)
    ops = op_order(run, w)
    ks = [k for k in run.kernels if k != REFERENCE]
    panels = [(kind, [o for o in ops if o.endswith(f"_{kind}")]) for kind in ("alloc", "free")]
    panels = [(kind, os) for kind, os in panels if os and any(idx.get(k, w, f"{o}.p50.overhead")
                                                              for o in os for k in ks)]
    if not panels or not ks:
        return None
    nmax = max(len(os) for _, os in panels)
    fig, axes = plt.subplots(1, len(panels), figsize=(9 * len(panels), 2 + nmax * (0.25 + 0.18 * len(ks))),
                             layout="constrained", squeeze=False)
    for ax, (kind, os) in zip(axes[0], panels):
        _bars(ax, os, ks, lambda k, o: idx.get(k, w, f"{o}.p50.overhead"), run, True)
        ax.axvline(0, color="black", lw=1)
        ax.set_xlabel("p50 latency overhead vs off (%)")
        ax.set_title(f"{kind} ({_interval_label(run, w)})", fontsize=15)
    _legend(axes[0][-1])
    unit = summarize.latency_unit(run)
    fig.suptitle(f"Allocator latency overhead, {w} (latency measured in {unit})")
    name = f"latency-overhead-{w}"
    _save(fig, out, name)
    return Figure("latency-overhead", w, name, f"Latency overhead per operation ({w})")


def plot_latency_distribution(run: Run, summary: Summary, out: Path, w: str) -> Figure | None:
    idx = _Index(summary)
    ops = [o for o in op_order(run, w) if not o.startswith("parallel.")]
    ops = [o for o in ops if any(idx.get(k, w, f"{o}.p50") for k in run.kernels)]
    if not ops:
        return None
    ncol = min(5, len(ops))
    nrow = (len(ops) + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 1.5 + 4.2 * nrow), layout="constrained",
                             squeeze=False)
    for ax, o in zip(axes.flat, ops):
        stats_, cols = [], []
        for k in run.kernels:
            g = {f: idx.get(k, w, f"{o}.{f}") for f in ("min", "p50", "p90", "p99", "mean")}
            if g["p50"] is None or any(v is None for v in g.values()):
                continue
            v = {f: r.value for f, r in g.items()}
            stats_.append({"label": k, "med": v["p50"], "q1": v["p50"], "q3": v["p90"], "whislo": v["min"],
                           "whishi": v["p99"], "mean": v["mean"], "fliers": []})
            cols.append(colour(k, run.kernels))
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
    idx = _Index(summary)
    cats: list[tuple[str, str, str]] = []  # label, workload, metric
    for s in sorted({r.metric.split(".")[0] for r in summary.rows
                     if r.workload == "stress" and r.metric.endswith(".bogo_ops_per_s.rel")}):
        cats.append((f"stress-ng {s}", "stress", f"{s}.bogo_ops_per_s.rel"))
    for m, label in (("read_bw.rel", "fio read bw"), ("write_bw.rel", "fio write bw")):
        if any(r.workload == "fio" and r.metric == m for r in summary.rows):
            cats.append((label, "fio", m))
    ks = [k for k in run.kernels if k != REFERENCE]
    if not cats or not ks:
        return None
    labels = [c[0] for c in cats]
    fig, ax = plt.subplots(figsize=(max(10, 1.2 * len(cats) * max(len(ks), 2) / 2 + 4), 7),
                           layout="constrained")
    by = {c[0]: c for c in cats}
    _bars(ax, labels, ks, lambda k, lab: idx.get(k, by[lab][1], by[lab][2]), run, False)
    ax.axhline(1.0, color="black", lw=1)
    vals = [r.value for c in cats for k in ks if (r := idx.get(k, c[1], c[2])) is not None]
    if vals:
        lo, hi = min(vals + [1.0]), max(vals + [1.0])
        pad = max((hi - lo) * 0.3, 0.02)
        ax.set_ylim(lo - pad, hi + pad)
    ax.set_ylabel("throughput relative to off (higher is better)")
    det = "min..max over boots" if run.deterministic("stress") else "95% bootstrap CI"
    unit = "per virtual second (instructions)" if run.timing == "icount" else "per second"
    ax.set_title(f"stress-ng bogo-ops and fio bandwidth {unit}; error bars: {det}", fontsize=15)
    _legend(ax)
    _save(fig, out, "throughput-relative")
    return Figure("throughput", "stress", "throughput-relative", "stress-ng and fio relative throughput")


FIGURE_GLOBS = ("memory-overhead.*", "latency-overhead-*.*", "latency-distribution-*.*",
                "throughput-relative.*")


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
        for f in (plot_memory(run, summary, out),
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
    try:
        run = load_run(resolve_run_dir(args.run), allow_tcg=args.allow_tcg)
        out = generate(run)
    except AnalysisError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: {e.filename or ''}: {e.strerror}", file=sys.stderr)
        return 1
    print(f"{out}/report.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
