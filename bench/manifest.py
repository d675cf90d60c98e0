"""Write results/<run>/manifest.json: what was run, on what, how.

    python3 -m bench.manifest RUN START TIMING R QUICK STATE KERNEL...
    python3 -m bench.manifest configs RUN VARIANT...   archive each variant's .config
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path


def cmd_out(*args: str) -> str:
    """A command's output, stripped; "" if it cannot run."""
    try:
        return subprocess.run(args, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


def host_facts() -> dict:
    cpu = ""
    try:
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.startswith("model name"):
                cpu = ln.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_kb = 0
    try:
        mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return {
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "mem_kb": mem_kb,
        "kernel": platform.release(),
        "qemu": cmd_out("qemu-system-x86_64", "--version").splitlines()[0:1],
        "kvm_verdict": cmd_out("sh", "-c", "sed -n 2,3p \"$BUILD_DIR/accel-verdict\" 2>/dev/null"),
    }


def archive_configs(run: Path, build: Path, variants: list[str]) -> list[str]:
    """Copy each variant's .config (gzip, no name or date in the header: the
    same config gives the same file) into RUN/configs/VARIANT.config.gz, so
    the run alone tells which options two kernels differ in.  Returns the
    variants that have no .config (not built)."""
    missing = []
    (run / "configs").mkdir(exist_ok=True)
    for v in variants:
        src = build / "out" / v / ".config"
        if not src.is_file():
            missing.append(v)
            continue
        (run / "configs" / f"{v}.config.gz").write_bytes(gzip.compress(src.read_bytes(), mtime=0))
    return missing


def configs(run: Path, build_info: dict) -> dict:
    """{variant: {file, sha256, matches_build_info}} of the archived configs."""
    out = {}
    for p in sorted((run / "configs").glob("*.config.gz")):
        v = p.name[:-len(".config.gz")]
        digest = hashlib.sha256(gzip.decompress(p.read_bytes())).hexdigest()
        bi = build_info.get(v) or {}
        out[v] = {"file": f"configs/{p.name}", "sha256": digest,
                  # build-kernel records the first 16 hex digits as config_hash
                  "matches_build_info": digest[:16] == bi.get("config_hash") if bi else None}
    return out


def build_dir() -> Path:
    """$BUILD_DIR, or its default (bench/lib.sh's: unset and empty alike)."""
    return Path(os.environ.get("BUILD_DIR") or "/var/tmp/alloctag-build")


def archive(run: Path, variants: list[str]) -> None:
    """archive_configs() from $BUILD_DIR, a warning for each variant not built."""
    for v in archive_configs(run, build_dir(), variants):
        print(f"warning: kernel {v} has no .config to archive (not built)", file=sys.stderr)


def write(run: Path, start: int, timing: str, reps: int, quick: bool, state: str,
          kernels: list[str]) -> None:
    """RUN/manifest.json (atomically) from the run's files as they are now."""
    build = build_dir()
    boots = []
    for ln in (run / "boots.jsonl").read_text().splitlines():
        if ln.strip():
            b = json.loads(ln)
            cmd = run / "boots" / b["id"] / "qemu-cmdline"
            b["qemu_cmdline"] = cmd.read_text().strip() if cmd.exists() else ""
            boots.append(b)
    # Parallel boots finish out of order: the manifest keeps the run's order.
    boots.sort(key=lambda b: b.get("seq", 0))
    variants = sorted({b["variant"] for b in boots} | {p.name[:-len(".config.gz")]
                                                        for p in (run / "configs").glob("*.config.gz")})
    build_info = {}
    for v in variants:
        p = build / "out" / v / "build-info.json"
        build_info[v] = json.loads(p.read_text()) if p.exists() else None
    repo = Path(__file__).resolve().parent.parent
    started = {}
    if (run / "start.txt").exists():  # written by run-bench before the first boot
        started = dict(ln.split("=", 1) for ln in (run / "start.txt").read_text().splitlines() if "=" in ln)
    table = None
    if (run / "kernels.json").exists():  # bench/kernels as parsed at run start
        table = json.loads((run / "kernels.json").read_text())
    peer = None
    if (run / "peer-info.json").exists():
        peer = json.loads((run / "peer-info.json").read_text())
    manifest = {
        "run_id": run.name,
        "state": state,
        "git_revision": started.get("git_revision")
        or cmd_out("git", "-C", str(repo), "rev-parse", "HEAD"),
        "git_dirty": started.get("git_dirty") == "1" if started
        else bool(cmd_out("git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no")),
        "git_recorded": "at run start" if started else "at run end",
        "peer": peer,
        "start": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start)),
        "end": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "wall_s": int(time.time()) - start,
        "timing": timing,
        "timing_unit": "instructions" if timing == "icount" else "ns",
        "repetitions": reps,
        "quick": quick,
        "kernels": kernels,
        "kernel_table": table,
        "build_info": build_info,
        "configs": configs(run, build_info),
        "host": host_facts(),
        "boots": boots,
    }
    tmp = run / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    tmp.replace(run / "manifest.json")


def main(argv: list[str]) -> int:
    if argv and argv[0] == "configs":
        archive(Path(argv[1]), argv[2:])
        return 0
    write(Path(argv[0]), int(argv[1]), argv[2], int(argv[3]), argv[4] == "1", argv[5], argv[6:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
