"""analysis.plots / analysis.report: everything regenerates byte-identically,
and the CLI fails cleanly on bad input."""

import subprocess
import sys
from pathlib import Path

import pytest

from analysis import plots
from analysis.tests import synth

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
OUTPUTS = ("report.md", "summary.csv", "summary.json")


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    run = synth.make_run(root)
    assert plots.main([str(root)]) == 0  # "results" form: the newest run
    out = run / "analysis"
    first = {n: (out / n).read_bytes() for n in OUTPUTS}
    first.update({p.name: p.read_bytes() for p in out.glob("*.svg")})
    first.update({p.name: p.read_bytes() for p in out.glob("*.png")})
    return run, out, first


def test_outputs_show_the_runs_kernels(generated):
    """Each figure is a real PNG of a readable size and an SVG whose text
    (svg.fonttype none) names what the run measured, not only a file."""
    import json
    import re
    import struct
    run, out, first = generated
    kernels = json.loads((run / "manifest.json").read_text())["kernels"]
    for name in ("slide", "memory-overhead", "latency-overhead-micro", "latency-overhead-micro-smp",
                 "latency-distribution-micro", "throughput-relative"):
        png = (out / f"{name}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR", name
        w, h = struct.unpack(">II", png[16:24])
        assert w >= 400 and h >= 200, (name, w, h)
        texts = {t.strip() for t in re.findall(r"<text[^>]*>([^<]*)</text>", (out / f"{name}.svg").read_text())}
        # Legends or axes name the kernels (the slide only some of them).
        assert len(texts & set(kernels)) >= 3 and {"baseline", "packed"} <= texts, (name, sorted(texts))


def test_regeneration_is_byte_identical(generated):
    run, out, first = generated
    assert plots.main([str(run)]) == 0
    for name, data in first.items():
        assert (out / name).read_bytes() == data, name


def test_report_content(generated):
    _, out, first = generated
    md = first["report.md"].decode()
    assert "understate page_ext lookup costs on real hardware" in md and "cache-model section" in md
    assert "| Page allocation, baseline | +40% | +40.0% (spread +39.7%..+40.2%) |" in md
    assert "| Slab allocation, packed refs | +9.5% | +9.5% (spread +8.4%..+10.5%) |" in md
    assert "-75.0% (1024 MiB)" in md and "0.195% of RAM, 8.00 bytes per 4 KiB page frame (1024 MiB)" in md
    assert "| Kernel | page_ext bytes | bytes / 4 KiB page frame |" in md
    assert "cfgbas" in md and "serpac" in md and "6.12.0-packed" in md
    assert "at 1024 MiB baseline spends the most" in md
    assert "The largest p50 latency overhead vs off is baseline" in md
    # page ops (+40% baseline) and slab ops (+7%) summarised apart, not mixed
    assert "median over the 3 page and folio operations: off" not in md
    assert "page and folio operations: baseline +40.0%" in md and "percpu operations: baseline +" in md
    # micro table: delta and p99 beside the p50 overhead
    assert "| pages_o0_alloc | 1,001 | +40.0% (spread" in md and "(+400); p99 +40.0%" in md
    assert "Lowest throughput relative to off: baseline" in md
    for f in ("memory-overhead", "latency-overhead-micro", "throughput-relative"):
        assert f"]({f}.png)" in md
    # the kernel table names each label's own command line, not the workloads'
    row = next(line for line in md.splitlines() if line.startswith("| baseline-nopf | "))
    assert "| sysctl.vm.mem_profiling=0 |" in row and "samples=" not in row
    assert b"<dc:date>" not in first["memory-overhead.svg"]
    assert b"tIME" not in first["memory-overhead.png"]


def test_report_fastpath_table_and_targets(generated):
    _, _, first = generated
    md = first["report.md"].decode()
    assert "## Page allocator fast path: instruction deltas (micro, p50)" in md
    # kernel-tag pair: off 1516, baseline 1414 + 707 -> 2122 (+606), nopf 1111 + 555 -> 1667 (+151),
    # packed 1622: +106 vs off, 1622 - 1667 = -45 vs nopf
    assert "| order-0 page | kernel tag | pair | 1,516 | +606 / +455 | +151 | +106 / -45 |" in md
    assert "| order-0 page | module tag | pair | 1,501 |" in md
    # computed targets: packed - nopf <= 30 met (-45); nopf - off <= 15 not met (+151)
    assert "| order-0 pair, kernel tag: packed - nopf <= 30 | -45 | yes |" in md
    assert "| order-0 pair, kernel tag: baseline-nopf - off <= 15 | 151 | **no** |" in md
    # bench/fastpath-insns as recorded in the run
    assert "| Variant | `post_alloc_hook` |" in md
    assert "| packed | 45 (+16) |" in md and "| off | 29 (0) |" in md
    # patches/packed-slab changes the slab hooks: the table must not call
    # kmalloc untouched (it said so before packed-slab existed).
    assert "| kmalloc-64 (slab: patches/packed-slab) | module tag | pair |" in md
    assert "untouched" not in md


def test_report_lists_failed_boots(tmp_path):
    spec = synth.Spec(state="interrupted", workloads=("mem",), failed={"packed--mem--m8192--r1": "timeout"})
    run = synth.make_run(tmp_path, spec)
    assert plots.main([str(run)]) == 0
    md = (run / "analysis" / "report.md").read_text()
    assert "| packed--mem--m8192--r1 | timeout |" in md and "interrupted" in md


def test_tcg_run_cli(tmp_path, capsys):
    run = synth.make_run(tmp_path, synth.Spec(timing="tcg", workloads=("mem",), reps=1))
    assert plots.main([str(run)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "manifest.json" in err and err.count("\n") == 1
    assert plots.main([str(run), "--allow-tcg"]) == 0
    assert "Relative only" in (run / "analysis" / "report.md").read_text()


def test_cli_error_is_one_line_without_traceback(tmp_path):
    run = synth.make_run(tmp_path, synth.Spec(workloads=("micro",), reps=1))
    p = run / "boots" / "off--micro--m1024--r1" / "result" / "alloc_bench.csv"
    p.write_text("op,cpu\nbroken\n# end\n")
    r = subprocess.run([sys.executable, "-m", "analysis.plots", str(run)], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr and str(p) in r.stderr


def test_memory_plot_shows_memfree_not_memtotal(tmp_path, monkeypatch):
    """The right panel plots MemFree deltas, where page_ext shows; MemTotal
    only moves with the kernel image."""
    from analysis import load, summarize
    run = load.load_run(synth.make_run(tmp_path, synth.Spec(workloads=("mem",))))
    s = summarize.summarize(run)
    panels = []
    real = plots._bars

    def spy(ax, cats, kernels, get, *a, **kw):
        panels.append({(k, c): (get(k, c).value if get(k, c) else None) for k in kernels for c in cats})
        return real(ax, cats, kernels, get, *a, **kw)

    monkeypatch.setattr(plots, "_bars", spy)
    assert plots.plot_memory(run, s, tmp_path) is not None
    right = panels[1]
    assert right["baseline", "8192 MiB"] == pytest.approx((-2200 - 16384) / 1024)
    assert right["packed", "8192 MiB"] == pytest.approx(-2300 / 1024)


def test_report_opens_with_slide_and_computed_summary(generated):
    _, out, first = generated
    md = first["report.md"].decode()
    head = md.split("## Run", 1)[0]
    assert "![The slide" in head and "## Summary" in head
    # kernel-tag pair: off 1515+... baseline 1.4x -> +606 instructions, +40.0%
    assert "baseline +606 (+40.0%)" in head and "packed +106 (+7.0%)" in head
    # page_ext bytes over the kernel's own page frame count: 2 B, not 2.06
    assert "Memory for page tags per 4 KiB page frame (8192 MiB guest): baseline 8.00 B, packed-ext16 2.00 B" in head
    import struct
    png = first["slide.png"]
    w, h = struct.unpack(">II", png[16:24])
    assert (w, h) == (1600, 900)  # 16:9


def test_report_peer_and_cache_sections(tmp_path):
    run = synth.make_run(tmp_path, synth.Spec(kernels=synth.KERNELS + synth.PEER_KERNELS,
                                              workloads=("micro", "mem"), jitter=False, cache=True))
    assert plots.main([str(run)]) == 0
    md = (run / "analysis" / "report.md").read_text()
    peer = md.split("## Upstream side by side", 1)[1].split("\n## ", 1)[0]
    assert "up-pageext (page_ext references (8 B/page))" in peer and "up-compressed (index in page->flags)" in peer
    line = next(ln for ln in peer.splitlines() if ln.startswith("| order-0 page, module tag, pair"))
    assert "+540" in line, line
    cache = md.split("## Cache model", 1)[1].split("\n## ", 1)[0]
    assert "L1D 48K/12" in cache and "+ 200 per LLC miss" in cache
    assert "| batch order-0 pair, module tag: baseline LLC misses - off >= 1 | +1.00 | yes |" in cache
    assert "| batch order-0 pair, module tag: packed LLC misses within 0.1 of off | 0.00 | yes |" in cache
    # a function only one tree has is named as absent there, not "missing";
    # a set of functions (bench/fastpath-insns) says which each kernel has
    assert "| Variant | `post_alloc_hook` | `__free_frozen_pages` | free path |" in md
    assert "| packed | 45 (+16) | not in 6.12 | 68 (+16) |" in md and "| up-off | 29 (0) | 326 (0) | 39 (0) |" in md
    assert ("free path sums the functions of its set that each kernel has (one may be inlined into another "
            "or split out of it): `__free_pages` (baseline, off, packed); `__free_pages` + `___free_pages` "
            "(up, up-off).") in md
    assert "missing" not in md
    # upstream logs no page frame count: said so, not a number over MemTotal
    assert "| page_ext bytes per 4 KiB page frame (8192 MiB) | 0.00 | n/a |" not in peer
    assert "no page frame count in its log" in peer and "up-pageext: no page frame count in its log" in md
    # the slide names the reference of a bar that is not against the run's off
    svg = (run / "analysis" / "slide.svg").read_text()
    assert "(vs up-off)" in svg and "packed (vs" not in svg
    # "see Warnings" always has a section to point to
    assert "## Warnings\n\nNone.\n" in md
    # the timed ops' unit heads the p50 tables, not the cache model's
    assert "| Operation | Call site | Phase | off p50 (instructions) |" in md
    assert "p50 (cycles (model))" not in md
    fn = md.split("## Where the instructions go", 1)[1].split("\n## ", 1)[0]
    assert "| Op | Function | baseline (vs off) | baseline-nopf (vs off) | packed (vs off) |" in fn
    assert ("| kmalloc-64, kernel tag, alloc | `__kmalloc_noprof` | 111.0 (+40.0) | 81.0 (+10.0) | "
            "91.0 (+20.0) |") in fn
    # a function one kernel does not run counts 0; one no kernel differs in is left out
    assert "| kmalloc-64, kernel tag, free | `__alloc_tag_sub` | 0.5 (+0.5) | 0.0 (0.0) | 0.0 (0.0) |" in fn
    assert "| `[module]` |" not in fn
    assert "| kmalloc-64, kernel tag, free | all functions | 106.5 (+40.5) |" in fn
    assert "up-compressed (vs up-off)" in fn and "page, kernel tag" not in fn


@pytest.mark.unit
def test_function_table_missing_op_is_an_error():
    from types import SimpleNamespace
    from analysis import report, summarize

    def row(k, op, f, v):
        return summarize.Row(k, "micro", f"fn.{op}.{f}", "instructions", v, None, None, None, None, 1, "")
    rows = [row(k, op, "kfree" if op.endswith("free") else "__kmalloc_noprof", v)
            for k, v in (("off", 50.0), ("packed", 70.0)) for op in ("ksite_kmalloc_64_alloc", "ksite_kmalloc_64_free")]
    run = SimpleNamespace(kernels=["off", "packed"], ref=lambda k: "off")
    out = report.function_table(summarize.Summary(rows, [], {}), run)
    assert "| kmalloc-64, kernel tag, free | `kfree` | 70.0 (+20.0) |" in out
    with pytest.raises(ValueError, match="packed / micro: no per-function profile of ksite_kmalloc_64_free"):
        report.function_table(summarize.Summary(rows[:-1], [], {}), run)
    none = summarize.Row("packed", "micro", "fn.ksite_kmalloc_64_free.kfree", "instructions", None,
                         None, None, None, None, 2, "boots disagree")
    with pytest.raises(ValueError, match="packed / micro / fn.ksite_kmalloc_64_free.kfree: no value"):
        report.function_table(summarize.Summary(rows[:-1] + [none], [], {}), run)
    assert report.function_table(summarize.Summary([], [], {}), run) == []


def test_static_counts_of_runs_without_symbols_column(tmp_path):
    # runs before bench/fastpath-insns recorded the symbols of a row: one
    # function a row, named as such
    from analysis import load, report
    path = synth.make_run(tmp_path, synth.Spec(workloads=("mem",)))
    (path / "fastpath-insns.csv").write_text("variant,function,instructions,delta_vs_off\n"
                                             "off,__free_pages,52,0\npacked,__free_pages,68,16\n")
    assert report.static_insns_table(load.load_run(path)) == [
        "| Variant | `__free_pages` |", "|---|---|", "| off | 52 (0) |", "| packed | 68 (+16) |", ""]


def test_kernel_limited_to_some_workloads_gets_no_empty_cells(tmp_path):
    # bench/kernels "@mem": a kernel with memory boots only must not become
    # an all-"n/a" column of the micro tables.
    spec = synth.Spec(kernels=synth.KERNELS + ("packed-memonly",), workloads=("micro", "mem"), reps=1,
                      data_of={"packed-memonly": "packed-ext16"}, only={"packed-memonly": ("mem",)},
                      cache=True)
    run = synth.make_run(tmp_path, spec)
    assert plots.main([str(run)]) == 0
    md = (run / "analysis" / "report.md").read_text()
    assert "n/a" not in md and "missing" not in md
    assert "## Cache model" in md
    micro = md[md.index("## Page allocator fast path"):md.index("Guest RAM 1024 MiB")]
    mem = md[md.index("Guest RAM 1024 MiB"):]
    assert "packed-memonly" not in micro and "| packed-memonly |" in mem


@pytest.mark.parametrize("jitter", [True, False])
def test_tail_sentence_claims_replay_only_where_boots_agree(tmp_path, jitter):
    run = synth.make_run(tmp_path, synth.Spec(workloads=("micro",), jitter=jitter))
    assert plots.main([str(run)]) == 0
    text = (run / "analysis" / "report.md").read_text()
    assert "The longest tail relative to its median is" in text
    # jitter: the synthetic boots of every kernel disagree on the latencies
    assert ("its boots agree: the same in every boot" in text) == (not jitter)


def test_bars_leave_out_a_kernel_without_data_in_the_figure():
    # A kernel limited to other workloads (bench/kernels "@micro,mem") drew an
    # empty, all-NaN bar group and a legend entry in the throughput figure.
    from unittest import mock
    run = mock.Mock(kernels=["off", "packed", "packed-memonly"])
    row = mock.Mock(value=1.0, ci_low=None, ci_high=None, spread_low=None, spread_high=None)
    ax = mock.Mock()
    plots._bars(ax, ["stress-ng vm"], ["packed", "packed-memonly"],
                lambda k, c: row if k == "packed" else None, run, False)
    assert [c.kwargs["label"] for c in ax.bar.call_args_list] == ["packed"]


def test_report_attributes_the_7_3_series_step_by_step(tmp_path):
    # up-compressed -> up-table (role series-step) -> up-packed (series), each
    # against up-off, and the two steps as differences of those columns.
    run = synth.make_run(tmp_path, synth.Spec(
        kernels=synth.KERNELS + synth.PEER_KERNELS + ("up-table", "up-packed"), workloads=("micro",),
        reps=1, jitter=False, cache=True,
        data_of={"up-table": "up-compressed", "up-packed": "up-compressed"},
        scale={"up-table": 0.99, "up-packed": 0.96}))
    assert plots.main([str(run)]) == 0
    md = (run / "analysis" / "report.md").read_text()
    sec = md.split("## Upstream's compressed mode, step by step", 1)[1].split("\n## ", 1)[0]
    assert ("| Metric | up-compressed vs up-off | up-table vs up-off | up-packed vs up-off | "
            "up-table - up-compressed | up-packed - up-table |") in sec
    line = next(ln for ln in sec.splitlines() if ln.startswith("| order-0 page pair, kernel tag"))
    a, b, c, ab, bc = (int(x.strip().replace(",", "")) for x in line.split("|")[2:7])
    assert (ab, bc) == (b - a, c - b) and a > b > c, line
    assert "batch order-0 pair, module tag: LLC misses" in sec and "n/a" not in sec
    # The summary's headline lines name the series kernels too, at both call
    # sites (run 20261206-050027 left up-table and up-packed out of them).
    summary = md.split("## Summary", 1)[1].split("\n## ", 1)[0]
    for site in ("kernel", "module"):
        ln = next(ln for ln in summary.splitlines() if f"Order-0 alloc+free, {site} tag" in ln)
        assert "Linux 7.3: " in ln and "up-table +" in ln and "up-packed +" in ln, ln
        assert "packed-distro" not in ln.split("Linux 7.3: ")[1], ln


def test_talk_table_names_a_kernel_the_run_left_out_instead_of_na(tmp_path):
    # A QUICK run without baseline printed "n/a" in the talk table's cells.
    run = synth.make_run(tmp_path, synth.Spec(kernels=("off", "packed"), workloads=("micro",), reps=1))
    assert plots.main([str(run)]) == 0
    md = (run / "analysis" / "report.md").read_text()
    talk = md.split("## LSFMM 2024 talk vs this run", 1)[1].split("\n## ", 1)[0]
    assert "| Page allocation, baseline | +40% | not in this run |" in talk
    assert "n/a" not in talk


@pytest.mark.unit
def test_objext_table_rows_and_missing_point_is_an_error():
    from types import SimpleNamespace
    from analysis import report, summarize

    def row(k, m, v):
        return summarize.Row(k, "objext", m, "bytes", v, None, None, None, None, 1, "")
    rows = [row("baseline", f"{p}.{m}", v) for p in ("boot", "after")
            for m, v in (("objext_bytes", 8000.0), ("objext_vectors", 10.0), ("objext_bytes_per_slot", 8.0))]
    rows += [row("packed", f"{p}.{m}", v) for p in ("boot", "after")
             for m, v in (("objext_bytes", 2000.0), ("objext_vectors", 10.0), ("objext_bytes_per_slot", 2.0))]
    run = SimpleNamespace(kernels=["off", "baseline", "packed"])
    out = report.objext_table(summarize.Summary(rows, [], {}), run)
    body = [ln for ln in out if ln.startswith("| packed") or ln.startswith("| baseline")]
    assert len(body) == 4 and "| packed | after stress-ng | 2,000 | 10 | 2.00 |" in out
    with pytest.raises(ValueError, match="packed / objext / after: missing objext_bytes"):
        report.objext_table(summarize.Summary(rows[:-1], [], {}), run)
    assert report.objext_table(summarize.Summary([], [], {}), run) == []


@pytest.mark.unit
def test_every_kernel_of_a_full_run_has_a_colour_of_its_own():
    """A full run has about 25 labels; no two may share a colour, nor take a role's."""
    from types import SimpleNamespace
    kernels = [f"k{i}" for i in range(30)]
    run = SimpleNamespace(kernels=kernels, table=SimpleNamespace(role=lambda role, group: None,
                                                                  main_group="main"))
    cols = [plots.colour(k, run) for k in kernels]
    assert len(set(cols)) == len(cols)
    assert not set(cols) & set(plots.ROLE_COLOURS.values())


@pytest.mark.unit
def test_intervals_legend_names_only_the_kinds_the_cells_show():
    from analysis import report
    assert report.intervals_legend("| +5.0% (spread +4.0%..+6.0%) |").startswith(
        "Intervals: spread = min..max over boots (icount, deterministic).")
    both = report.intervals_legend("| +5.0% (CI +4.0%..+6.0%) | +1.0% (spread +1.0%..+2.0%) |")
    assert both.startswith("Intervals: CI = 95% bootstrap confidence interval over boots; spread = ")
    assert report.intervals_legend("| +5.0% |").startswith("No cell of this report has an interval")


def test_report_legend_matches_its_cells(generated):
    md = (generated[1] / "report.md").read_text()
    assert "<intervals legend>" not in md
    for kind in ("CI", "spread"):
        assert (f" ({kind} " in md) == (f"{kind} = " in md), kind


def test_slide_compares_alloc_only_with_the_talk_and_the_pair_without_marks(tmp_path, monkeypatch):
    """The talk's figures (page +40% -> +7%, slab +7% / +9.5%) are allocation
    only: the slide shows them beside alloc-only bars, page and kmalloc-64
    apart, and draws none of them beside the alloc+free pair (issue 29)."""
    from analysis import load, summarize
    run = load.load_run(synth.make_run(tmp_path, synth.Spec(workloads=("micro", "mem"), reps=1, jitter=False)))
    s = summarize.summarize(run)
    figs = []
    monkeypatch.setattr(plots, "_save", lambda fig, out, name: figs.append(fig))
    assert plots.plot_slide(run, s, tmp_path) is not None
    axes = {ax.get_title(): ax for ax in figs[0].axes}
    pair = next(ax for t, ax in axes.items() if "alloc+free pair" in t)
    alloc = next(ax for t, ax in axes.items() if "allocation only" in t)

    def flat_lines(ax):
        return {round(float(ln.get_ydata()[0]), 3) for ln in ax.lines
                if len(set(ln.get_ydata())) == 1 and ln.get_ydata()[0] != 0}
    assert flat_lines(pair) == set()
    assert {40.0, 7.0, 9.5} <= flat_lines(alloc)
    texts = {t.get_text().replace("\n", " ") for ax in figs[0].axes for t in ax.texts}
    texts |= {t.get_text() for ax in figs[0].axes if ax.get_legend() for t in ax.get_legend().get_texts()}
    assert not any("(slab +7%)" in t for t in texts), texts
    assert {"talk +40%", "talk +7%", "talk slab +7%", "talk slab +9.5%"} <= texts, texts
    # the bars beside the marks are the run's alloc-only overheads, page and slab
    heights = {round(b.get_height(), 1) for b in alloc.patches}
    assert {40.0, 7.0} <= heights and any(abs(h - 9.5) < 0.2 for h in heights), heights


def test_kernel_against_its_own_nopf_also_shows_its_delta_vs_off(tmp_path):
    """packed-distro is measured against packed-distro-nopf (bench/kernels
    ref); the headline lines and the fast-path table also give its delta
    against the run's off, from the two kernels' own p50s, and say that
    their configs differ (issue 29)."""
    run = synth.make_run(tmp_path, synth.Spec(
        kernels=synth.KERNELS + ("packed-distro-nopf", "packed-distro"), workloads=("micro",), reps=1,
        jitter=False, data_of={"packed-distro": "packed", "packed-distro-nopf": "baseline-nopf"}))
    assert plots.main([str(run)]) == 0
    md = (run / "analysis" / "report.md").read_text()
    # kernel-tag pair: off 1516, packed (packed-distro's data) 1622, baseline-nopf 1667
    summary = md.split("## Summary", 1)[1].split("\n## ", 1)[0]
    line = next(ln for ln in summary.splitlines() if "Order-0 alloc+free, kernel tag" in ln)
    assert "packed-distro -45 (-2.7%) vs packed-distro-nopf, +106 vs 6.12 off (configs differ)" in line, line
    fp = md.split("## Page allocator fast path", 1)[1].split("\n## ", 1)[0]
    row = next(ln for ln in fp.splitlines() if ln.startswith("| order-0 page | kernel tag | pair |"))
    assert row.endswith("| -45; +106 vs 6.12 off (configs differ) |"), row


def test_summary_states_every_unmet_target_with_its_value(generated):
    """Targets the run misses are said in the summary, with the measured
    value, not only in a table further down (issue 29)."""
    _, _, first = generated
    md = first["report.md"].decode()
    summary = md.split("## Summary", 1)[1].split("\n## ", 1)[0]
    assert len([ln for ln in summary.splitlines() if ln[:2] in {f"{i}." for i in range(1, 10)}]) <= 5
    # module-tag pair: baseline-nopf +150 vs off; packed +105 vs off, baseline's +600 / 8 = 75
    assert "Targets not met:" in summary
    assert "order-0 pair, module tag: baseline-nopf - off <= 15 (measured 150)" in summary
    assert "order-0 pair, module tag: packed vs off <= 1/8 of baseline vs off (75.0) (measured 105)" in summary
    # kmalloc-64 pair, module tag: packed 219 + 109 = 328 vs off 300: +28, met
    assert "| kmalloc-64 pair, module tag: packed - off <= 45 (profiling on) | 28 | yes |" in md
    assert "kmalloc-64 pair, module tag: packed - off <= 45" not in summary
