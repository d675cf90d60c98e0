"""The benchmark run loop (bench/run-bench runs it): boot every kernel of
bench/kernels for every workload of bench/workloads, R times, interleaved
(k1 k2 k3 ... k1 k2 k3 ...), and leave the raw outputs in results/<run-id>/.

    python3 -m bench.run_bench [--boot SCRIPT]

Environment: R (repetitions, default 2), QUICK=1 (short smoke run: QUICK_R
repetitions, default 1, of micro and stress unless WORKLOADS names others),
WORKLOADS (names, default all), KERNELS (labels, default all), TIMING (auto,
icount, kvm or tcg), RUN_ID (default the UTC date and time), RUN_ID_FILE (a
file to write the run id into), RESULTS_DIR (default results/), PEER (0:
leave the upstream peer out), CACHESIM (0: no cache model on icount boots),
BENCH_JOBS (boots at a time, default: the number of CPUs; each TCG guest uses
one host CPU, and under icount a boot's instruction counts do not depend on
what else the host runs).  Bad input is one "error: ..." line before
anything boots.  A failed boot is recorded as a failed sample and the run
goes on; Ctrl-C (or SIGTERM) stops the boots under way and still leaves a
usable partial run (manifest state "interrupted").

--boot SCRIPT boots with SCRIPT, which takes bench/boot/boot's options, instead
of bench/boot/boot: the tests' stand-in.

The run's files: start.txt (the checkout's revision at the start),
kernels.json (bench/kernels as parsed then), configs/ and manifest.json
(bench/manifest.py), fastpath-insns.csv, peer-missing.txt and peer-info.json
when there is a peer to speak of, boots.jsonl (one JSON line per boot, in
the order they end) and boots/<id>/ (what bench/boot/boot left)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from bench import insn_profile
from bench import kernels as ktable
from bench import manifest
from bench import workloads as wl_registry

REPO = ktable.REPO
QUICK_WORKLOADS = ["micro", "stress"]
TIMINGS = ("auto", "icount", "kvm", "tcg")
# The files whose changes change what a run measures (start.txt's git_dirty).
MEASURED = ("bench", "analysis", "configs", "patches", "Makefile")
# Upstream silently switches profiling off when its compressed tags do not fit
# in the page flags: a boot asking for it is checked for it.
COMPRESSED = "sysctl.vm.mem_profiling=1,compressed"
_POSITIVE = re.compile(r"[0-9]*[1-9][0-9]*\Z")
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")


class BenchError(Exception):
    """Bad input, or a run that failed as a whole; str() is one line."""


class Interrupted(Exception):
    """SIGINT or SIGTERM."""


@dataclass(frozen=True)
class Options:
    reps: int
    quick: bool
    timing: str                       # "auto" until probed
    cachesim: str
    jobs: int
    table: ktable.Table
    kernels: list[ktable.Kernel]      # KERNELS' (the table's) order, the peer's left out if not built
    peer_missing: list[str]
    workloads: list[wl_registry.Workload]
    settings: dict[str, dict[str, str]]  # each workload's .conf, checked
    run_id: str
    run: Path
    run_id_file: str
    build_dir: Path


@dataclass(frozen=True)
class Boot:
    """One boot of the run, in its order."""
    seq: int
    kernel: ktable.Kernel
    workload: wl_registry.Workload
    mem: int
    rep: int
    smp: int
    timeout: str
    tools: bool
    args: str                         # the workload's ARGS (QUICK_ARGS)

    @property
    def id(self) -> str:
        return f"{self.kernel.label}--{self.workload.name}--m{self.mem}--r{self.rep}"

    @property
    def kernel_args(self) -> str:
        return " ".join(self.kernel.args)

    @property
    def cmdline_extra(self) -> str:
        return f"{self.kernel_args} {self.args}"

    def record(self, status: str, wall_s: int) -> dict:
        """Its line in boots.jsonl.  "job" is the guest job it ran
        (bench/workloads/<job>/), which the analysis reads its files with."""
        k, w = self.kernel, self.workload
        return {"seq": self.seq, "id": self.id, "kernel": k.label, "variant": k.variant,
                "workload": w.name, "job": w.job, "mem_mb": self.mem, "smp": self.smp,
                "rep": self.rep, "kernel_args": self.kernel_args,
                "cmdline_extra": self.cmdline_extra, "status": status, "wall_s": wall_s}


def _count(env: Mapping[str, str], name: str, default: str, what: str) -> int:
    v = env.get(name) or default
    if not _POSITIVE.match(v):
        raise BenchError(f"{name}='{v}' is not a positive number of {what}")
    return int(v)


def _choice(env: Mapping[str, str], name: str, default: str, allowed: tuple[str, ...]) -> str:
    v = env.get(name) or default
    if v not in allowed:
        raise BenchError(f"{name}='{v}' must be {', '.join(allowed[:-1])} or {allowed[-1]}")
    return v


def _names(env: Mapping[str, str], name: str, default: list[str]) -> list[str]:
    names = (env.get(name) or "").split() or default
    twice = sorted({x for x in names if names.count(x) > 1})
    if twice:
        raise BenchError(f"{name} names {', '.join(twice)} more than once")
    return names


def settings(w: wl_registry.Workload) -> dict[str, str]:
    """A workload's .conf, with every setting present and well formed."""
    s = w.settings()
    missing = [x for x in wl_registry.SETTINGS if x not in s]
    if missing:
        raise BenchError(f"{w.conf}: {', '.join(missing)} not set")
    mem = s["MEM"].split()
    for name, ok in (("TOOLS", s["TOOLS"] in ("0", "1")),
                     ("MEM", bool(mem) and all(_POSITIVE.match(m) for m in mem)),
                     ("SMP", _POSITIVE.match(s["SMP"])), ("TIMEOUT", _POSITIVE.match(s["TIMEOUT"]))):
        if not ok:
            raise BenchError(f"{w.conf}: {name}='{s[name]}' is not valid "
                             "(TOOLS 0 or 1; MEM, SMP, TIMEOUT positive numbers)")
    return s


def options(env: Mapping[str, str]) -> Options:
    """The run's settings from env, all checked: BenchError for bad input."""
    reps = _count(env, "R", "2", "repetitions")
    quick = _choice(env, "QUICK", "0", ("0", "1")) == "1"
    if quick:
        reps = _count(env, "QUICK_R", "1", "repetitions")
    timing = _choice(env, "TIMING", "auto", TIMINGS)
    peer = _choice(env, "PEER", "1", ("0", "1"))
    cachesim = _choice(env, "CACHESIM", "1", ("0", "1"))
    jobs = _count(env, "BENCH_JOBS", str(len(os.sched_getaffinity(0))), "parallel boots")
    build_dir = Path(env["BUILD_DIR"]) if env.get("BUILD_DIR") else manifest.build_dir()
    try:
        all_workloads = wl_registry.workloads()
        names = _names(env, "WORKLOADS", QUICK_WORKLOADS if quick else list(all_workloads))
        workloads = [wl_registry.get(x) for x in names]
        conf = {w.name: settings(w) for w in workloads}
        # bench/kernels names the labels, their order and roles.
        table = ktable.read()
        labels = _names(env, "KERNELS", table.labels(bench_only=True))
        chosen = [table.get(x) for x in labels]
    except (wl_registry.WorkloadError, ktable.KernelsError) as e:
        raise BenchError(str(e)) from None
    # The upstream peer's kernels: left out with PEER=0, or (with a warning
    # the report repeats) when they could not be fetched or built.
    kernels, peer_missing = [], []
    for k in chosen:
        if k.peer:
            if peer == "0":
                continue
            out = build_dir / "out" / k.variant
            if not (out / "arch/x86/boot/bzImage").is_file() or not (out / "extra.cpio.gz").is_file():
                peer_missing.append(k.label)
                continue
        kernels.append(k)
    if not any(k.runs(w.name) for k in kernels for w in workloads):
        raise BenchError(f"nothing to boot: no kernel of {' '.join(k.label for k in chosen)}"
                         f"{' (peer left out)' if any(k.peer for k in chosen) else ''}"
                         f" runs any of the workloads {' '.join(names)}")
    run_id = env.get("RUN_ID") or time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + ("-quick" if quick else "")
    if not _RUN_ID.match(run_id):
        raise BenchError(f"RUN_ID='{run_id}' is not a name (letters, digits, '.', '_', '-')")
    run = Path(env.get("RESULTS_DIR") or REPO / "results") / run_id
    if run.exists():
        raise BenchError(f"{run} already exists")
    return Options(reps, quick, timing, cachesim, jobs, table, kernels, peer_missing, workloads, conf,
                   run_id, run, env.get("RUN_ID_FILE") or "", build_dir)


def plan(o: Options) -> list[Boot]:
    """Every boot, in the interleaved order: by repetition, workload, memory
    size, then kernel (KERNELS' order, by default the table's), so neighbours
    are different kernels on the same workload."""
    boots: list[Boot] = []
    for rep in range(1, o.reps + 1):
        for w in o.workloads:
            s = o.settings[w.name]
            for mem in map(int, s["MEM"].split()):
                for k in o.kernels:
                    if k.runs(w.name):
                        boots.append(Boot(len(boots) + 1, k, w, mem, rep, int(s["SMP"]), s["TIMEOUT"],
                                          s["TOOLS"] == "1", s["QUICK_ARGS" if o.quick else "ARGS"]))
    return boots


def _read(p: Path) -> str | None:
    """A small file's text without its trailing newlines (as $(cat p)), None if unreadable."""
    try:
        return p.read_text(errors="replace").rstrip("\n")
    except OSError:
        return None


def profiling_mode_status(kernel_args: str, result: Path) -> str:
    """"ok", or why the boot did not run the profiling mode its command line
    asks for."""
    if COMPRESSED in kernel_args and (
            "Memory allocation profiling is disabled" in (_read(result / "dmesg.txt") or "")
            or _read(result / "sysctl-mem_profiling_compressed") != "1"
            or _read(result / "sysctl-mem_profiling") != "1"):
        return "compression-off"
    return "ok"


def boot_status(rc: int, d: Path, kernel_args: str) -> str:
    """A boot's status from bench/boot/boot's exit status and what it left in d."""
    status = "ok" if rc == 0 else (_read(d / "status") or "boot-error")
    if status == "ok" and _read(d / "result" / "job.rc") != "0":
        status = "job-failed"
    if status == "ok":
        status = profiling_mode_status(kernel_args, d / "result")
    return status


def _descendants(root: int) -> list[int]:
    """Every process below root (bench/boot/boot runs QEMU under timeout(1), which
    puts it in a process group of its own)."""
    children: dict[int, list[int]] = {}
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            ppid = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        kids = children.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@dataclass
class Running:
    boot: Boot
    proc: subprocess.Popen
    t0: int


class Run:
    def __init__(self, o: Options, boots: list[Boot], boot_script: Path):
        self.o, self.boots, self.boot_script = o, boots, boot_script
        self.timing = o.timing
        self.start = int(time.time())
        self.running: list[Running] = []
        self.statuses: list[str] = []

    def elapsed(self) -> int:
        return int(time.time()) - self.start

    def finish(self, state: str) -> None:
        """manifest.json as the run stands, in state running, interrupted or complete."""
        try:
            manifest.write(self.o.run, self.start, self.timing, self.o.reps, self.o.quick, state,
                           [k.label for k in self.o.kernels])
        except Exception as e:  # the run's data is still on disk: say so and go on
            _say(f"error: writing {self.o.run}/manifest.json failed: {e}")

    def prepare(self) -> None:
        """Everything before the first boot: what is being measured is fixed
        here, not by the state of the checkout when the run ends."""
        o = self.o
        if o.peer_missing:
            _say(f"warning: upstream peer kernels not built, left out: {' '.join(o.peer_missing)} "
                 "(make kernels PEER=1 says why)")
        if self.timing == "auto":
            p = subprocess.run([str(REPO / "bench/boot/probe-accel")], stdout=subprocess.PIPE, text=True)
            self.timing = p.stdout.strip()
            if p.returncode != 0 or self.timing not in TIMINGS[1:]:
                raise BenchError(f"bench/boot/probe-accel failed (said {self.timing!r})")
        try:
            o.run.mkdir(parents=True)
            (o.run / "boots").mkdir()
        except OSError as e:
            raise BenchError(f"cannot create {o.run}/boots: {e.strerror}") from None
        # For a caller that goes on with the run (make bench-all plots it).
        if o.run_id_file:
            Path(o.run_id_file).write_text(o.run_id + "\n")
        if o.peer_missing:
            (o.run / "peer-missing.txt").write_text(
                f"upstream peer kernels not built: {' '.join(o.peer_missing)}\n")
        (o.run / "boots.jsonl").write_text("")
        self.start = int(time.time())
        rev = manifest.cmd_out("git", "-C", str(REPO), "rev-parse", "HEAD") or "unknown"
        dirty = manifest.cmd_out("git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no",
                                 "--", *MEASURED)
        (o.run / "start.txt").write_text(f"git_revision={rev}\ngit_dirty={int(bool(dirty))}\n")
        peer_info = o.build_dir / "peer" / "peer-info.json"
        if peer_info.is_file():
            shutil.copyfile(peer_info, o.run / "peer-info.json")
        # The kernel table as parsed now: the manifest carries it
        # ("kernel_table") and the analysis takes every role from it.
        (o.run / "kernels.json").write_text(o.table.dumps() + "\n")
        # Each kernel's .config (its sha256 goes into the manifest): which
        # options two kernels differ in, from the run alone.
        variants = list(dict.fromkeys(k.variant for k in o.kernels))
        manifest.archive(o.run, variants)
        # A first manifest.json (state "running", no boots yet), rewritten
        # when the run ends or is interrupted.
        self.finish("running")
        # What the hooks add to the hot functions, statically, before any boot.
        csv, err = o.run / "fastpath-insns.csv", o.run / "fastpath-insns.err"
        with csv.open("w") as out, err.open("w") as errf:
            rc = subprocess.run([str(REPO / "bench/fastpath-insns"), *variants],
                                stdout=out, stderr=errf).returncode
        if rc != 0:
            _say(f"warning: bench/fastpath-insns failed: {(err.read_text().splitlines() or [''])[0]}")
            csv.unlink()
        if err.stat().st_size == 0:
            err.unlink()

    def launch(self, b: Boot) -> None:
        o = self.o
        el = self.elapsed()
        eta = str(el * (len(self.boots) - b.seq + 1) // (b.seq - 1)) if b.seq > 1 else "?"
        _say(f">>> [{b.seq}/{len(self.boots)}] kernel {b.kernel.label}, workload {b.workload.name}, "
             f"{b.mem} MiB, run {b.rep} of {o.reps} (elapsed {el}s, ETA {eta}s)")
        cmd = [str(self.boot_script), "-k", b.kernel.variant, "-j", b.workload.job,
               "-o", str(o.run / "boots" / b.id), "-m", str(b.mem), "-s", str(b.smp),
               "-t", self.timing, "-w", b.timeout, *(["-T"] if b.tools else []), "-a", b.cmdline_extra]
        t0 = int(time.time())
        env = None
        if self.profiles(b):
            # Where the instructions of each op go: the plugin's PCs per window,
            # turned into insn-profile.csv when the boot ends.
            pcs = f"pcs={o.run / 'boots' / b.id / 'pcs.csv'}"
            extra = os.environ.get("CACHESIM_ARGS", "")
            env = dict(os.environ, CACHESIM_ARGS=f"{extra},{pcs}" if extra else pcs)
        # A session of its own: Ctrl-C reaches the run loop only, which stops the boots.
        proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL, start_new_session=True, env=env)
        self.running.append(Running(b, proc, t0))

    def profiles(self, b: Boot) -> bool:
        """Whether boot b records its PCs: micro boots with the cache model."""
        return b.workload.job == "micro" and self.timing == "icount" and self.o.cachesim == "1"

    def ended(self, r: Running) -> None:
        """A boot's status and its line in boots.jsonl (one short append)."""
        b, d = r.boot, self.o.run / "boots" / r.boot.id
        status = boot_status(r.proc.returncode, d, b.kernel_args)
        if status != "ok":
            _say(f"    [{b.seq}/{len(self.boots)}] failed: {status} "
                 f"(see results/{self.o.run_id}/boots/{b.id}/console.log)")
        (d / "result.tar").unlink(missing_ok=True)
        pcs = d / "pcs.csv"
        if status == "ok" and pcs.exists():
            smap = self.o.build_dir / "out" / b.kernel.variant / "System.map"
            try:
                insn_profile.write_table(d, smap, d / "insn-profile.csv")
            except insn_profile.InputError as e:
                _say(f"    [{b.seq}/{len(self.boots)}] warning: no insn-profile.csv: {e}")
        pcs.unlink(missing_ok=True)
        with (self.o.run / "boots.jsonl").open("a") as f:
            f.write(json.dumps(b.record(status, int(time.time()) - r.t0)) + "\n")
        self.statuses.append(status)

    def wait_all(self) -> None:
        while self.running:
            for r in [r for r in self.running if r.proc.poll() is not None]:
                self.running.remove(r)
                self.ended(r)
            if self.running:
                time.sleep(0.2)

    def stop(self) -> None:
        """End the boots under way and everything they started."""
        for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
            for pid in _descendants(os.getpid()):
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
            deadline = time.time() + grace
            for r in self.running:
                try:
                    r.proc.wait(max(0.0, deadline - time.time()))
                except subprocess.TimeoutExpired:
                    pass
            if all(r.proc.poll() is not None for r in self.running):
                break

    def boot_all(self) -> None:
        """BENCH_JOBS boots at a time, in the plan's order.  A batch takes
        about as long as its longest boot, and a workload's boots end before
        the next workload's start."""
        for i, b in enumerate(self.boots):
            if i and (b.rep, b.workload) != (self.boots[i - 1].rep, self.boots[i - 1].workload):
                self.wait_all()
            self.launch(b)
            if len(self.running) >= self.o.jobs:
                self.wait_all()
        self.wait_all()

    def go(self) -> int:
        o = self.o
        try:
            self.prepare()
            self.boot_all()
        except Interrupted:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            self.stop()
            if not (o.run / "boots.jsonl").exists():
                _say("interrupted before the first boot")
                return 130
            _say(f"interrupted: partial run in results/{o.run_id}")
            self.finish("interrupted")
            return 130
        n, failed = len(self.boots), sum(s != "ok" for s in self.statuses)
        self.finish("complete")
        _say(f">>> run {o.run_id}: {n} boots, {failed} failed, {self.elapsed()}s")
        if failed:
            _say(f"warning: {failed} boots failed; they are recorded in results/{o.run_id}/boots.jsonl")
        if failed == n:
            raise BenchError(f"every boot of run {o.run_id} failed "
                             f"(see results/{o.run_id}/boots/*/console.log and qemu.log)")
        return 0


def _interrupt(signum, frame):
    raise Interrupted()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench/run-bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--boot", type=Path, default=REPO / "bench/boot/boot",
                    help="what boots a kernel, with bench/boot/boot's options (default bench/boot/boot)")
    a = ap.parse_args(argv)
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        o = options(os.environ)
        boots = plan(o)
        # What the boots and manifest.py read (bench/lib.sh exported them).
        os.environ.update(BUILD_DIR=str(o.build_dir), CACHESIM=o.cachesim)
        return Run(o, boots, a.boot).go()
    except BenchError as e:
        _say(f"error: {e}")
        return 1
    except Interrupted:
        _say("interrupted before the first boot")
        return 130


if __name__ == "__main__":
    sys.exit(main())
