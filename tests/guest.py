"""Boot a kernel variant in QEMU through bench/boot and read what it left."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BUILD_DIR = Path(os.environ.get("BUILD_DIR", "/var/tmp/alloctag-build"))
# Where the boots of the tests go; another directory keeps a second checkout's
# test run off the boots of the first.
TEST_DIR = Path(os.environ.get("ALLOCTAG_TEST_DIR", BUILD_DIR / "tests"))
# What boots a kernel: bench/boot, or a fake one in the unit tests of this file.
BOOT_SCRIPT = Path(os.environ.get("ALLOCTAG_BOOT", REPO / "bench/boot"))


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


_cache: dict[str, Boot] = {}


def boot(name: str, variant: str, job: str = "smoke", append: str = "",
         smp: int = 1, mem: int = 1024, timing: str = "icount",
         tools: bool = False, timeout: int = 900) -> Boot:
    """Boot once per test session under @name; later calls reuse it."""
    if name in _cache:
        return _cache[name]
    d = TEST_DIR / name
    cmd = [str(BOOT_SCRIPT), "-k", variant, "-j", job, "-o", str(d),
           "-s", str(smp), "-m", str(mem), "-t", timing, "-w", str(timeout)]
    if append:
        cmd += ["-a", append]
    if tools:
        cmd.append("-T")
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)
    status = (d / "status").read_text().strip() if (d / "status").exists() else "no-status"
    b = Boot(name, d, status)
    _cache[name] = b
    return b
