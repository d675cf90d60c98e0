"""Load and validate one benchmark run directory (results/<run-id>/).

Every problem with the input becomes an AnalysisError whose message is one
line naming the file at fault.  Failed boots are not errors: they are kept
in Run.failed and reported."""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TypeVar

from bench import kernels as ktable
from bench import parse

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


@dataclass(frozen=True)
class PerfCounter:
    value: float | None  # None: not supported / not counted
    unit: str
    supported: bool


@dataclass
class StressorResult:
    metrics: dict[str, float]  # numeric fields of the stress-ng metrics entry
    perf: dict[str, PerfCounter]


@dataclass
class FioResult:
    runtime_ms: float
    read_bw: float
    read_iops: float
    write_bw: float
    write_iops: float
    usr_cpu: float
    sys_cpu: float
    perf: dict[str, PerfCounter]
    pgalloc: float | None = None  # pages allocated during the job (/proc/vmstat)


@dataclass
class BootData:
    boot: Boot
    report: parse.PageRefsReport | None
    meminfo_boot: dict[str, int]
    bench: list[parse.BenchLine] = field(default_factory=list)
    stress: dict[str, StressorResult] = field(default_factory=dict)
    fio: FioResult | None = None
    meminfo: dict[str, int] | None = None
    allocinfo: list[parse.AllocinfoLine] | None = None
    # cache model (bench/qemu-plugin): {op_phase: {metric: stats}}, parameters
    cache: dict[str, dict[str, parse.CacheStat]] | None = None
    cache_params: dict[str, str] = field(default_factory=dict)
    page_ext_allocated: int | None = None  # "allocated N bytes of page_ext"


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


# --- small parsers for files bench/parse.py does not cover -----------------

def _scalar(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]
    return text


def stress_yaml(text: str) -> list[dict[str, str]]:
    """The entries of the top-level "metrics:" list of stress-ng --yaml output,
    as {key: raw string}.  Tolerant: anything outside that list is skipped."""
    entries: list[dict[str, str]] = []
    in_metrics = False
    cur: dict[str, str] | None = None
    for ln in text.splitlines():
        if not ln.strip() or ln.lstrip().startswith("#"):
            continue
        if ln.strip() in ("---", "..."):
            in_metrics = False
            continue
        if not ln[0].isspace():  # a top-level key
            in_metrics = ln.split("#", 1)[0].strip() == "metrics:"
            cur = None
            continue
        if not in_metrics:
            continue
        body = ln.strip()
        if body.startswith("- "):
            cur = {}
            entries.append(cur)
            body = body[2:].strip()
        if cur is None or ":" not in body:
            continue
        key, _, value = body.partition(":")
        cur[key.strip()] = _scalar(value)
    return entries


def _num(s: str) -> float | None:
    try:
        v = float(s)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def perf_stat(text: str) -> dict[str, PerfCounter]:
    """perf stat -x, output: {event: PerfCounter}."""
    out: dict[str, PerfCounter] = {}
    for ln in text.splitlines():
        if not ln.strip() or ln.startswith("#"):
            continue
        parts = ln.split(",")
        if len(parts) < 3 or not parts[2]:
            raise parse.ParseError(f"malformed perf stat line: {ln!r}")
        raw, unit, event = parts[0].strip(), parts[1].strip(), parts[2].strip()
        if raw.startswith("<"):  # <not supported>, <not counted>
            out[event] = PerfCounter(None, unit, False)
            continue
        v = _num(raw)
        if v is None:
            raise parse.ParseError(f"malformed perf stat value: {ln!r}")
        out[event] = PerfCounter(v, unit, True)
    return out


def fio_json(text: str) -> tuple[float, float, float, float, float, float, float]:
    """(job_runtime ms, read bw KiB/s, read iops, write bw, write iops, usr %,
    sys %) of jobs[0].  Text before the JSON (fio notes) is skipped."""
    start = text.find("{")
    if start < 0:
        raise parse.ParseError("no JSON object in fio output")
    try:
        d = json.loads(text[start:])
        j = d["jobs"][0]
        vals = (j["job_runtime"], j["read"]["bw"], j["read"]["iops"], j["write"]["bw"],
                j["write"]["iops"], j["usr_cpu"], j["sys_cpu"])
        return tuple(float(v) for v in vals)  # type: ignore[return-value]
    except json.JSONDecodeError as e:
        raise parse.ParseError(f"corrupt JSON: {e.msg} at line {e.lineno}") from e
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise parse.ParseError(f"unexpected fio JSON layout (missing {e})") from e


# --- loading ----------------------------------------------------------------

class _Boot:
    """Reads one boot's result files with uniform error messages."""

    def __init__(self, result: Path, boot_id: str):
        self.result = result
        self.id = boot_id

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


def _load_stress(r: _Boot, warnings: list[str]) -> dict[str, StressorResult]:
    out: dict[str, StressorResult] = {}
    for ln in r.text("stress-rc.txt").splitlines():
        parts = ln.split()
        if not parts:
            continue
        # "<stressor> <rc> [<guest uptime after it>]"
        if len(parts) not in (2, 3) or not parts[1].lstrip("-").isdigit():
            raise AnalysisError(f"{r.path('stress-rc.txt')}: malformed line {ln!r}")
        s, rc = parts[0], int(parts[1])
        if rc != 0:
            warnings.append(f"boot {r.id}: stress-ng {s} exited with {rc}; its figures are left out")
            continue
        name = f"stress-{s}.yaml"
        entries = r.parsed(name, stress_yaml)
        entry = next((e for e in entries if e.get("stressor") == s), None)
        if entry is None:
            raise AnalysisError(f"{r.path(name)}: no metrics entry for stressor {s}")
        metrics = {k: v for k, v in ((k, _num(x)) for k, x in entry.items()) if v is not None}
        for k in ("bogo-ops", "wall-clock-time", "bogo-ops-per-second-real-time"):
            if k not in metrics:
                raise AnalysisError(f"{r.path(name)}: metrics entry for {s} lacks {k}")
        out[s] = StressorResult(metrics, r.parsed(f"perf-stress-{s}.txt", perf_stat))
    return out


def _load_boot(run: Path, b: Boot, warnings: list[str]) -> BootData | None:
    r = _Boot(run / "boots" / b.id / "result", b.id)
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
    # The guest job the boot ran, from its own kernel command line.
    m = re.search(r"\bjob=(\S+)", r.text("cmdline"))
    job = m.group(1) if m else None
    if job == "micro":
        _, d.bench = r.parsed("alloc_bench.csv", parse.alloc_bench)
        if not d.bench:
            raise AnalysisError(f"{r.path('alloc_bench.csv')}: no measurements")
        cs = _Boot(r.result.parent, b.id)
        if cs.exists("cachesim.csv"):
            d.cache_params, by_label = cs.parsed("cachesim.csv", parse.cachesim)
            ops = parse.bench_labels(r.text("alloc_bench.csv"))
            d.cache = {}
            for label, stats in by_label.items():
                name = parse.window_name(label, ops)
                if name is None:
                    raise AnalysisError(f"{cs.path('cachesim.csv')}: window label {label} is not "
                                        f"an op of alloc_bench.csv")
                d.cache[name] = stats
    elif job == "stress":
        d.stress = _load_stress(r, warnings)
    elif job == "fio":
        frc = r.text("fio-rc.txt").strip() if r.exists("fio-rc.txt") else "0"
        if frc != "0":
            warnings.append(f"boot {b.id}: fio exited with {frc}; its figures are left out")
        else:
            vals = r.parsed("fio.json", fio_json)
            d.fio = FioResult(*vals, perf=r.parsed("perf-fio.txt", perf_stat))
            if r.exists("vmstat-before.txt") and r.exists("vmstat-after.txt"):
                before = r.parsed("vmstat-before.txt", parse.vmstat_pgalloc)
                d.fio.pgalloc = r.parsed("vmstat-after.txt", parse.vmstat_pgalloc) - before
    elif job == "mem":
        d.meminfo = r.parsed("meminfo.txt", parse.meminfo)
    else:
        warnings.append(f"boot {b.id}: unknown workload {b.workload!r}: only its boot files are read")
    return d


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
                    kernel_args=str(e["kernel_args"]).strip() if "kernel_args" in e else None)
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
