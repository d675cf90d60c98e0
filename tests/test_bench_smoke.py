"""A QUICK benchmark run on two kernels leaves a complete, parseable run."""

import json
import os
import subprocess

from bench import parse
from bench.workloads.micro import parse as micro
from tests.guest import REPO, TEST_DIR


def test_quick_micro_run_records_every_boot_and_parses():
    out = TEST_DIR / "bench-smoke"
    subprocess.run(["rm", "-rf", str(out)], check=True)
    env = dict(os.environ, RESULTS_DIR=str(out), RUN_ID="smoke", QUICK="1",
               QUICK_R="1", KERNELS="off packed", WORKLOADS="micro", TIMING="icount",
               CACHESIM="1", PEER="0")
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
        settings, lines = micro.alloc_bench(
            (run / "boots" / b["id"] / "result" / "alloc_bench.csv").read_text())
        assert settings["samples"] == "1000"
        ops = {ln.op for ln in lines}
        assert {"pages_o0_alloc", "pages_o0_free", "pages_o0_pair", "kmalloc_64_alloc",
                "vmalloc_16k_free", "percpu_64_alloc", "ksite_pages_o0_alloc",
                "ksite_pages_o0_pair", "ksite_kmalloc_64_free"} <= ops
        # every name whole (alloc_bench once cut "ksite_kmalloc_64_batch_alloc" to 27 characters)
        assert all(ln.op.rsplit("_", 1)[1] in ("alloc", "free", "pair") for ln in lines), sorted(ops)
        assert {"ksite_kmalloc_64_batch_alloc", "ksite_pages_o0_batch_alloc"} <= ops
        # the run kept each micro boot's per-function profile, not its PCs
        boot = run / "boots" / b["id"]
        assert not (boot / "pcs.csv").exists()
        prof = micro.insn_profile((boot / "insn-profile.csv").read_text())
        assert prof["ksite_kmalloc_64_alloc"]["__kmalloc_noprof"] > 50, prof["ksite_kmalloc_64_alloc"]
        assert all(ln.count == (65536 if "_batch_" in ln.op else 1000)
                   and 0 < ln.min <= ln.p50 <= ln.p99 <= ln.max for ln in lines)
        # a page allocation costs hundreds of instructions: a zero is a broken clock
        assert all(ln.p50 > 100 for ln in lines if "pages_o0" in ln.op), lines
    assert set(manifest["build_info"]) == {"off", "packed"}
    for b in manifest["boots"]:
        check_one_window_per_timed_op(run / "boots" / b["id"])


def check_one_window_per_timed_op(boot):
    """The cache model saw exactly one window per timed (and warm-up) op:
    a missing, doubled or unlabelled marker changes the counts."""
    text = (boot / "result" / "alloc_bench.csv").read_text()
    settings, lines = micro.alloc_bench(text)
    ops = micro.bench_labels(text)
    params, by_label = parse.cachesim((boot / "cachesim.csv").read_text())
    assert params["stray_stops"] == "0" and params["nested_starts"] == "0", params
    names = {micro.window_name(label, ops): st for label, st in by_label.items()}
    assert None not in names, sorted(by_label)
    hot = int(settings["samples"]) + int(settings["warmup"])
    batch = int(settings["batch"])
    assert batch >= 1024
    for op in ops.values():
        for phase in ("alloc", "free"):
            assert names[f"{op}_{phase}"]["insns"].count == hot, (op, phase)
    for op in ("pages_o0", "kmalloc_64", "ksite_pages_o0", "ksite_kmalloc_64"):
        for phase in ("alloc", "free"):
            assert names[f"{op}_batch_{phase}"]["insns"].count == batch, (op, phase)
    assert int(params["windows"]) == len(ops) * 2 * hot + 8 * batch
    # the model and the guest's own clock count the same instructions
    # (the guest's includes one clock read and one marker)
    by_op = {ln.op: ln for ln in lines}
    pa = names["pages_o0_alloc"]["insns"].p50
    assert 0 < by_op["pages_o0_alloc"].p50 - pa <= 20, (by_op["pages_o0_alloc"].p50, pa)
    # batch frees touch struct pages allocated long before: cold lines
    assert names["pages_o0_batch_free"]["llc_miss"].mean >= 0.5
    assert names["pages_o0_free"]["llc_miss"].p50 == 0


def test_bad_bench_options_are_rejected_with_a_message():
    env = dict(os.environ, R="zero", RESULTS_DIR=str(TEST_DIR / "bench-bad"))
    r = subprocess.run([str(REPO / "bench/run-bench")], env=env, capture_output=True, text=True)
    assert r.returncode != 0 and "R='zero'" in r.stderr
    env = dict(os.environ, WORKLOADS="nosuch", RESULTS_DIR=str(TEST_DIR / "bench-bad"))
    r = subprocess.run([str(REPO / "bench/run-bench")], env=env, capture_output=True, text=True)
    assert r.returncode != 0 and "unknown workload 'nosuch'" in r.stderr
    for var, val, msg in (("TIMING", "bogus", "TIMING='bogus'"), ("PEER", "2", "PEER='2'"),
                          ("CACHESIM", "yes", "CACHESIM='yes'"), ("BENCH_JOBS", "0", "BENCH_JOBS='0'")):
        env = dict(os.environ, RESULTS_DIR=str(TEST_DIR / "bench-bad"), **{var: val})
        r = subprocess.run([str(REPO / "bench/run-bench")], env=env, capture_output=True, text=True)
        assert r.returncode != 0 and msg in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    # make rejects bad variables before building anything
    r = subprocess.run(["make", "-C", str(REPO), "-n", "bench", "R=abc"], capture_output=True, text=True)
    assert r.returncode != 0 and "R='abc' is not a positive number" in r.stderr
    r = subprocess.run(["make", "-C", str(REPO), "-n", "bench", "BENCH_JOBS=two"], capture_output=True, text=True)
    assert r.returncode != 0 and "BENCH_JOBS='two' is not a positive number" in r.stderr
