"""bench/workloads/: each benchmark workload is one folder (guest job,
settings, parser and figures), found by one registry that bench/lib.sh,
bench/kernels.py and the analysis agree with."""

import ast
import json
import stat
import sys
from pathlib import Path

import pytest

from bench import workloads

REPO = Path(__file__).resolve().parent.parent


def test_every_workload_has_its_settings_and_a_guest_job():
    ws = workloads.workloads()
    assert set(ws) == {"fio", "mem", "memcg", "micro", "micro-smp", "objext", "stress"}
    assert {w: ws[w].job for w in ws} == {"fio": "fio", "mem": "mem", "memcg": "memcg", "micro": "micro",
                                          "micro-smp": "micro", "objext": "objext", "stress": "stress"}
    for w in ws.values():
        assert workloads.NAME.match(w.name) and workloads.JOB_NAME.match(w.job), w
        assert sorted(set(w.settings()) - set(workloads.OPTIONAL)) == sorted(workloads.SETTINGS), w.conf
        s = w.settings()
        assert s["TOOLS"] in ("0", "1") and s["SMP"].isdigit() and s["TIMEOUT"].isdigit(), w.conf
        assert s["MEM"].split() and all(m.isdigit() for m in s["MEM"].split()), w.conf
        script = w.job_script
        assert script.read_text().startswith("#!/bin/sh\n"), script
        assert script.stat().st_mode & stat.S_IXUSR, f"{script} is not executable"
    assert workloads.jobs() == sorted({w.job for w in ws.values()})
    for job in workloads.jobs():
        unit = workloads.unit(job)
        assert unit is not None, f"bench/workloads/{job}/ has no parse.py"
        assert callable(unit.load) and callable(unit.figures), unit.__file__
    assert workloads.unit("smoke") is None and workloads.unit("../x") is None


def test_guest_job_names_are_unique():
    """The initramfs has one /jobs/ directory: a workload's job and a test's
    job (bench/guest/jobs/) must not share a name."""
    test_jobs = {p.name for p in (REPO / "bench/guest/jobs").iterdir()}
    assert not test_jobs & set(workloads.jobs())
    assert {"smoke", "systest"} <= test_jobs


def test_boot_record_names_the_job_in_one_json_line():
    """Each boot's line in boots.jsonl names the guest job it ran, so the
    analysis need not read it back from the guest's /proc/cmdline."""
    from bench import kernels, run_bench
    k = kernels.read().get("off")
    b = run_bench.Boot(3, k, workloads.get("micro-smp"), 1024, 1, 2, "900", False, 'a="b"\tc')
    line = json.dumps(b.record("ok", 12))
    assert json.loads(line) == {
        "seq": 3, "id": "off--micro-smp--m1024--r1", "kernel": "off", "variant": "off",
        "workload": "micro-smp", "job": "micro", "mem_mb": 1024, "smp": 2, "rep": 1,
        "kernel_args": "", "cmdline_extra": ' a="b"\tc', "status": "ok", "wall_s": 12}


def test_bad_settings_line_is_a_one_line_error(tmp_path):
    conf = tmp_path / "x.conf"
    conf.write_text("# comment\nTOOLS=0\nMEM=1024 8192\n")
    with pytest.raises(workloads.WorkloadError) as e:
        workloads.Workload("x", "x", conf).settings()
    assert str(e.value).startswith(f"{conf}:3: expected NAME=value") and "\n" not in str(e.value)


def _literals(path: Path, names: set[str]) -> list[str]:
    tree = ast.parse(path.read_text())
    return [f"{path.name}:{n.lineno}: {n.value!r}" for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in names]


def test_analysis_dispatches_through_the_registry():
    """analysis/load.py and summarize.py read and sum up every workload through
    its bench/workloads/<job>/parse.py: a job name spelled there is an
    if/elif branch that the next workload has to extend."""
    found = [x for name in ("load.py", "summarize.py")
             for x in _literals(REPO / "analysis" / name, set(workloads.jobs()) | set(workloads.names()))]
    assert not found, "job or workload names in analysis/: " + "; ".join(found)


HELLO_PARSE = """
from bench.workloads import MetricDef


def load(r, warnings):
    return int(r.text("hello.txt"))


def figures(c, d):
    c.add(d, d.boot.workload, "answer", MetricDef("count", rel=("delta",)), float(d.data))
"""


def test_a_new_workload_is_one_folder(tmp_path, monkeypatch):
    """A job folder with a job, a .conf and a parse.py is read and summed up
    with no change to analysis/: its rows and their deltas are in the summary."""
    from analysis import load, summarize
    from analysis.tests import synth
    root = tmp_path / "workloads"
    (root / "hello").mkdir(parents=True)
    (root / "hello" / "job").write_text('#!/bin/sh\necho 42 >"$OUT/hello.txt"\n')
    (root / "hello" / "hello.conf").write_text('TOOLS=0\nMEM="1024"\nSMP=1\nARGS=""\nQUICK_ARGS=""\nTIMEOUT=60\n')
    (root / "hello" / "parse.py").write_text(HELLO_PARSE)
    for job in workloads.jobs():  # the real ones beside it
        (root / job).symlink_to(workloads.DIR / job)
    monkeypatch.setattr(workloads, "DIR", root)
    monkeypatch.setattr(workloads, "__path__", [str(root)] + list(workloads.__path__))
    try:
        assert "hello" in workloads.names() and workloads.get("hello").job == "hello"
        run = synth.make_run(tmp_path / "runs", synth.Spec(workloads=("mem",), reps=1))
        m = json.loads((run / "manifest.json").read_text())
        for k in synth.KERNELS:
            mem = next(b for b in m["boots"] if b["kernel"] == k)
            bid = f"{k}--hello--m1024--r1"
            m["boots"].append(dict(mem, id=bid, workload="hello", job="hello"))
            res = run / "boots" / bid / "result"
            res.mkdir(parents=True)
            for f in ("job.rc", "dmesg.txt", "meminfo-boot.txt"):
                (res / f).write_text((run / "boots" / mem["id"] / "result" / f).read_text())
            (res / "cmdline").write_text("console=ttyS0 job=hello\n")
            (res / "hello.txt").write_text(f"{40 + len(k)}\n")
        (run / "manifest.json").write_text(json.dumps(m))
        r = load.load_run(run)
        assert r.warnings == []
        s = summarize.summarize(r)
        assert s.value("off", "hello", "answer") == 43
        assert s.value("packed", "hello", "answer.delta") == len("packed") - len("off")
    finally:
        for name in [n for n in sys.modules if n.startswith("bench.workloads.hello")]:
            del sys.modules[name]


def _objext_result(tmp_path, rc="0", boot_bytes=1024, after_bytes=2048, allocinfo=True):
    from tests.test_parse import SLABINFO
    res = tmp_path / "b" / "result"
    res.mkdir(parents=True)
    (res / "stress-rc.txt").write_text(rc + "\n")
    for p, n in (("boot", boot_bytes), ("after", after_bytes)):
        if allocinfo:
            (res / f"allocinfo-{p}.txt").write_text(
                "allocinfo - version: 1.0\n"
                f"        {n}        3 mm/slub.c:2010 func:alloc_slab_obj_exts\n")
        (res / f"slabinfo-{p}.txt").write_text(SLABINFO)
    from analysis.load import BootFiles
    return BootFiles(res, "packed--objext--m1024--r1")


@pytest.mark.unit
def test_objext_reads_both_points_and_fails_loudly(tmp_path):
    """The objext workload: vector bytes, vectors and object slots after boot
    and after stress-ng; a failed stress-ng run is an error, a kernel without
    /proc/allocinfo (or without the vector call site) a warning."""
    from analysis.load import AnalysisError
    unit = workloads.unit("objext")
    warnings: list[str] = []
    data = unit.load(_objext_result(tmp_path / "ok"), warnings)
    assert data == {"boot": (1024, 3, 21 + 64), "after": (2048, 3, 21 + 64)} and not warnings
    with pytest.raises(AnalysisError, match="stress-ng exited with '1'"):
        unit.load(_objext_result(tmp_path / "rc", rc="1"), warnings)
    assert unit.load(_objext_result(tmp_path / "off", allocinfo=False), warnings) is None
    assert len(warnings) == 1 and "no /proc/allocinfo" in warnings[0]
    r = _objext_result(tmp_path / "nopf")
    (r.result / "sysctl-mem_profiling").write_text("0\n")
    assert unit.load(r, warnings) is None and "profiling off at boot" in warnings[-1]
    r = _objext_result(tmp_path / "nosite")
    (r.result / "allocinfo-after.txt").write_text("allocinfo - version: 1.0\n        5  1 mm/x.c:1 func:f\n")
    assert unit.load(r, warnings) is None and "no alloc_slab_obj_exts" in warnings[-1]
