"""A QUICK benchmark run on two kernels leaves a complete, parseable run."""

import json
import os
import subprocess

from bench import parse
from tests.guest import REPO, TEST_DIR


def test_quick_micro_run_records_every_boot_and_parses():
    out = TEST_DIR / "bench-smoke"
    subprocess.run(["rm", "-rf", str(out)], check=True)
    env = dict(os.environ, RESULTS_DIR=str(out), RUN_ID="smoke", QUICK="1",
               QUICK_R="1", KERNELS="off packed", WORKLOADS="micro", TIMING="icount")
    r = subprocess.run([str(REPO / "bench/run-bench")], env=env, capture_output=True,
                       text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "[2/2] kernel packed, workload micro" in r.stderr
    run = out / "smoke"
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["state"] == "complete" and manifest["timing"] == "icount"
    assert [b["kernel"] for b in manifest["boots"]] == ["off", "packed"]
    for b in manifest["boots"]:
        assert b["status"] == "ok", b
        assert "-icount shift=0,sleep=off" in b["qemu_cmdline"]
        settings, lines = parse.alloc_bench(
            (run / "boots" / b["id"] / "result" / "alloc_bench.csv").read_text())
        assert settings["samples"] == "1000"
        ops = {ln.op for ln in lines}
        assert {"pages_o0_alloc", "pages_o0_free", "pages_o0_pair", "kmalloc_64_alloc",
                "vmalloc_16k_free", "percpu_64_alloc", "ksite_pages_o0_alloc",
                "ksite_pages_o0_pair", "ksite_kmalloc_64_free"} <= ops
        assert all(ln.count == 1000 and ln.min <= ln.p50 <= ln.p99 <= ln.max for ln in lines)
        # a page allocation costs hundreds of instructions: a zero is a broken clock
        assert all(ln.p50 > 100 for ln in lines if "pages_o0" in ln.op), lines
    assert set(manifest["build_info"]) == {"off", "packed"}


def test_bad_bench_options_are_rejected_with_a_message():
    env = dict(os.environ, R="zero", RESULTS_DIR=str(TEST_DIR / "bench-bad"))
    r = subprocess.run([str(REPO / "bench/run-bench")], env=env, capture_output=True, text=True)
    assert r.returncode != 0 and "R='zero'" in r.stderr
    env = dict(os.environ, WORKLOADS="nosuch", RESULTS_DIR=str(TEST_DIR / "bench-bad"))
    r = subprocess.run([str(REPO / "bench/run-bench")], env=env, capture_output=True, text=True)
    assert r.returncode != 0 and "unknown workload 'nosuch'" in r.stderr
