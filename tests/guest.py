"""Boot a kernel variant in QEMU through bench/boot/boot and read what it left."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from bench import parse

REPO = Path(__file__).resolve().parent.parent
BUILD_DIR = Path(os.environ.get("BUILD_DIR", "/var/tmp/alloctag-build"))
# Where the boots of the tests go; another directory keeps a second checkout's
# test run off the boots of the first.
TEST_DIR = Path(os.environ.get("ALLOCTAG_TEST_DIR", BUILD_DIR / "tests"))
# What boots a kernel: bench/boot/boot, or a fake one in the unit tests of this file.
BOOT_SCRIPT = Path(os.environ.get("ALLOCTAG_BOOT", REPO / "bench/boot/boot"))
# One id per test run: tests/run exports ALLOCTAG_TEST_RUN to its workers;
# a pytest run by hand has xdist's id for its workers, or one of its own.
RUN_ID = (os.environ.get("ALLOCTAG_TEST_RUN") or os.environ.get("PYTEST_XDIST_TESTRUNUID")
          or f"pid{os.getpid()}-{uuid.uuid4().hex[:12]}")


@dataclass
class Boot:
    name: str
    dir: Path
    status: str

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def file(self, rel: str) -> str:
        p = self.dir / "result" / rel
        return p.read_text(errors="replace") if p.exists() else ""

    @property
    def dmesg(self) -> str:
        return self.file("dmesg.txt")

    @property
    def console(self) -> str:
        p = self.dir / "console.log"
        return p.read_text(errors="replace") if p.exists() else ""

    def why(self) -> str:
        return f"boot {self.name}: {self.status} (see {self.dir}/console.log)"

    def page_refs(self) -> parse.PageRefsReport:
        """The boot's "page tag refs:" report line, parsed; a boot without
        one fails its test with the file to read, not with an AttributeError
        on None."""
        r = parse.page_refs_report(self.dmesg)
        if r is None:
            raise AssertionError(f"boot {self.name} ({self.status}): no 'page tag refs:' line in "
                                 f"{self.dir}/result/dmesg.txt")
        return r


_cache: dict[str, tuple[dict, Boot]] = {}


def _record(d: Path) -> dict | None:
    """The arguments and run of the boot in @d (boot.json), if any."""
    try:
        return json.loads((d / "boot.json").read_text())
    except (OSError, ValueError):
        return None


def _write_record(d: Path, args: dict) -> None:
    tmp = d / "boot.json.tmp"
    tmp.write_text(json.dumps({"run": RUN_ID, "args": args}, sort_keys=True) + "\n")
    os.replace(tmp, d / "boot.json")


def _check_same(name: str, booted: dict, args: dict) -> None:
    diff = [f"{k}={args[k]!r} (booted: {booted.get(k)!r})" for k in args if booted.get(k) != args[k]]
    if diff:
        raise ValueError(f"boot {name!r} was booted in this run with other arguments, now asked for with "
                         f"{', '.join(diff)}: give the new boot a name of its own")


def _run_boot(d: Path, args: dict, timeout: int) -> None:
    # bench/boot/boot removes an earlier status only once its checks pass: one it
    # leaves behind when it stops before (no kernel) must not read as this boot's.
    for old in ("boot.json", "status"):
        (d / old).unlink(missing_ok=True)
    cmd = [str(BOOT_SCRIPT), "-k", args["variant"], "-j", args["job"], "-o", str(d),
           "-s", str(args["smp"]), "-m", str(args["mem"]), "-t", args["timing"], "-w", str(timeout)]
    if args["append"]:
        cmd += ["-a", args["append"]]
    if args["tools"]:
        cmd.append("-T")
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    if d.is_dir():
        _write_record(d, args)


def boot(name: str, variant: str, job: str = "smoke", append: str = "",
         smp: int = 1, mem: int = 1024, timing: str = "icount",
         tools: bool = False, timeout: int = 900) -> Boot:
    """Boot once per test run under @name; later calls with the same
    arguments (the timeout aside), in this worker or another, reuse it, and
    other arguments under the same name are an error.  A lock file per name
    makes a second worker wait for the first one's boot; boot.json in the
    boot's directory says which run made it with which arguments, so a boot
    of an earlier run is never taken."""
    args = {"variant": variant, "job": job, "append": append, "smp": smp, "mem": mem,
            "timing": timing, "tools": tools}
    if name in _cache:
        booted, b = _cache[name]
        _check_same(name, booted, args)
        return b
    d = TEST_DIR / name
    TEST_DIR.mkdir(parents=True, exist_ok=True)
    with open(TEST_DIR / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        rec = _record(d)
        if rec is not None and rec.get("run") == RUN_ID:
            _check_same(name, rec.get("args", {}), args)
        else:
            _run_boot(d, args, timeout)
        status = (d / "status").read_text().strip() if (d / "status").exists() else "no-status"
    b = Boot(name, d, status)
    _cache[name] = (args, b)
    return b
