"""analysis.compare: flags overheads that moved outside the intervals."""

import pytest

from analysis import compare, load, summarize
from analysis.summarize import Row
from analysis.tests import synth

pytestmark = pytest.mark.unit


def _summary(root, **kw):
    return summarize.summarize(load.load_run(synth.make_run(root, synth.Spec(**kw))))


def test_move_outside_icount_spread_is_flagged(tmp_path, capsys):
    a = synth.make_run(tmp_path / "a", synth.Spec(run_id="A", workloads=("micro",)))
    b = synth.make_run(tmp_path / "b", synth.Spec(run_id="B", workloads=("micro",), scale={"baseline": 1.1}))
    assert compare.main([str(a), str(b)]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("baseline") and "pages_o0_alloc.p50.overhead" in ln)
    assert line.rstrip().endswith("outside")
    # unchanged kernels are not listed by default
    assert not any(ln.startswith("packed ") and "pages_o0_alloc.p50.overhead" in ln for ln in out.splitlines())
    assert "moved outside the intervals" in out


def test_classification_against_bootstrap_ci(tmp_path):
    sa = _summary(tmp_path / "a", run_id="A", timing="kvm", reps=4, workloads=("micro",))
    sb = _summary(tmp_path / "b", run_id="B", timing="kvm", reps=4, workloads=("micro",),
                  scale={"packed": 1.2, "packed-ext16": 1.0005})
    changes, only_a, only_b = compare.compare(sa, sb)
    v = {(c.kernel, c.metric): c.verdict for c in changes if c.workload == "micro"}
    assert v[("packed", "pages_o0_alloc.p50.overhead")] == "outside"
    assert v[("baseline", "pages_o0_alloc.p50.overhead")] == "same"
    assert v[("packed-ext16", "vmalloc_16k_alloc.p50.overhead")] == "inside"
    assert only_a == only_b == []


def test_classify_edge_cases():
    def r(v, lo=None, hi=None, slo=None, shi=None):
        return Row("k", "w", "m.overhead", "%", v, lo, hi, slo, shi, 2, "")
    assert compare.classify(r(1.0, 0.5, 1.5), r(1.2, 0.9, 1.6)) == "inside"
    assert compare.classify(r(1.0, 0.5, 1.5), r(3.0, 2.0, 4.0)) == "outside"
    assert compare.classify(r(1.0, slo=1.0, shi=1.0), r(1.1, slo=1.1, shi=1.1)) == "outside"
    assert compare.classify(r(1.0), r(2.0)) == "no interval"


def test_compare_bad_input_exits_1(tmp_path, capsys):
    a = synth.make_run(tmp_path, synth.Spec(run_id="A", workloads=("mem",), reps=1))
    assert compare.main([str(a), str(tmp_path / "nope")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "nope" in err and err.count("\n") == 1


def test_one_boot_is_no_interval_unless_deterministic():
    one = Row("k", "w", "m.overhead", "%", 1.0, None, None, 1.0, 1.0, 1, "fewer than 5 boots: spread only, no CI")
    moved = Row("k", "w", "m.overhead", "%", 3.0, None, None, 3.0, 3.0, 1, "fewer than 5 boots: spread only, no CI")
    assert compare.classify(one, moved) == "no interval"
    det = Row("k", "w", "m.overhead", "%", 1.0, None, None, 1.0, 1.0, 1,
              "spread: min..max over boots (icount is deterministic, so no CI)")
    assert compare.classify(det, Row("k", "w", "m.overhead", "%", 3.0, None, None, 3.0, 3.0, 1, det.note)) == "outside"


def test_runs_of_different_kernels_or_arguments_are_named(tmp_path, capsys):
    import json
    a = synth.make_run(tmp_path / "a", synth.Spec(run_id="A", workloads=("micro",)))
    b = synth.make_run(tmp_path / "b", synth.Spec(run_id="B", workloads=("micro",)))
    m = json.loads((b / "manifest.json").read_text())
    m["build_info"]["packed"]["series_hash"] = "other"
    for boot in m["boots"]:
        if boot["kernel"] == "off":
            boot["cmdline_extra"] = "samples=500"
    (b / "manifest.json").write_text(json.dumps(m))
    assert compare.main([str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "note: kernel packed: series_hash differs (A serpac, B other)" in out
    assert "note: off/micro: benchmark arguments differ" in out


def test_every_row_suffix_summarize_emits_is_compared(tmp_path, capsys):
    """compare lists every derived row summarize writes, .delta_nopf included
    (the "packed - nopf" target is a .delta_nopf row)."""
    a = synth.make_run(tmp_path / "a", synth.Spec(run_id="A", workloads=("micro",)))
    b = synth.make_run(tmp_path / "b", synth.Spec(run_id="B", workloads=("micro",), scale={"packed": 1.1}))
    sa = summarize.summarize(load.load_run(a))
    emitted = {r.metric[r.metric.rindex("."):] for r in sa.rows if r.value is not None
               and r.metric.endswith(tuple(summarize.REL_SUFFIX.values()))}
    assert ".delta_nopf" in emitted
    changes, _, _ = compare.compare(sa, summarize.summarize(load.load_run(b)))
    compared = {c.metric[c.metric.rindex("."):] for c in changes}
    assert emitted <= compared, f"never compared: {sorted(emitted - compared)}"
    assert compare.main([str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert any(ln.startswith("packed ") and "pages_o0_pair.p50.delta_nopf" in ln and ln.rstrip().endswith("outside")
               for ln in out.splitlines())


def test_config_difference_names_the_options(tmp_path, capsys):
    """With the kernels' configs archived in both runs, compare says which
    options differ (issue 25 item 4)."""
    import gzip
    import json
    a = synth.make_run(tmp_path / "a", synth.Spec(run_id="A", workloads=("mem",), reps=1))
    b = synth.make_run(tmp_path / "b", synth.Spec(run_id="B", workloads=("mem",), reps=1))
    for run, preempt in ((a, "CONFIG_PREEMPT_NONE=y"), (b, "CONFIG_PREEMPT=y")):
        (run / "configs").mkdir()
        (run / "configs" / "packed.config.gz").write_bytes(gzip.compress(f"CONFIG_MMU=y\n{preempt}\n".encode()))
    m = json.loads((b / "manifest.json").read_text())
    m["build_info"]["packed"]["config_hash"] = "other"
    (b / "manifest.json").write_text(json.dumps(m))
    assert compare.main([str(a), str(b)]) == 0
    assert ("note: kernel packed: config_hash differs (A cfgpac, B other): the runs measured different kernels; "
            "2 options differ: CONFIG_PREEMPT: n -> y, CONFIG_PREEMPT_NONE: y -> n") in capsys.readouterr().out
