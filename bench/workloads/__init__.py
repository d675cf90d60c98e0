"""The benchmark workloads: one folder per guest job, and the registry that
finds them.

    bench/workloads/<job>/job           the guest job: runs in the guest as
                                        /jobs/<job>, writes its files to $OUT
    bench/workloads/<job>/<name>.conf   a workload that runs this job: its
                                        settings (below); one folder may hold
                                        several (micro.conf, micro-smp.conf)
    bench/workloads/<job>/parse.py      what the job's files mean: their
                                        parsers, load() and figures() (below)

A workload's name is its .conf file's name, the job it runs is its folder:
bench/run-bench (bench/run_bench.py) boots every .conf and records both in
boots.jsonl.  Settings, one shell assignment a line (NAME=value or
NAME="value"; Workload.settings() reads them):

    TOOLS        1: the boot needs the tools initramfs (stress-ng, fio, perf)
    MEM          guest RAM sizes in MiB, one boot per size
    SMP          vCPUs
    ARGS         kernel command line the job reads its parameters from
    QUICK_ARGS   the same for make bench QUICK=1
    TIMEOUT      seconds before a boot counts as hung

and one that may be left out (default 0):

    OPT_IN       1: only the kernel labels whose "@" list names it boot it
                 (a workload that needs a feature most kernels lack, such
                 as memcg); 0: every label without an "@" list boots it

A job's parse.py is imported by analysis/load.py and analysis/summarize.py
through unit(job); it needs nothing from analysis/ but the two objects they
hand it:

    load(files, warnings) -> data or None
        Read the files the job left in the boot's result/ (files.text(name),
        files.parsed(name, parser), files.exists(name), files.path(name);
        files.boot_dir() for host-side files next to result/, such as the
        cache model's cachesim.csv).  Raise files.error(name, why) for bad
        input; append to warnings and return None when the boot has no
        figures (e.g. the tool it ran failed).  What it returns is the
        boot's BootData.data.
    figures(c, d)
        Add the boot's summary rows: c.add(d, workload, metric,
        MetricDef(unit, timing, rel, note), value), with c.run (the run),
        c.warnings, c.latency_unit(), c.time_unit(base), c.rate_unit(what)
        and c.perf(d, workload, prefix, counters) for perf stat counters.
        Called only for boots whose load() returned data.

Guest jobs that only tests boot (smoke, systest, ...) are in
bench/guest/jobs/, not here."""

from __future__ import annotations

import importlib
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

DIR = Path(__file__).resolve().parent
SETTINGS = ("TOOLS", "MEM", "SMP", "ARGS", "QUICK_ARGS", "TIMEOUT")
OPTIONAL = {"OPT_IN": "0"}
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
JOB_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")  # also a Python package name
_ASSIGN = re.compile(r"([A-Z_]+)=(.*)\Z")


class WorkloadError(Exception):
    """A malformed workload folder; str() is one line naming the file."""


@dataclass(frozen=True)
class MetricDef:
    """What a summary row is (analysis/summarize.py's docstring says more)."""
    unit: str
    timing: bool = False               # a time measurement (tcg: relative only)
    rel: tuple[str, ...] = ()          # derived rows: overhead, rel, delta, delta_nopf, vs_baseline
    note: str = ""


@dataclass(frozen=True)
class Workload:
    name: str    # the .conf file's name: the workload in results and reports
    job: str     # the folder's name: the guest job it runs
    conf: Path

    @property
    def opt_in(self) -> bool:
        """Booted only by labels whose "@" list names it (OPT_IN=1)."""
        v = self.settings().get("OPT_IN", OPTIONAL["OPT_IN"])
        if v not in ("0", "1"):
            raise WorkloadError(f"{self.conf}: OPT_IN={v!r} is not 0 or 1")
        return v == "1"

    @property
    def job_script(self) -> Path:
        return self.conf.parent / "job"

    def settings(self) -> dict[str, str]:
        """The .conf file's assignments, as the shell sees them."""
        out: dict[str, str] = {}
        for n, ln in enumerate(self.conf.read_text().splitlines(), 1):
            ln = ln.strip()
            if not ln or ln.startswith("#"):
                continue
            m = _ASSIGN.match(ln)
            try:
                words = shlex.split(m.group(2), comments=True) if m else None
            except ValueError:
                words = None
            if words is None or len(words) > 1:
                raise WorkloadError(f"{self.conf}:{n}: expected NAME=value or NAME=\"value\", got {ln!r}")
            out[m.group(1)] = words[0] if words else ""
        return out


def workloads() -> dict[str, Workload]:
    """Every workload, by name, in the order run-bench runs them (sorted paths)."""
    out: dict[str, Workload] = {}
    for conf in sorted(DIR.glob("*/*.conf")):
        w = Workload(conf.stem, conf.parent.name, conf)
        if w.name in out:
            raise WorkloadError(f"{conf}: workload '{w.name}' is also {out[w.name].conf}")
        out[w.name] = w
    return out


def names() -> list[str]:
    return list(workloads())


def get(name: str) -> Workload:
    w = workloads().get(name)
    if w is None:
        raise WorkloadError(f"unknown workload '{name}' (see bench/workloads/)")
    return w


def jobs() -> list[str]:
    """The guest jobs with a folder here (whether or not a .conf runs them)."""
    return sorted(p.parent.name for p in DIR.glob("*/job"))


def unit(job: str) -> ModuleType | None:
    """The parse.py of a job's folder (load() and figures()), None for a job
    without one (a test's job, or a name from an unknown run)."""
    if not JOB_NAME.match(job) or not (DIR / job / "parse.py").is_file():
        return None
    return importlib.import_module(f"{__name__}.{job}.parse")
