"""tests/guest.boot() shares boots between the workers of one test run and
never hands out a boot made with other arguments or by an earlier run.
A fake bench/boot/boot (ALLOCTAG_BOOT) counts its calls; no QEMU."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import guest

pytestmark = pytest.mark.unit

FAKE_BOOT = """#!/bin/sh
# Fake bench/boot/boot: log the call, take long enough for a second caller to
# arrive meanwhile, leave an ok boot in -o DIR.
dir=
while getopts k:j:o:m:s:t:a:Tw: opt; do
	case $opt in o) dir=$OPTARG ;; *) ;; esac
done
echo "$*" >>"$(dirname -- "$0")/calls"
sleep 2
mkdir -p "$dir/result"
echo "$*" >"$dir/result/args.txt"
echo ok >"$dir/status"
"""

CHILD = """import sys
from tests.guest import boot
b = boot(sys.argv[1], "packed", append=sys.argv[2])
print(b.status)
"""


@pytest.fixture
def fake(tmp_path: Path) -> Path:
    script = tmp_path / "boot"
    script.write_text(FAKE_BOOT)
    script.chmod(0o755)
    return script


def calls(fake: Path) -> list[str]:
    log = fake.parent / "calls"
    return log.read_text().splitlines() if log.exists() else []


def child(fake: Path, run: str, name: str, append: str = "") -> subprocess.Popen:
    """boot(name, "packed", append=append) in a process of its own, as another
    pytest worker (or a later pytest run) would."""
    env = dict(os.environ, ALLOCTAG_BOOT=str(fake), ALLOCTAG_TEST_DIR=str(fake.parent / "boots"),
               ALLOCTAG_TEST_RUN=run)
    return subprocess.Popen([sys.executable, "-c", CHILD, name, append], cwd=guest.REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(p: subprocess.Popen) -> tuple[int, str, str]:
    out, err = p.communicate(timeout=60)
    return p.returncode, out.strip(), err


def test_same_name_with_other_arguments_is_an_error(fake, monkeypatch):
    monkeypatch.setattr(guest, "BOOT_SCRIPT", fake)
    monkeypatch.setattr(guest, "TEST_DIR", fake.parent / "boots")
    monkeypatch.setattr(guest, "_cache", {})
    b = guest.boot("x", "packed", timeout=60)
    assert b.ok and len(calls(fake)) == 1
    # the timeout is not part of what was booted
    assert guest.boot("x", "packed", timeout=120).dir == b.dir and len(calls(fake)) == 1
    with pytest.raises(ValueError, match=r"boot 'x'.*append='kunit.enable=1'"):
        guest.boot("x", "packed", append="kunit.enable=1")
    with pytest.raises(ValueError, match=r"boot 'x'.*smp=2"):
        guest.boot("x", "packed", smp=2)
    # ... and from another worker of the same run, through the record on disk
    rc, _, err = finish(child(fake, guest.RUN_ID, "x", "kunit.enable=1"))
    assert rc != 0 and "ValueError: boot 'x'" in err, err
    assert len(calls(fake)) == 1


def test_two_workers_asking_for_one_boot_boot_it_once(fake):
    procs = [child(fake, "run-1", "x") for _ in range(2)]
    results = [finish(p) for p in procs]
    assert [(rc, out) for rc, out, _ in results] == [(0, "ok"), (0, "ok")], results
    assert len(calls(fake)) == 1, calls(fake)


def test_a_boot_is_reused_within_its_run_and_never_by_another_run(fake):
    assert finish(child(fake, "run-1", "x"))[:2] == (0, "ok")
    assert len(calls(fake)) == 1
    # a later run boots again, even though an ok boot of "x" is on disk
    assert finish(child(fake, "run-2", "x"))[:2] == (0, "ok")
    assert len(calls(fake)) == 2
    # that run's next worker takes it
    assert finish(child(fake, "run-2", "x"))[:2] == (0, "ok")
    assert len(calls(fake)) == 2


def test_page_refs_names_the_dmesg_of_a_boot_without_the_report_line(tmp_path):
    (tmp_path / "result").mkdir()
    b = guest.Boot("x", tmp_path, "ok")
    (tmp_path / "result/dmesg.txt").write_text("[    0.50] foo\n")
    msg = f"boot x (ok): no 'page tag refs:' line in {tmp_path}/result/dmesg.txt"
    with pytest.raises(AssertionError, match=re.escape(msg)):
        b.page_refs()
    (tmp_path / "result/dmesg.txt").write_text(
        "[    2.10] alloc_tag: page tag refs: mode=flags ref_bits=16 kernel_tags=3 index_bits=16"
        " index_used=4 page_ext_bytes=0 page_ext_pages=0\n")
    assert b.page_refs().mode == "flags"
