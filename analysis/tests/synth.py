"""Small synthetic result trees (results/<run-id>/) shaped like bench/run-bench
output, with values simple enough to compute expected overheads by hand.

Latency p50 of op X on kernel K, repetition r (1-based), v = round(OPS[X] * factor(K, X)):
    v + JITTER[r-1]             (alloc)
    v // 2 + JITTER[r-1]        (free)
    v + v // 2 + JITTER[r-1]    (pair)
e.g. pages_o0_alloc: off 1000, 1002; baseline 1400, 1402.  ksite_* ops are
the kernel-tag call sites of alloc_bench."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from bench import kernels, workloads

# The kernels' variants, command lines and roles: bench/kernels, plus a
# synthetic label that boots an existing kernel for the memory workload only.
SYNTHETIC_KERNELS = "packed-memonly packed 6.12 off - @mem\n"


def table(extra: str = "") -> kernels.Table:
    return kernels.parse(kernels.TABLE.read_text() + SYNTHETIC_KERNELS + extra, "bench/kernels + synth")


TABLE = table()
VARIANT = {k.label: k.variant for k in TABLE}
CMDLINE = {k.label: " ".join(k.args) for k in TABLE if k.args}

KERNELS = ("off", "baseline", "baseline-nopf", "packed", "packed-ext16")
# The upstream peer (tree "up"): its absolute counts are 20% higher than
# 6.12's, so any comparison across trees gives wrong overheads.
PEER_KERNELS = ("up-off", "up-pageext", "up-compressed")
TREE_SCALE = {"up-off": 1.2, "up-pageext": 1.2, "up-compressed": 1.2}
# What run-bench appends to every boot of a workload (its ARGS).
WORKLOAD_ARGS = {"micro": "samples=1000 warmup=100 parallel=0", "micro-smp": "samples=1000 parallel=2"}
OPS = {"pages_o0": 1000, "kmalloc_64": 200, "vmalloc_16k": 5000, "ksite_pages_o0": 1010}
KINDS = ("alloc", "free", "pair")
STATIC_HOOK = {"off": 0, "baseline": 40, "packed": 16, "packed-distro": 18, "up-off": 0, "up": 30, "up-table": 28,
               "up-packed": 14}  # bench/fastpath-insns deltas
PAGE_FACTOR = {"off": 1.0, "baseline": 1.4, "baseline-nopf": 1.1, "packed": 1.07, "packed-ext16": 1.2,
               "up-off": 1.0, "up-pageext": 1.3, "up-compressed": 1.1}
SLAB_FACTOR = {"off": 1.0, "baseline": 1.07, "baseline-nopf": 1.01, "packed": 1.095, "packed-ext16": 1.05,
               "up-off": 1.0, "up-pageext": 1.05, "up-compressed": 1.05}
JITTER = (0, 2, 10, 3, 5)  # reps 3+: median differs from mean
STRESSORS = {"vm": 2.0, "fork": 4.0}          # off wall-clock-time, seconds
STRESS_FACTOR = {"off": 1.0, "baseline": 1.10, "baseline-nopf": 1.02, "packed": 1.03, "packed-ext16": 1.05,
                 "up-off": 1.2, "up-pageext": 1.2 * 1.08, "up-compressed": 1.2 * 1.02}
FIO_RUNTIME = 2000                              # off job_runtime, ms
MEM_SIZES = (1024, 8192)
EXT_BYTES = {"baseline": 8, "baseline-nopf": 8, "packed": 0, "packed-ext16": 2, "up-pageext": 8,
             "up-compressed": 0}
# The kernel image (code, tag sections, bss) grows on every profiling kernel
# and lowers MemTotal; page_ext is allocated later and lowers only MemFree
# (as measured: bss 600K off vs 2504K baseline; page_ext in MemFree).
IMAGE_KB = {"off": 0, "baseline": 2200, "baseline-nopf": 2200, "packed": 2300, "packed-ext16": 2300,
            "up-off": 100, "up-pageext": 2100, "up-compressed": 2100}


def memtotal(kernel: str, mem_mb: int) -> int:
    """MemTotal in kB: 97% of RAM minus the kernel image's growth."""
    return mem_mb * 1024 * 97 // 100 - IMAGE_KB[kernel]


def memfree(kernel: str, mem_mb: int) -> int:
    """MemFree after boot in kB: MemTotal less 40000 kB in use and page_ext."""
    return memtotal(kernel, mem_mb) - 40000 - EXT_BYTES.get(kernel, 0) * mem_mb * 256 // 1024


def factor(kernel: str, op: str) -> float:
    return (SLAB_FACTOR if op.startswith("kmalloc") else PAGE_FACTOR)[kernel]


def p50(kernel: str, op: str, kind: str, rep: int, jitter: bool = True) -> int:
    v = round(OPS[op] * TREE_SCALE.get(kernel, 1.0) * factor(kernel, op))
    return {"alloc": v, "free": v // 2, "pair": v + v // 2}[kind] + (JITTER[rep - 1] if jitter else 0)


@dataclass
class Spec:
    run_id: str = "20250101-000000"
    timing: str = "icount"
    reps: int = 2
    kernels: tuple[str, ...] = KERNELS
    workloads: tuple[str, ...] = ("micro", "micro-smp", "stress", "fio", "mem")
    state: str = "complete"
    failed: dict[str, str] = field(default_factory=dict)   # boot id -> status
    data_of: dict[str, str] = field(default_factory=dict)  # label -> whose figures it gets
    scale: dict[str, float] = field(default_factory=dict)  # label -> extra latency factor
    jitter: bool = True  # False: boots of one kernel agree (micro latencies)
    cache: bool = False  # write cache-model plugin output for micro boots
    only: dict[str, tuple[str, ...]] = field(default_factory=dict)  # label -> its only workloads
    table: bool = True   # False: a run recorded before the manifest had the kernel table
    extra: str = ""      # more bench/kernels lines, for labels of this run only
    job_recorded: bool = True  # False: a run recorded before boots.jsonl named each boot's job


def _bench_csv(k: str, rep: int, smp: int, scale: float, jitter: bool = True) -> str:
    out = ["# samples=1000 warmup=100 clock_cost=20 cpus=%d batch=65536" % smp]
    out += [f"#label {i << 4} {op}" for i, op in enumerate(OPS)]
    out += ["op,cpu,count,min,p50,p90,p99,mean,max,outliers"]
    cpus = [-1] + ([1000 + c for c in range(smp)] if smp > 1 else [])
    for cpu in cpus:
        for op in OPS if cpu == -1 else ["pages_o0"]:
            for kind in KINDS:
                p = round(p50(k, op, kind, rep, jitter) * scale)
                if cpu >= 1000:
                    p = p * 3 // 2 + 10 * (cpu - 1000)
                out.append(f"{op}_{kind},{cpu},1000,{p * 9 // 10},{p},{p * 6 // 5},{p * 2},"
                           f"{p * 11 // 10},{p * 10},0")
    return "\n".join(out) + "\n# end\n"


# Batch pattern, mean LLC misses per op: the free touches a cold struct page
# on every kernel; page_ext kernels add a cold page_ext line on alloc and free.
EXTRA_LLC = {"baseline": 0.5, "baseline-nopf": 0.0, "packed": 0.0, "packed-ext16": 0.25, "up-pageext": 0.5,
             "up-compressed": 0.0}


def _cachesim(k: str) -> str:
    out = ["# cachesim l1=48K/12 l2=2048K/16 llc=4096K/16 pen_l2=14 pen_llc=50 pen_mem=200 windows=8",
           "label,metric,count,min,p50,p90,p99,mean,max"]
    for i, op in enumerate(OPS):
        for pattern in (0, 1):
            for free in (0, 1):
                label = i << 4 | pattern << 1 | free
                insns = p50(k, op, "free" if free else "alloc", 1, False) - 5
                llc = (0.0 if not pattern else float(free)) + (EXTRA_LLC.get(k, 0.0) if pattern else 0.0)
                cyc = insns + llc * 200
                for m, v in (("insns", insns), ("llc_miss", llc), ("l2_miss", llc), ("l1_miss", llc + 1),
                             ("lines", 30), ("est_cycles", cyc)):
                    iv = int(v)
                    out.append(f"{label},{m},1000,{iv},{iv},{iv},{int(v + 1)},{v:.3f},{int(v + 1)}")
    return "\n".join(out) + "\n# end\n"


# insn-profile.csv: the kmalloc-64 hot loop at a kernel call site, off's
# functions plus what each kernel adds (bench/insn_profile.write_table)
FN_HOOK = {"off": 0.0, "up-off": 0.0, "baseline": 40.0, "packed": 20.0}


def _insn_profile(k: str) -> str:
    add = FN_HOOK.get(k, 10.0)
    rows = [("ksite_kmalloc_64_alloc", "__kmalloc_noprof", 71.0 + add),
            ("ksite_kmalloc_64_alloc", "test_alloc_site_kmalloc", 2.0 + (add and 11.0)),
            ("ksite_kmalloc_64_free", "kfree", 52.0 + add),
            ("ksite_kmalloc_64_free", "[module]", 14.0)]
    if add >= 40.0:
        rows.append(("ksite_kmalloc_64_free", "__alloc_tag_sub", 0.5))
    return "op,function,instructions\n" + "".join(f"{op},{f},{v:.2f}\n" for op, f, v in rows)


def _stress_yaml(s: str, wall: float) -> str:
    return ("---\nsystem-info:\n      stress-ng-version: 0.15.06\n      run-by: root\n\n"
            f"metrics:\n    - stressor: {s}\n      bogo-ops: 1000\n"
            f"      bogo-ops-per-second-usr-sys-time: {1000 / wall:.6f}\n"
            f"      bogo-ops-per-second-real-time: {1000 / wall:.6f}\n"
            f"      wall-clock-time: {wall:.6f}\n      user-time: {wall * 0.1:.6f}\n"
            f"      system-time: {wall * 0.8:.6f}\n      cpu-usage-per-instance: 90.0\n"
            "      max-rss: 36000\n\n...\n")


def _perf(task_ms: float) -> str:
    return (f"# started on Thu Jan  1 00:00:00 2025\n\n{task_ms:.2f},msec,task-clock,1,100.00,0.99,CPUs utilized\n"
            "5000,,page-faults,1,100.00,1.0,K/sec\n<not supported>,,cycles,0,100.00,,\n")


def _fio_json(runtime: int) -> str:
    kib = 65536
    bw = kib * 1000 // runtime
    job = {"jobname": "pagecache", "job_runtime": runtime, "usr_cpu": 10.0, "sys_cpu": 80.0,
           "read": {"bw": bw, "iops": bw / 4, "runtime": runtime},
           "write": {"bw": bw // 2, "iops": bw / 8, "runtime": runtime}}
    return "note: a fio remark before the JSON\n" + json.dumps({"fio version": "fio-3.33", "jobs": [job]}, indent=2)


def _meminfo(total: int, free: int) -> str:
    return f"MemTotal:       {total} kB\nMemFree:        {free} kB\nMemAvailable:   {free} kB\n"


def _allocinfo(k: str) -> str:
    lines = ["allocinfo - version: 1.0", "#     <size>  <calls> <tag info>"]
    lines += [f"  {4096 * (i + 1)}  {i + 1} mm/x.c:{i} func:f{i}" for i in range(3 + (k == "packed"))]
    return "\n".join(lines) + "\n"


def _dmesg(k: str, mem_mb: int) -> str:
    log = "[    0.000000] Linux version 6.12.0\n"
    if k == "off":
        return log
    if k.startswith("up-"):
        b = EXT_BYTES.get(k, 0) * mem_mb * 256
        return log + (f"[    0.030000] allocated {b} bytes of page_ext\n" if b else "")
    pages = mem_mb * 256
    b = EXT_BYTES[k]
    mode = {0: "flags", 2: "page_ext16", 8: "page_ext"}[b]
    ref_bits = 64 if k.startswith("baseline") else 16
    return log + (f"[    1.500000] alloc_tag: page tag refs: mode={mode} ref_bits={ref_bits} kernel_tags=3912 "
                  f"index_bits={0 if ref_bits == 64 else 16} index_used=3913 index_max=65535 "
                  f"page_ext_bytes={b * pages} page_ext_pages={pages if b else 0}\n")


WORKLOAD_MEM = {"mem": MEM_SIZES}
WORKLOAD_SMP = {"micro-smp": 2}


def make_run(root: Path, spec: Spec | None = None) -> Path:
    spec = spec or Spec()
    tab = table(spec.extra)
    variant = {k.label: k.variant for k in tab}
    cmdline = {k.label: " ".join(k.args) for k in tab if k.args}
    run = Path(root) / spec.run_id
    (run / "boots").mkdir(parents=True)
    boots = []
    for rep in range(1, spec.reps + 1):
        for w in spec.workloads:
            for m in WORKLOAD_MEM.get(w, (1024,)):
                for label in spec.kernels:
                    if label in spec.only and w not in spec.only[label]:
                        continue
                    bid = f"{label}--{w}--m{m}--r{rep}"
                    status = spec.failed.get(bid, "ok")
                    smp = WORKLOAD_SMP.get(w, 1)
                    job = {"job": workloads.get(w).job} if spec.job_recorded else {}
                    boots.append({"id": bid, "kernel": label, "variant": variant.get(label, label),
                                  "workload": w, **job, "mem_mb": m, "smp": smp, "rep": rep,
                                  "kernel_args": cmdline.get(label, ""),
                                  "cmdline_extra": " ".join(filter(None, [cmdline.get(label, ""),
                                                                          WORKLOAD_ARGS.get(w, "")])),
                                  "status": status,
                                  "wall_s": 10, "qemu_cmdline": "qemu-system-x86_64 ..."})
                    if status == "ok":
                        _write_boot(run / "boots" / bid / "result", spec.data_of.get(label, label),
                                    w, m, rep, smp, spec.scale.get(label, 1.0), spec.jitter)
                        if spec.cache and w == "micro":
                            (run / "boots" / bid / "cachesim.csv").write_text(
                                _cachesim(spec.data_of.get(label, label)))
                            (run / "boots" / bid / "insn-profile.csv").write_text(
                                _insn_profile(spec.data_of.get(label, label)))
                    else:
                        (run / "boots" / bid).mkdir()
    variants = sorted({variant.get(k, k) for k in spec.kernels})
    (run / "fastpath-insns.csv").write_text(
        "variant,function,instructions,delta_vs_off,symbols\n"
        + "".join(f"{v},post_alloc_hook,{29 + STATIC_HOOK[v]},{STATIC_HOOK[v]},post_alloc_hook\n"
                  for v in variants)
        # a function only the peer tree has
        + "".join(f"{v},__free_frozen_pages,326,{STATIC_HOOK[v]},__free_frozen_pages\n"
                  for v in variants if v.startswith("up"))
        # a set of functions, summed over those each kernel has
        + "".join(f"{v},free path,{52 + STATIC_HOOK[v]},{STATIC_HOOK[v]},__free_pages\n"
                  if not v.startswith("up") else f"{v},free path,{39 + STATIC_HOOK[v]},{STATIC_HOOK[v]},"
                  "__free_pages+___free_pages\n" for v in variants))
    manifest = {
        "run_id": spec.run_id, "state": spec.state, "git_revision": "0" * 40, "git_dirty": False,
        "start": "2025-01-01T00:00:00Z", "end": "2025-01-01T01:00:00Z", "wall_s": 3600,
        "timing": spec.timing, "timing_unit": "instructions" if spec.timing == "icount" else "ns",
        "repetitions": spec.reps, "quick": True, "kernels": list(spec.kernels),
        "kernel_table": tab.to_json() if spec.table else None,
        "build_info": {v: {"variant": v, "tree": "up" if v.startswith("up") else ("packed" if "packed" in v
                                                                                    else "baseline"),
                           "kernel_release": f"6.12.0-{v}", "config_hash": f"cfg{v[:3]}",
                           "series_hash": f"ser{v[:3]}", "compiler": "gcc 12.2.0",
                           "build_seconds": 600, "bzimage_bytes": 12345678} for v in variants},
        "host": {"cpu": "Synthetic CPU", "cpus": 2, "mem_kb": 8000000, "kernel": "6.1.0",
                 "qemu": ["QEMU emulator version 7.2.0"], "kvm_verdict": "no /dev/kvm"},
        "boots": boots,
    }
    (run / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return run


def _write_boot(res: Path, k: str, w: str, m: int, rep: int, smp: int, scale: float,
                jitter: bool = True) -> None:
    res.mkdir(parents=True)
    job = workloads.get(w).job
    files = {"job.rc": "0\n", "dmesg.txt": _dmesg(k, m),
             "cmdline": f"console=ttyS0 panic=-1 quiet tsc=reliable nokaslr job={job} {CMDLINE.get(k, '')}\n",
             "meminfo-boot.txt": _meminfo(memtotal(k, m), memtotal(k, m) - 50000)}
    if k != "off":
        files["allocinfo.txt"] = _allocinfo(k)
    if w.startswith("micro"):
        files["alloc_bench.csv"] = _bench_csv(k, rep, smp, scale, jitter)
    elif w == "stress":
        rc = []
        for s, base in STRESSORS.items():
            wall = base * STRESS_FACTOR[k] * scale + 0.001 * (rep - 1)
            files[f"stress-{s}.yaml"] = _stress_yaml(s, wall)
            files[f"perf-stress-{s}.txt"] = _perf(wall * 990)
            rc.append(f"{s} 0")
        files["stress-rc.txt"] = "\n".join(rc) + "\n"
    elif w == "fio":
        runtime = round(FIO_RUNTIME * STRESS_FACTOR[k] * scale) + rep - 1
        files["fio.json"] = _fio_json(runtime)
        files["perf-fio.txt"] = _perf(runtime * 0.9)
        files["fio-rc.txt"] = "0\n"
        files["vmstat-before.txt"] = "nr_free_pages 1000\npgalloc_dma32 100\npgalloc_normal 5000\n"
        files["vmstat-after.txt"] = "nr_free_pages 1000\npgalloc_dma32 132\npgalloc_normal 38000\n"
    elif w == "mem":
        t = memtotal(k, m)
        files["meminfo.txt"] = _meminfo(t, memfree(k, m))
    for name, text in files.items():
        (res / name).write_text(text)
