"""Load and validate one benchmark run directory (results/<run-id>/).

Every problem with the input becomes an AnalysisError whose message is one
line naming the file at fault.  Failed boots are not errors: they are kept
in Run.failed and reported."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TypeVar

from bench import kernels as ktable
from bench import parse
from bench import workloads

# Which kernel is measured against which, and which plays which role, comes
# from the run's own copy of bench/kernels (manifest "kernel_table"), never
# from constants here: see kernel_table() and Run.ref().
TIMINGS = ("icount", "kvm", "tcg")

T = TypeVar("T")


class AnalysisError(Exception):
    """Bad or unusable input; str() is a one-line message naming the file."""


def cli(body: Callable[[], int]) -> int:
    """Run a command-line entry point: bad input and unreadable files become
    one "error: ..." line on stderr and exit status 1, never a traceback."""
    try:
        return body()
    except AnalysisError as e:
        print(f"error: {e}", file=sys.stderr)
    except OSError as e:
        print(f"error: {e.filename or ''}: {e.strerror}", file=sys.stderr)
    return 1


@dataclass(frozen=True)
class Boot:
    id: str
    kernel: str
    variant: str
    workload: str
    mem_mb: int
    smp: int
    rep: int
    status: str
    cmdline_extra: str = ""
    wall_s: int = 0
    # The kernel label's own command line (bench/kernels), without the
    # workload's; None in runs recorded before boots.jsonl had it.
    kernel_args: str | None = None
    # The guest job it ran (bench/workloads/<job>/); None in runs recorded
    # before boots.jsonl had it (e.g. 20261204-202248).
    job: str | None = None


@dataclass
class BootData:
    boot: Boot
    # What every boot leaves behind.
    report: parse.PageRefsReport | None
    meminfo_boot: dict[str, int]
    allocinfo: list[parse.AllocinfoLine] | None = None
    page_ext_allocated: int | None = None  # "allocated N bytes of page_ext"
    # The guest job it ran, and what that job's load() read from its files
    # (bench/workloads/<job>/parse.py); None: a job without figures.
    job: str | None = None
    data: Any = None


@dataclass
class Run:
    path: Path
    manifest: dict
    run_id: str
    state: str
    timing: str
    unit: str
    allow_tcg: bool
    kernels: list[str]
    boots: list[BootData]
    failed: list[Boot]
    warnings: list[str]

    table: ktable.Table = field(default_factory=lambda: ktable.Table([]))

    def ref(self, kernel: str) -> str:
        """The kernel kernel's overheads are measured against (itself for a
        reference): bench/kernels column ref."""
        return self.table.get(kernel).reference

    def counterpart(self, kernel: str, role: str) -> str | None:
        """The kernel of kernel's own group that plays role (bench/kernels
        roles, e.g. "nopf"), if the table has one."""
        return self.table.counterpart(kernel, role)

    def is_peer(self, kernel: str) -> bool:
        """An upstream peer kernel (role peer): compared with its own group only."""
        return self.table.get(kernel).peer

    @property
    def main_reference(self) -> str:
        """The reference of the project's own group (the table's first line)."""
        return self.table.kernels[0].reference

    def groups(self, *which: str) -> list[str]:
        """Groups in the order asked: "main" (the project's own), "peer"
        (the upstream peer's), "other" (the rest, in table order)."""
        main, peer = self.table.main_group, self.table.peer_group
        out: list[str] = []
        for w in which:
            out += {"main": [main], "peer": [peer] if peer else [],
                    "other": [g for g in self.table.groups() if g not in (main, peer)]}[w]
        return out

    def pick(self, roles: tuple[str, ...], groups: tuple[str, ...] = ("main",)) -> list[str]:
        """The run's kernels playing roles, group by group (groups() names),
        within a group in the order of roles."""
        out = []
        for g in self.groups(*groups):
            for r in roles:
                k = self.table.role(r, g)
                if k is not None and k in self.kernels and k not in out:
                    out.append(k)
        return out

    def role(self, role: str, group: str = "main") -> str | None:
        """The run's kernel playing role in the main (or peer) group."""
        k = next(iter(self.pick((role,), (group,))), None)
        return k

    @property
    def relative_only(self) -> bool:
        """Plain TCG wall clock: only ratios between kernels mean anything."""
        return self.timing == "tcg"

    @property
    def deterministic(self) -> bool:
        """icount replays the same instruction stream, with several vCPUs too
        (QEMU runs them round-robin in one thread under icount): boots of one
        kernel are expected to agree, so a spread says more than a bootstrap
        CI.  An expectation the summary checks per metric, not a fact."""
        return self.timing == "icount"


# --- loading ----------------------------------------------------------------

class BootFiles:
    """Reads one boot's result files with uniform error messages: what a
    workload's load() (bench/workloads/<job>/parse.py) reads its files with."""

    def __init__(self, result: Path, boot_id: str):
        self.result = result
        self.id = boot_id

    def boot_dir(self) -> BootFiles:
        """The boot's own directory, next to result/ (host-side files)."""
        return BootFiles(self.result.parent, self.id)

    def error(self, name: str, why: str) -> AnalysisError:
        """The error to raise for bad input in file name."""
        return AnalysisError(f"{self.path(name)}: {why}")

    def path(self, name: str) -> Path:
        return self.result / name

    def exists(self, name: str) -> bool:
        return self.path(name).is_file()

    def text(self, name: str) -> str:
        p = self.path(name)
        try:
            return p.read_text(errors="replace")
        except FileNotFoundError:
            raise AnalysisError(f"{p}: missing result file for ok boot {self.id}") from None
        except OSError as e:
            raise AnalysisError(f"{p}: unreadable: {e.strerror}") from None

    def parsed(self, name: str, fn: Callable[[str], T]) -> T:
        try:
            return fn(self.text(name))
        except parse.ParseError as e:
            raise AnalysisError(f"{self.path(name)}: {e}") from None


def _load_boot(run: Path, b: Boot, warnings: list[str]) -> BootData | None:
    r = BootFiles(run / "boots" / b.id / "result", b.id)
    if not r.result.is_dir():
        raise AnalysisError(f"{r.result}: missing result directory for ok boot {b.id}")
    rc = r.text("job.rc").strip()
    if rc != "0":
        warnings.append(f"boot {b.id}: status ok but job.rc is {rc!r}; treated as failed")
        return None
    d = BootData(boot=b, report=r.parsed("dmesg.txt", parse.page_refs_report),
                 meminfo_boot=r.parsed("meminfo-boot.txt", parse.meminfo),
                 page_ext_allocated=r.parsed("dmesg.txt", parse.page_ext_allocated))
    if r.exists("allocinfo.txt"):  # only where /proc/allocinfo exists
        d.allocinfo = r.parsed("allocinfo.txt", parse.allocinfo)
    d.job = b.job or _job_from_cmdline(r)
    unit = workloads.unit(d.job) if d.job else None
    if unit is None:
        warnings.append(f"boot {b.id}: unknown workload {b.workload!r}: only its boot files are read")
    else:
        d.data = unit.load(r, warnings)
    return d


def _job_from_cmdline(r: BootFiles) -> str | None:
    """The guest job of a boot recorded before boots.jsonl named it: job= on
    the kernel command line the guest saw."""
    m = re.search(r"\bjob=(\S+)", r.text("cmdline"))
    return m.group(1) if m else None


def _manifest(run: Path) -> dict:
    p = run / "manifest.json"
    if not run.is_dir():
        raise AnalysisError(f"{run}: no such run directory")
    try:
        m = json.loads(p.read_text())
    except FileNotFoundError:
        raise AnalysisError(f"{p}: missing (not a run directory, or the run has not finished)") from None
    except json.JSONDecodeError as e:
        raise AnalysisError(f"{p}: corrupt JSON: {e.msg} at line {e.lineno}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise AnalysisError(f"{p}: unreadable: {e}") from None
    if not isinstance(m, dict):
        raise AnalysisError(f"{p}: not a JSON object")
    for k, typ in (("timing", str), ("kernels", list), ("boots", list)):
        if not isinstance(m.get(k), typ):
            raise AnalysisError(f"{p}: missing or invalid key {k!r}")
    return m


def kernel_table(m: dict, mp: Path) -> ktable.Table:
    """The run's kernel table: bench/kernels as run-bench parsed it at the
    start of the run."""
    try:
        if m.get("kernel_table") is not None:
            table = ktable.from_json(m["kernel_table"], f"{mp}")
            where = "the run's kernel table"
        else:
            # A run recorded before run-bench copied bench/kernels into the
            # manifest (e.g. 20261204-202248) has no "kernel_table": its roles
            # come from bench/kernels of this checkout, which still names every
            # label those runs booted with the same meaning.
            table = ktable.read()
            where = "bench/kernels (the run has no kernel table)"
    except ktable.KernelsError as e:
        raise AnalysisError(str(e)) from None
    for k in m["kernels"]:
        if str(k) not in table:
            raise AnalysisError(f"{mp}: kernel '{k}' is not in {where}")
    return table


def _boot(p: Path, i: int, e: object) -> Boot:
    if not isinstance(e, dict):
        raise AnalysisError(f"{p}: boots[{i}] is not an object")
    try:
        return Boot(id=str(e["id"]), kernel=str(e["kernel"]), variant=str(e.get("variant", "")),
                    workload=str(e["workload"]), mem_mb=int(e["mem_mb"]), smp=int(e.get("smp", 1)),
                    rep=int(e.get("rep", 1)), status=str(e["status"]),
                    cmdline_extra=str(e.get("cmdline_extra", "")).strip(),
                    wall_s=int(e.get("wall_s", 0)),
                    kernel_args=str(e["kernel_args"]).strip() if "kernel_args" in e else None,
                    job=str(e["job"]) if e.get("job") else None)
    except KeyError as k:
        raise AnalysisError(f"{p}: boots[{i}] lacks key {k}") from None
    except (TypeError, ValueError):
        raise AnalysisError(f"{p}: boots[{i}] has a non-numeric mem_mb/smp/rep/wall_s") from None


def load_run(path: str | Path, allow_tcg: bool = False) -> Run:
    run = Path(path)
    m = _manifest(run)
    mp = run / "manifest.json"
    timing = m["timing"]
    if timing not in TIMINGS:
        raise AnalysisError(f"{mp}: unknown timing mode {timing!r} (expected one of {', '.join(TIMINGS)})")
    if timing == "tcg" and not allow_tcg:
        raise AnalysisError(
            f"{mp}: timing is 'tcg': plain TCG wall-clock latencies are distorted by emulation "
            f"and are not latencies; rerun with TIMING=icount or kvm, or pass --allow-tcg "
            f"to show them as relative only")
    kernels = [str(k) for k in m["kernels"]]
    table = kernel_table(m, mp)
    for k in kernels:
        need = table.get(k).reference
        if need not in kernels:
            raise AnalysisError(f"{mp}: no '{need}' kernel in this run (kernels: "
                                f"{', '.join(kernels) or 'none'}); overheads of '{k}' are relative to '{need}'")
    boots = [_boot(mp, i, e) for i, e in enumerate(m["boots"])]
    warnings: list[str] = []
    state = str(m.get("state", "unknown"))
    if state != "complete":
        warnings.append(f"run state is {state!r}: figures come from the boots that finished")
    unknown = sorted({b.kernel for b in boots} - set(kernels))
    if unknown:
        warnings.append(f"boots of kernels not in the manifest's kernel list ignored: {', '.join(unknown)}")
    data: list[BootData] = []
    failed: list[Boot] = []
    for b in boots:
        if b.kernel not in kernels:
            continue
        d = _load_boot(run, b, warnings) if b.status == "ok" else None
        if d is None:
            failed.append(b)
        else:
            data.append(d)
    ok = {d.boot.kernel for d in data}
    kept = []
    for k in kernels:
        if k in ok:
            kept.append(k)
            continue
        attempted = [b for b in boots if b.kernel == k]
        if not attempted and state == "interrupted":
            warnings.append(f"kernel {k}: never booted before the run was interrupted; left out")
            continue
        why = (f"{len(attempted)} failed: " + ", ".join(sorted({b.status for b in attempted}))
               if attempted else "no boots recorded")
        if table.get(k).ref is None:
            why += f"; overheads are relative to '{k}'"
        raise AnalysisError(f"{mp}: kernel '{k}' has no successful boots ({why})")
    return Run(path=run, manifest=m, run_id=str(m.get("run_id", run.name)), state=state,
               timing=timing, unit=str(m.get("timing_unit") or ("instructions" if timing == "icount" else "ns")),
               allow_tcg=allow_tcg, kernels=kept, boots=data, failed=failed, warnings=warnings,
               table=table)


def resolve_run_dir(arg: str | Path) -> Path:
    """A run directory, or for a directory of runs (e.g. "results") the newest
    run in it (run ids sort by time) that has a manifest."""
    p = Path(arg)
    if (p / "manifest.json").exists() or (p / "boots").is_dir() or not p.is_dir():
        return p
    runs = sorted(c for c in p.iterdir() if c.is_dir() and (c / "manifest.json").exists())
    if not runs:
        raise AnalysisError(f"{p}: not a run directory and holds no run with a manifest.json")
    return runs[-1]
