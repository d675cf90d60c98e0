"""bench/workloads/: each benchmark workload is one folder (guest job,
settings), found by one registry that bench/lib.sh, bench/kernels.py and
the analysis agree with."""

import os
import stat
import subprocess
from pathlib import Path

import pytest

from bench import workloads

REPO = Path(__file__).resolve().parent.parent


def sh(script: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", ". ./bench/lib.sh; " + script, "bench/sh"], cwd=REPO,
                          capture_output=True, text=True, env=dict(os.environ, LC_ALL="C"))


def test_every_workload_has_its_settings_and_a_guest_job():
    ws = workloads.workloads()
    assert set(ws) == {"fio", "mem", "micro", "micro-smp", "stress"}
    assert {w: ws[w].job for w in ws} == {"fio": "fio", "mem": "mem", "micro": "micro",
                                          "micro-smp": "micro", "stress": "stress"}
    for w in ws.values():
        assert workloads.NAME.match(w.name) and workloads.JOB_NAME.match(w.job), w
        assert sorted(w.settings()) == sorted(workloads.SETTINGS), w.conf
        s = w.settings()
        assert s["TOOLS"] in ("0", "1") and s["SMP"].isdigit() and s["TIMEOUT"].isdigit(), w.conf
        assert s["MEM"].split() and all(m.isdigit() for m in s["MEM"].split()), w.conf
        script = w.job_script
        assert script.read_text().startswith("#!/bin/sh\n"), script
        assert script.stat().st_mode & stat.S_IXUSR, f"{script} is not executable"
    assert workloads.jobs() == sorted({w.job for w in ws.values()})


def test_guest_job_names_are_unique():
    """The initramfs has one /jobs/ directory: a workload's job and a test's
    job (bench/guest/jobs/) must not share a name."""
    test_jobs = {p.name for p in (REPO / "bench/guest/jobs").iterdir()}
    assert not test_jobs & set(workloads.jobs())
    assert {"smoke", "systest"} <= test_jobs


def test_shell_helpers_find_the_same_workloads():
    assert sh("workload_names").stdout.split() == workloads.names()
    out = sh("for w in micro micro-smp stress; do workload_job $w; done; "
             "workload_conf micro-smp; workload_conf nosuch || echo unknown; "
             "workload_conf '*' || echo unknown")
    assert out.stdout.split() == ["micro", "micro", "stress",
                                  str(REPO / "bench/workloads/micro/micro-smp.conf"), "unknown", "unknown"]


def test_bad_settings_line_is_a_one_line_error(tmp_path):
    conf = tmp_path / "x.conf"
    conf.write_text("# comment\nTOOLS=0\nMEM=1024 8192\n")
    with pytest.raises(workloads.WorkloadError) as e:
        workloads.Workload("x", "x", conf).settings()
    assert str(e.value).startswith(f"{conf}:3: expected NAME=value") and "\n" not in str(e.value)
