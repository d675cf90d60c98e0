"""analysis.load: reads good runs, rejects bad ones with one-line messages."""

import json
from dataclasses import replace

import pytest

from analysis import load
from analysis.load import AnalysisError
from analysis.tests import synth

pytestmark = pytest.mark.unit


def test_good_run_loads_every_boot(tmp_path):
    run = load.load_run(synth.make_run(tmp_path))
    assert run.kernels == list(synth.KERNELS)
    assert run.timing == "icount" and run.unit == "instructions"
    # micro, micro-smp, stress, fio: 1 size; mem: 2 sizes -> 6 boots per kernel and rep
    assert len(run.boots) == 5 * 6 * 2 and run.failed == [] and run.warnings == []
    d = next(b for b in run.boots if b.boot.id == "baseline--stress--m1024--r1")
    assert d.job == "stress" and set(d.data) == {"vm", "fork"}
    assert d.data["vm"].metrics["wall-clock-time"] == pytest.approx(2.2)
    assert d.data["vm"].perf["cycles"].supported is False
    assert d.data["vm"].perf["task-clock"].value == pytest.approx(2178.0)
    f = next(b for b in run.boots if b.boot.id == "off--fio--m1024--r2").data
    assert f.runtime_ms == 2001 and f.read_bw == 65536 * 1000 // 2001
    off_mem = next(b for b in run.boots if b.boot.id == "off--mem--m1024--r1")
    assert off_mem.report is None and off_mem.allocinfo is None
    # icount: every workload, micro-smp's two vCPUs too, is expected to replay
    assert run.deterministic


def test_job_comes_from_boots_jsonl_and_from_the_guest_cmdline_only_in_old_runs(tmp_path):
    """run-bench records each boot's guest job in boots.jsonl: the analysis
    reads the boot's files by it, whatever the guest's /proc/cmdline says.
    Runs recorded before that (20261204-202248) have only the cmdline."""
    spec = synth.Spec(workloads=("micro", "stress", "mem"), reps=1)
    run = synth.make_run(tmp_path / "new", spec)
    for cmdline in run.glob("boots/*/result/cmdline"):
        cmdline.write_text(cmdline.read_text().replace("job=", "no_job="))
    new = load.load_run(run)
    assert new.warnings == []
    assert {(d.boot.workload, d.boot.job, d.job) for d in new.boots} == \
        {("micro", "micro", "micro"), ("stress", "stress", "stress"), ("mem", "mem", "mem")}
    assert all(d.data is not None for d in new.boots)
    old = load.load_run(synth.make_run(tmp_path / "old", replace(spec, job_recorded=False)))
    assert old.warnings == [] and {d.boot.job for d in old.boots} == {None}
    assert [(d.boot.id, d.job, d.data) for d in old.boots] == [(d.boot.id, d.job, d.data) for d in new.boots]


def _msg(exc_info) -> str:
    msg = str(exc_info.value)
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize("workload,boot,name,corrupt,what", [
    ("micro", "packed--micro--m1024--r2", "alloc_bench.csv", lambda t: t.replace("# end\n", ""),
     "truncated"),
    ("fio", "off--fio--m1024--r1", "fio.json", lambda t: t[:-20], "JSON"),
])
def test_corrupt_result_file_is_named(tmp_path, workload, boot, name, corrupt, what):
    run = synth.make_run(tmp_path, synth.Spec(workloads=(workload,)))
    p = run / "boots" / boot / "result" / name
    p.write_text(corrupt(p.read_text()))
    with pytest.raises(AnalysisError) as e:
        load.load_run(run)
    assert str(p) in _msg(e) and what in _msg(e)


def test_missing_result_file_of_ok_boot(tmp_path):
    run = synth.make_run(tmp_path, synth.Spec(workloads=("stress",)))
    p = run / "boots" / "baseline--stress--m1024--r1" / "result" / "stress-fork.yaml"
    p.unlink()
    with pytest.raises(AnalysisError) as e:
        load.load_run(run)
    assert str(p) in _msg(e) and "missing" in _msg(e)


def test_missing_and_corrupt_manifest(tmp_path):
    run = synth.make_run(tmp_path, synth.Spec(workloads=("mem",)))
    mp = run / "manifest.json"
    mp.write_text("{not json")
    with pytest.raises(AnalysisError) as e:
        load.load_run(run)
    assert str(mp) in _msg(e) and "corrupt" in _msg(e)
    mp.unlink()
    with pytest.raises(AnalysisError) as e:
        load.load_run(load.resolve_run_dir(run))
    assert str(mp) in _msg(e)


def test_kernel_without_ok_boots_is_an_error(tmp_path):
    failed = {f"packed--micro--m1024--r{r}": "timeout" for r in (1, 2)}
    run = synth.make_run(tmp_path, synth.Spec(workloads=("micro",), failed=failed))
    with pytest.raises(AnalysisError) as e:
        load.load_run(run)
    assert "manifest.json" in _msg(e) and "'packed'" in _msg(e) and "timeout" in _msg(e)


def test_missing_off_is_an_error(tmp_path):
    run = synth.make_run(tmp_path, synth.Spec(workloads=("micro",), kernels=("baseline", "packed")))
    with pytest.raises(AnalysisError) as e:
        load.load_run(run)
    assert "manifest.json" in _msg(e) and "'off'" in _msg(e)


def test_off_with_only_failed_boots_is_an_error(tmp_path):
    failed = {f"off--micro--m1024--r{r}": "qemu-failed" for r in (1, 2)}
    run = synth.make_run(tmp_path, synth.Spec(workloads=("micro",), failed=failed))
    with pytest.raises(AnalysisError) as e:
        load.load_run(run)
    assert "'off'" in _msg(e) and "relative to 'off'" in _msg(e)


def test_tcg_refused_unless_allowed(tmp_path):
    run = synth.make_run(tmp_path, synth.Spec(timing="tcg", workloads=("micro",)))
    with pytest.raises(AnalysisError) as e:
        load.load_run(run)
    assert str(run / "manifest.json") in _msg(e) and "--allow-tcg" in _msg(e)
    r = load.load_run(run, allow_tcg=True)
    assert r.relative_only and r.unit == "ns"


def test_interrupted_run_with_failed_boot(tmp_path):
    spec = synth.Spec(state="interrupted", workloads=("micro", "mem"),
                      failed={"packed--micro--m1024--r2": "timeout"})
    run = load.load_run(synth.make_run(tmp_path, spec))
    assert [(b.id, b.status) for b in run.failed] == [("packed--micro--m1024--r2", "timeout")]
    assert any("interrupted" in w for w in run.warnings)
    assert "packed" in run.kernels


def test_interrupted_run_drops_kernels_never_booted(tmp_path):
    run = synth.make_run(tmp_path, synth.Spec(state="interrupted", workloads=("micro",)))
    m = json.loads((run / "manifest.json").read_text())
    m["boots"] = [b for b in m["boots"] if b["kernel"] != "packed-ext16"]
    (run / "manifest.json").write_text(json.dumps(m))
    r = load.load_run(run)
    assert "packed-ext16" not in r.kernels
    assert any("packed-ext16" in w and "never booted" in w for w in r.warnings)


def test_resolve_picks_newest_run(tmp_path):
    synth.make_run(tmp_path, synth.Spec(run_id="20250101-000000", workloads=("mem",), reps=1))
    newest = synth.make_run(tmp_path, synth.Spec(run_id="20250102-000000", workloads=("mem",), reps=1))
    (tmp_path / "20250103-000000").mkdir()  # still running: no manifest
    (tmp_path / "20250103-000000" / "x").mkdir()
    assert load.resolve_run_dir(tmp_path) == newest
    with pytest.raises(AnalysisError):
        load.resolve_run_dir(tmp_path / "20250103-000000" / "x")
