"""bench/run_bench.py, the benchmark run loop, with a stand-in for bench/boot/boot
(--boot): no kernel, no QEMU."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench import kernels, run_bench, workloads

REPO = Path(__file__).resolve().parent.parent

# Takes bench/boot/boot's options and leaves what it leaves.  FAKE_BOOT says how
# each variant's boots end: "VARIANT=STATUS ..." where STATUS is a bench/boot/boot
# failure (status file, exit 1), job-failed (job.rc 1), no-status (exit 1, no
# status file), no-sysctl (profiling switched itself off) or hang (sleeps in
# a process group of its own, as QEMU under timeout(1) does).  FAKE_DELAY:
# seconds each boot takes.  Asked for PCs (CACHESIM_ARGS pcs=), a boot copies
# the files of fake/pcs-boot/ (a micro boot with its PCs) into its directory.
FAKE_BOOT = r"""#!/bin/sh
dir= variant=
while getopts k:j:o:m:s:t:a:Tw: opt; do
	case $opt in k) variant=$OPTARG ;; o) dir=$OPTARG ;; *) ;; esac
done
here=$(dirname -- "$0")
id=${dir##*/}
echo "start $id" >>"$here/log"
mkdir -p "$dir/result"
printf '%s\n' "$@" >"$dir/argv"
echo "fake $*" >"$dir/qemu-cmdline"
: >"$dir/result.tar"
echo 0 >"$dir/result/job.rc"
echo 1 >"$dir/result/sysctl-mem_profiling"
echo 1 >"$dir/result/sysctl-mem_profiling_compressed"
echo "${CACHESIM_ARGS:-}" >"$dir/cachesim-args"
case ${CACHESIM_ARGS:-} in
*pcs="$dir/pcs.csv"*) [ ! -d "$here/pcs-boot" ] || cp -r "$here/pcs-boot/." "$dir/" ;;
esac
[ -z "${FAKE_DELAY:-}" ] || sleep "$FAKE_DELAY"
how=ok
for x in ${FAKE_BOOT:-}; do [ "${x%%=*}" = "$variant" ] && how=${x#*=}; done
rc=0
case $how in
ok) ;;
hang)
	setsid sleep 300 </dev/null >/dev/null 2>&1 &
	echo "$$ $!" >"$here/hang.pids"
	wait
	;;
job-failed) echo 1 >"$dir/result/job.rc" ;;
no-sysctl) echo 0 >"$dir/result/sysctl-mem_profiling_compressed" ;;
no-status) rc=1 ;;
*) echo "$how" >"$dir/status"; rc=1 ;;
esac
[ "$rc" = 1 ] || echo ok >"$dir/status"
echo "end $id" >>"$here/log"
exit $rc
"""

PROGRESS = re.compile(r">>> \[(\d+)/(\d+)\] kernel (\S+), workload (\S+), (\d+) MiB, run (\d+) of (\d+) "
                      r"\(elapsed \d+s, ETA (?:\?|\d+)s\)\Z")


@pytest.fixture
def bench(tmp_path):
    """run(**env) runs bench/run_bench.py with the stand-in boot, a build
    directory of its own, results in tmp_path/results and run id "t"."""
    fake = tmp_path / "fake" / "boot"
    fake.parent.mkdir()
    fake.write_text(FAKE_BOOT)
    fake.chmod(0o755)

    def run(wait=True, **env):
        e = {k: v for k, v in os.environ.items()
             if k not in ("R", "QUICK", "QUICK_R", "WORKLOADS", "KERNELS", "RUN_ID_FILE", "BENCH_JOBS",
                          "CACHESIM")}
        e.update(BUILD_DIR=str(tmp_path / "build"), RESULTS_DIR=str(tmp_path / "results"), RUN_ID="t",
                 TIMING="icount", PEER="0", R="1")
        e.update(env)
        p = subprocess.Popen([sys.executable, "-m", "bench.run_bench", "--boot", str(fake)], cwd=REPO, env=e,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if not wait:
            return p
        out, err = p.communicate(timeout=120)
        return subprocess.CompletedProcess(p.args, p.returncode, out, err)

    run.dir = tmp_path / "results" / "t"
    run.fake = fake.parent
    run.build = tmp_path / "build"
    return run


def log(fake: Path) -> list[str]:
    p = fake / "log"
    return p.read_text().splitlines() if p.exists() else []


def progress(stderr: str) -> list[tuple]:
    return [(int(m[1]), int(m[2]), m[3], m[4], int(m[5]), int(m[6]), int(m[7]))
            for m in map(PROGRESS.match, stderr.splitlines()) if m]


def manifest(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text())


@pytest.mark.parametrize("env, msg", [
    ({"R": "zero"}, "R='zero' is not a positive number of repetitions"),
    ({"R": "0"}, "R='0' is not a positive number"),
    ({"QUICK": "yes"}, "QUICK='yes' must be 0 or 1"),
    ({"QUICK": "1", "QUICK_R": "-1"}, "QUICK_R='-1' is not a positive number"),
    ({"TIMING": "bogus"}, "TIMING='bogus' must be auto, icount, kvm or tcg"),
    ({"PEER": "2"}, "PEER='2' must be 0 or 1"),
    ({"CACHESIM": "yes"}, "CACHESIM='yes' must be 0 or 1"),
    ({"BENCH_JOBS": "0"}, "BENCH_JOBS='0' is not a positive number of parallel boots"),
    ({"BENCH_JOBS": "two"}, "BENCH_JOBS='two' is not a positive number"),
    ({"WORKLOADS": "micro nosuch"}, "unknown workload 'nosuch' (see bench/workloads/)"),
    ({"WORKLOADS": "../micro"}, "unknown workload '../micro'"),
    ({"WORKLOADS": "micro mem micro"}, "WORKLOADS names micro more than once"),
    ({"KERNELS": "off nope"}, "bench/kernels: unknown kernel label 'nope'"),
    ({"KERNELS": "off packed off"}, "KERNELS names off more than once"),
    # packed-distro runs micro and mem only; up-off is the peer, PEER=0
    ({"KERNELS": "packed-distro", "WORKLOADS": "stress fio"}, "nothing to boot"),
    ({"KERNELS": "up-off"}, "nothing to boot"),
    ({"RUN_ID": "../elsewhere"}, "RUN_ID='../elsewhere' is not a name"),
])
def test_bad_input_is_one_error_line_before_any_boot(bench, env, msg):
    r = bench(**{"KERNELS": "off", **env})
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith("error: ") and len(r.stderr.splitlines()) == 1, r.stderr
    assert msg in r.stderr, r.stderr
    assert not log(bench.fake) and not bench.dir.exists()


def test_an_existing_run_is_not_overwritten(bench):
    bench.dir.mkdir(parents=True)
    r = bench(KERNELS="off", WORKLOADS="micro")
    assert r.returncode == 1 and r.stderr == f"error: {bench.dir} already exists\n"
    assert not log(bench.fake) and list(bench.dir.iterdir()) == []


def test_bad_workload_settings_are_an_error(tmp_path):
    conf = tmp_path / "w.conf"
    conf.write_text('TOOLS=0\nMEM="1024 x"\nSMP=1\nARGS=""\nQUICK_ARGS=""\nTIMEOUT=60\n')
    with pytest.raises(run_bench.BenchError, match=r"w.conf: MEM='1024 x' is not valid"):
        run_bench.settings(workloads.Workload("w", "w", conf))
    conf.write_text("TOOLS=0\nMEM=1024\n")
    with pytest.raises(run_bench.BenchError, match=r"w.conf: SMP, ARGS, QUICK_ARGS, TIMEOUT not set"):
        run_bench.settings(workloads.Workload("w", "w", conf))


def test_settings_are_read_as_the_shell_reads_them(tmp_path):
    conf = tmp_path / "w.conf"
    conf.write_text('# a comment\nTOOLS=1  # tools initramfs\nMEM="1024 8192"\nSMP=2\n'
                    'ARGS="a=1 b=\'2 3\' # not a comment"\nQUICK_ARGS=\'\'\nTIMEOUT=60\n')
    assert run_bench.settings(workloads.Workload("w", "w", conf)) == {
        "TOOLS": "1", "MEM": "1024 8192", "SMP": "2", "ARGS": "a=1 b='2 3' # not a comment",
        "QUICK_ARGS": "", "TIMEOUT": "60"}
    sh = subprocess.run(["sh", "-c", '. "$1"; printf "%s|" "$TOOLS" "$MEM" "$SMP" "$ARGS" "$QUICK_ARGS" '
                         '"$TIMEOUT"', "sh", str(conf)], capture_output=True, text=True, check=True).stdout
    assert sh == "1|1024 8192|2|a=1 b='2 3' # not a comment||60|"


def test_boots_interleave_kernels_within_workload_and_memory_size(bench):
    """(rep, workload, MiB, kernel), kernels in KERNELS' order; a label's
    "@micro,mem" leaves the other workloads out and the count knows it."""
    r = bench(KERNELS="packed-distro off", WORKLOADS="stress mem", R="2", BENCH_JOBS="1")
    assert r.returncode == 0, r.stderr
    want = []
    for rep in (1, 2):
        want += [("off", "stress", 1024, rep)]
        want += [(k, "mem", m, rep) for m in (1024, 8192) for k in ("packed-distro", "off")]
    total = len(want)
    assert total == 10
    assert progress(r.stderr) == [(n, total, k, w, m, rep, 2) for n, (k, w, m, rep) in enumerate(want, 1)]
    ids = [f"{k}--{w}--m{m}--r{rep}" for k, w, m, rep in want]
    assert log(bench.fake) == [x for i in ids for x in (f"start {i}", f"end {i}")]
    m = manifest(bench.dir)
    assert m["state"] == "complete" and m["kernels"] == ["packed-distro", "off"] and m["repetitions"] == 2
    assert [b["id"] for b in m["boots"]] == ids
    assert re.fullmatch(r">>> run t: 10 boots, 0 failed, \d+s", r.stderr.splitlines()[-1]), r.stderr


def test_quick_runs_micro_and_stress_with_quick_args(bench):
    r = bench(KERNELS="off", QUICK="1")
    assert r.returncode == 0, r.stderr
    assert [(w, rep, reps) for _, _, _, w, _, rep, reps in progress(r.stderr)] == \
        [("micro", 1, 1), ("stress", 1, 1)]
    micro = workloads.get("micro").settings()
    argv = (bench.dir / "boots/off--micro--m1024--r1/argv").read_text().splitlines()
    assert argv[argv.index("-a") + 1] == " " + micro["QUICK_ARGS"]
    assert manifest(bench.dir)["quick"] is True


def test_bench_jobs_boots_run_in_batches_within_a_workload(bench):
    """Two at a time, and a batch starts when the one before has ended: a
    workload's last boot ends before the next workload's start."""
    r = bench(KERNELS="off baseline packed", WORKLOADS="micro mem", BENCH_JOBS="2", FAKE_DELAY="1")
    assert r.returncode == 0, r.stderr
    batches = [["off--micro--m1024--r1", "baseline--micro--m1024--r1"], ["packed--micro--m1024--r1"],
               ["off--mem--m1024--r1", "baseline--mem--m1024--r1"],
               ["packed--mem--m1024--r1", "off--mem--m8192--r1"],
               ["baseline--mem--m8192--r1", "packed--mem--m8192--r1"]]
    batch_of = {b: i for i, ids in enumerate(batches) for b in ids}
    events = [ln.split() for ln in log(bench.fake)]
    assert sorted(b for what, b in events if what == "start") == sorted(batch_of)
    running, ended, most = set(), set(), 0
    for what, b in events:
        if what == "start":
            earlier = {x for x in batch_of if batch_of[x] < batch_of[b]}
            assert earlier <= ended, (b, events)
            running.add(b)
            most = max(most, len(running))
        else:
            running.remove(b)
            ended.add(b)
    assert most == 2, events


def test_boots_jsonl_has_one_line_per_boot_with_its_fields(bench):
    r = bench(KERNELS="packed-ext16", WORKLOADS="micro-smp")
    assert r.returncode == 0, r.stderr
    lines = (bench.dir / "boots.jsonl").read_text().splitlines()
    assert len(lines) == 1
    b = json.loads(lines[0])
    s = workloads.get("micro-smp").settings()
    assert list(b) == ["seq", "id", "kernel", "variant", "workload", "job", "mem_mb", "smp", "rep",
                       "kernel_args", "cmdline_extra", "status", "wall_s"]
    assert b == {"seq": 1, "id": "packed-ext16--micro-smp--m1024--r1", "kernel": "packed-ext16",
                 "variant": "packed", "workload": "micro-smp", "job": "micro", "mem_mb": 1024, "smp": 2,
                 "rep": 1, "kernel_args": "alloc_tag.page_refs=page_ext16",
                 "cmdline_extra": "alloc_tag.page_refs=page_ext16 " + s["ARGS"], "status": "ok",
                 "wall_s": b["wall_s"]}
    assert lines[0] == json.dumps(b) and isinstance(b["wall_s"], int)
    # what bench/boot/boot was asked for
    d = bench.dir / "boots" / b["id"]
    assert (d / "argv").read_text().splitlines() == [
        "-k", "packed", "-j", "micro", "-o", str(d), "-m", "1024", "-s", "2", "-t", "icount",
        "-w", s["TIMEOUT"], "-a", b["cmdline_extra"]]
    assert not (d / "result.tar").exists()
    # the manifest adds each boot's QEMU command line
    assert manifest(bench.dir)["boots"] == [dict(b, qemu_cmdline=(d / "qemu-cmdline").read_text().strip())]


def test_a_record_escapes_what_json_must():
    k = kernels.Kernel("x", "packed", "6.12", None, (), ('a="b"', "c\\d"), None)
    w = workloads.get("micro")
    rec = run_bench.Boot(3, k, w, 1024, 2, 1, "60", False, "x\ty").record("ok", 12)
    assert json.loads(json.dumps(rec)) == rec
    assert rec["kernel_args"] == 'a="b" c\\d' and rec["cmdline_extra"] == 'a="b" c\\d x\ty'
    assert rec["id"] == "x--micro--m1024--r2" and rec["job"] == "micro"


def test_failed_boots_are_recorded_and_the_run_goes_on(bench, tmp_path):
    # the peer's kernels count as built when their files are there
    for v in ("up",):
        out = bench.build / "out" / v
        (out / "arch/x86/boot").mkdir(parents=True)
        (out / "arch/x86/boot/bzImage").write_bytes(b"k")
        (out / "extra.cpio.gz").write_bytes(b"x")
    r = bench(KERNELS="off baseline packed packed-ext16 up-compressed up-pageext", WORKLOADS="micro",
              PEER="1", FAKE_BOOT="baseline=timeout packed=job-failed off=no-status up=no-sysctl")
    assert r.returncode == 0, r.stderr
    status = {b["kernel"]: b["status"] for b in manifest(bench.dir)["boots"]}
    assert status == {"off": "boot-error", "baseline": "timeout", "packed": "job-failed",
                      "packed-ext16": "job-failed", "up-compressed": "compression-off", "up-pageext": "ok"}
    err = r.stderr.splitlines()
    assert "    [2/6] failed: timeout (see results/t/boots/baseline--micro--m1024--r1/console.log)" in err
    assert re.fullmatch(r">>> run t: 6 boots, 5 failed, \d+s", err[-2]), err
    assert err[-1] == "warning: 5 boots failed; they are recorded in results/t/boots.jsonl"


def test_micro_boots_keep_a_function_profile_instead_of_their_pcs(bench):
    from tests.test_insn_profile import ALLOC_BENCH, CACHESIM, PCS, SYSTEM_MAP
    src = bench.fake / "pcs-boot"
    (src / "result").mkdir(parents=True)
    (src / "result" / "alloc_bench.csv").write_text(ALLOC_BENCH)
    (src / "cachesim.csv").write_text(CACHESIM)
    (src / "pcs.csv").write_text(PCS)
    (bench.build / "out" / "packed").mkdir(parents=True)
    (bench.build / "out" / "packed" / "System.map").write_text(SYSTEM_MAP)
    r = bench(KERNELS="off packed", WORKLOADS="micro", CACHESIM="1", CACHESIM_ARGS="l1=32K/8")
    assert r.returncode == 0, r.stderr
    d = bench.dir / "boots" / "packed--micro--m1024--r1"
    assert (d / "cachesim-args").read_text() == f"l1=32K/8,pcs={d}/pcs.csv\n"
    assert not (d / "pcs.csv").exists()
    assert (d / "insn-profile.csv").read_text() == (
        "op,function,instructions\nksite_pages_o0_alloc,__free_pages,50.00\n"
        "pages_o0_alloc,__free_pages,20.00\npages_o0_alloc,___free_pages,12.00\npages_o0_alloc,[module],8.00\n")
    # no System.map for off: a warning, and neither a profile nor the PCs are left
    o = bench.dir / "boots" / "off--micro--m1024--r1"
    assert not (o / "pcs.csv").exists() and not (o / "insn-profile.csv").exists()
    assert (f"    [1/2] warning: no insn-profile.csv: System.map {bench.build}/out/off/System.map: "
            "No such file or directory") in r.stderr.splitlines()
    # without the cache model no PCs are asked for
    r = bench(KERNELS="packed", WORKLOADS="micro", CACHESIM="0", RUN_ID="t0")
    assert r.returncode == 0, r.stderr
    d = bench.dir.parent / "t0" / "boots" / "packed--micro--m1024--r1"
    assert (d / "cachesim-args").read_text() == "\n" and not (d / "insn-profile.csv").exists()


def test_every_boot_failed_is_an_error(bench):
    r = bench(KERNELS="baseline", WORKLOADS="micro", FAKE_BOOT="baseline=qemu-failed")
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1] == ("error: every boot of run t failed "
                                         "(see results/t/boots/*/console.log and qemu.log)")
    assert manifest(bench.dir)["state"] == "complete"


def test_run_files_are_written_before_the_first_boot(bench, tmp_path):
    id_file = tmp_path / "run-id"
    (bench.build / "peer").mkdir(parents=True)
    (bench.build / "peer/peer-info.json").write_text('{"package": "linux-source-7.3"}\n')
    r = bench(KERNELS="off up-off", WORKLOADS="micro", PEER="1", RUN_ID_FILE=str(id_file))
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[0] == ("warning: upstream peer kernels not built, left out: up-off "
                                        "(make kernels PEER=1 says why)")
    assert id_file.read_text() == "t\n"
    run = bench.dir
    assert (run / "peer-missing.txt").read_text() == "upstream peer kernels not built: up-off\n"
    assert json.loads((run / "peer-info.json").read_text()) == {"package": "linux-source-7.3"}
    assert re.fullmatch(r"git_revision=\S+\ngit_dirty=[01]\n", (run / "start.txt").read_text())
    table = subprocess.run([sys.executable, "-m", "bench.kernels", "json"], cwd=REPO, capture_output=True,
                           text=True, check=True).stdout
    assert (run / "kernels.json").read_text() == table
    # nothing built: no configs, no static counts, and a warning for each
    assert "warning: kernel off has no .config to archive (not built)" in r.stderr
    assert "warning: bench/fastpath-insns failed: " in r.stderr
    assert not (run / "fastpath-insns.csv").exists() and (run / "fastpath-insns.err").exists()
    m = manifest(run)
    assert m["kernels"] == ["off"] and m["git_recorded"] == "at run start"
    assert m["kernel_table"] == json.loads(table) and m["peer"] == {"package": "linux-source-7.3"}


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_stops_the_boots_and_leaves_an_interrupted_run(bench, sig):
    p = bench(wait=False, KERNELS="off packed", WORKLOADS="micro mem", FAKE_BOOT="packed=hang")
    pids = bench.fake / "hang.pids"
    deadline = time.time() + 60
    while not pids.exists() and time.time() < deadline and p.poll() is None:
        time.sleep(0.1)
    assert pids.exists(), p.communicate()
    hung = [int(x) for x in pids.read_text().split()]
    try:
        time.sleep(0.3)
        p.send_signal(sig)
        out, err = p.communicate(timeout=60)
        # the hung boot and what it started in a process group of its own are gone
        deadline = time.time() + 10
        while any(map(_alive, hung)) and time.time() < deadline:
            time.sleep(0.1)
        assert not any(map(_alive, hung))
    finally:
        for pid in filter(_alive, hung):
            os.kill(pid, signal.SIGKILL)
    assert p.returncode == 130, err
    assert "interrupted: partial run in results/t" in err.splitlines()
    m = manifest(bench.dir)
    assert m["state"] == "interrupted"
    assert [b["id"] for b in m["boots"]] == ["off--micro--m1024--r1"]
    assert "start packed--micro--m1024--r1" in log(bench.fake)
    assert not any(ln.startswith("start off--mem") for ln in log(bench.fake))


def test_run_bench_is_the_python_module():
    """bench/run-bench (make bench, README) runs bench/run_bench.py from any
    directory, with the caller's directory kept for relative paths."""
    assert "-m bench.run_bench" in (REPO / "bench/run-bench").read_text()
    r = subprocess.run([str(REPO / "bench/run-bench")], cwd="/", env=dict(os.environ, R="x"),
                       capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr == "error: R='x' is not a positive number of repetitions\n"
