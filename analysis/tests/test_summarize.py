"""analysis.summarize: overheads against hand-computed values."""

import csv
import io

import pytest

from analysis import load, summarize
from analysis.tests import synth

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    run = load.load_run(synth.make_run(tmp_path_factory.mktemp("good")))
    return run, summarize.summarize(run)


def row(s, kernel, workload, metric):
    r = s.get(kernel, workload, metric)
    assert r is not None, (kernel, workload, metric)
    return r


def test_micro_overheads_by_hand(good):
    _, s = good
    # off p50 1000, 1002 -> 1001; baseline 1400, 1402 -> 1401; packed 1070, 1072 -> 1071
    r = row(s, "baseline", "micro", "pages_o0_alloc.p50.overhead")
    assert r.value == pytest.approx((1401 / 1001 - 1) * 100)
    assert (r.spread_low, r.spread_high) == pytest.approx(((1400 / 1002 - 1) * 100, (1402 / 1000 - 1) * 100))
    # boots disagree (synthetic jitter) and there are fewer than 5: spread, no CI
    assert r.ci_low is None and r.n_boots == 2 and r.unit == "%" and "fewer than 5 boots" in r.note
    assert row(s, "packed", "micro", "pages_o0_alloc.p50.overhead").value == pytest.approx((1071 / 1001 - 1) * 100)
    # kmalloc_64: off 200, 202 -> 201; baseline 214, 216 -> 215; packed 219, 221 -> 220
    assert row(s, "baseline", "micro", "kmalloc_64_alloc.p50.overhead").value == pytest.approx((215 / 201 - 1) * 100)
    assert row(s, "packed", "micro", "kmalloc_64_alloc.p50.overhead").value == pytest.approx((220 / 201 - 1) * 100)
    # free: off 500, 502; baseline-nopf 1100 // 2 = 550, 552
    assert row(s, "baseline-nopf", "micro", "pages_o0_free.p50.overhead").value == \
        pytest.approx((551 / 501 - 1) * 100)
    assert row(s, "off", "micro", "pages_o0_alloc.p50").value == 1001
    assert row(s, "off", "micro", "pages_o0_alloc.p99").value == 2002
    assert row(s, "off", "micro", "pages_o0_alloc.p50").unit == "instructions"
    assert s.get("off", "micro", "pages_o0_alloc.p50.overhead") is None


def test_micro_instruction_deltas_vs_off_and_nopf(good):
    _, s = good
    # pages_o0 pair: off 1500, 1502 -> 1501; packed 1070 + 535 -> 1606; nopf 1100 + 550 -> 1651
    r = row(s, "packed", "micro", "pages_o0_pair.p50.delta")
    assert r.value == pytest.approx(1606 - 1501) and r.unit == "instructions"
    assert row(s, "packed", "micro", "pages_o0_pair.p50.delta_nopf").value == pytest.approx(1606 - 1651)
    assert row(s, "baseline-nopf", "micro", "pages_o0_pair.p50.delta").value == pytest.approx(1651 - 1501)
    # ksite (kernel tag) pair: off 1010 + 505 -> 1516; packed 1081 + 540 -> 1622
    assert row(s, "packed", "micro", "ksite_pages_o0_pair.p50.delta").value == pytest.approx(1622 - 1516)
    # nopf is the reference of .delta_nopf, off has no deltas at all
    assert s.get("baseline-nopf", "micro", "pages_o0_pair.p50.delta_nopf") is None
    assert s.get("off", "micro", "pages_o0_pair.p50.delta") is None
    assert s.get("off", "micro", "pages_o0_pair.p50.delta_nopf") is None
    # every latency row says which kind of allocation tag its call site has
    assert "kernel tag call site" in row(s, "packed", "micro", "ksite_pages_o0_alloc.p50").note
    assert "module tag call site" in row(s, "packed", "micro", "pages_o0_alloc.p50").note
    assert "kernel tag" not in row(s, "packed", "micro", "pages_o0_alloc.p50").note


def test_micro_smp_parallel_and_ci(good):
    _, s = good
    # per boot the mean over CPUs of p50*3//2 + 10*cpu: off 1505, 1508; baseline 2105, 2108
    r = row(s, "baseline", "micro-smp", "parallel.pages_o0_alloc.p50.overhead")
    assert r.value == pytest.approx((2106.5 / 1506.5 - 1) * 100)
    # the synthetic micro-smp boots disagree: flagged, and 2 boots are too few for a CI
    assert r.ci_low is None and "fewer than 5 boots" in r.note and "icount" not in r.note
    assert "boots disagree" in row(s, "baseline", "micro-smp", "parallel.pages_o0_alloc.p50").note
    assert any(w.startswith("micro-smp: boots of one kernel disagree") for w in s.warnings)


def test_stress_and_fio_by_hand(good):
    _, s = good
    r = row(s, "baseline", "stress", "vm.wall_time.overhead")
    assert r.value == pytest.approx((2.2005 / 2.0005 - 1) * 100, rel=1e-6)
    rel = row(s, "baseline", "stress", "vm.bogo_ops_per_s.rel")
    off_bps = (1000 / 2.0 + 1000 / 2.001) / 2
    base_bps = (1000 / 2.2 + 1000 / 2.201) / 2
    assert rel.value == pytest.approx(base_bps / off_bps, rel=1e-5) and rel.value < 1
    assert row(s, "off", "stress", "vm.wall_time").unit.startswith("virtual s")
    assert row(s, "baseline", "stress", "vm.perf.cycles").value is None
    assert "not supported" in row(s, "baseline", "stress", "vm.perf.cycles").note
    assert row(s, "packed", "fio", "runtime.overhead").value == pytest.approx((2060.5 / 2000.5 - 1) * 100)
    assert row(s, "packed", "fio", "read_bw.rel").value < 1
    assert row(s, "packed", "fio", "pgalloc").value == 32 + 33000


def test_memory_by_hand(good):
    _, s = good
    w = "mem-m1024"
    assert row(s, "baseline", w, "page_ext_bytes").value == 8 * 262144
    # bytes per page frame: the kernel's page_ext bytes over the page frames
    # it has page_ext for (its page tag refs line), not over MemTotal
    assert row(s, "baseline", w, "page_ext_bytes_per_page").value == 8
    assert row(s, "baseline", w, "page_ext_pct_ram").value == pytest.approx(100 * 8 / 4096)
    assert row(s, "baseline", "mem-m8192", "page_ext_bytes_per_tib").value == 8 * (1 << 40) // 4096
    assert row(s, "packed-ext16", w, "page_ext_bytes.vs_baseline").value == pytest.approx(-75)
    assert row(s, "packed", w, "page_ext_bytes").value == 0
    assert row(s, "off", w, "page_ext_bytes").value == 0
    assert "without profiling" in row(s, "off", w, "page_ext_bytes").note
    assert "without profiling" not in row(s, "baseline", w, "page_ext_bytes").note
    # MemTotal: the kernel image only, page_ext or not
    assert row(s, "baseline", w, "memtotal_kb.delta").value == -2200
    assert row(s, "packed-ext16", "mem-m8192", "memtotal_kb.delta").value == -2300
    # MemFree: the image plus page_ext (8 B/page baseline at 8 GiB: 16384 kB)
    assert row(s, "baseline", "mem-m8192", "memfree_kb.delta").value == -2200 - 16384
    assert row(s, "packed-ext16", "mem-m8192", "memfree_kb.delta").value == -2300 - 4096
    assert row(s, "packed", w, "memfree_kb.delta").value == -2300
    assert row(s, "packed", w, "allocinfo_lines").value == 4
    assert row(s, "baseline", w, "allocinfo_bytes").value == 4096 * 6
    assert s.get("off", w, "allocinfo_bytes") is None


def test_bytes_per_page_frame_is_the_kernels_own_count(tmp_path):
    """One definition of bytes per page: page_ext bytes / the page frames the
    kernel has page_ext for, both from its own log.  MemTotal pages gave
    8.22 B for an 8 B entry (issue 29); a kernel whose log names no frame
    count (upstream) gets no figure rather than an invented one."""
    spec = synth.Spec(kernels=synth.KERNELS + synth.PEER_KERNELS, workloads=("mem",), reps=1)
    s = summarize.summarize(load.load_run(synth.make_run(tmp_path, spec)))
    for w in ("mem-m1024", "mem-m8192"):
        for k, v in (("baseline", 8), ("packed-ext16", 2), ("packed", 0), ("off", 0), ("up-compressed", 0),
                     ("up-off", 0)):
            r = row(s, k, w, "page_ext_bytes_per_page")
            assert r.value == v and r.unit == "bytes per 4 KiB page frame", (k, w, r)
        assert s.get("up-pageext", w, "page_ext_bytes_per_page") is None
        assert row(s, "up-pageext", w, "page_ext_bytes").value == 8 * int(w[5:]) * 256
        # the same figure is not kept twice under another name
        assert s.get("baseline", w, "page_ext_bytes_per_entry") is None


def test_swapped_reference_gives_negative_overhead(tmp_path):
    spec = synth.Spec(workloads=("micro", "stress"), data_of={"off": "baseline", "baseline": "off"})
    s = summarize.summarize(load.load_run(synth.make_run(tmp_path, spec)))
    r = row(s, "baseline", "micro", "pages_o0_alloc.p50.overhead")
    assert r.value == pytest.approx((1001 / 1401 - 1) * 100) and r.value < 0
    assert row(s, "baseline", "stress", "vm.wall_time.overhead").value < 0
    # the other kernels are now measured against the slow kernel
    assert row(s, "packed", "micro", "pages_o0_alloc.p50.overhead").value == pytest.approx((1071 / 1401 - 1) * 100)


def test_csv_columns_and_determinism(good, tmp_path):
    run, s = good
    text = summarize.csv_text(s)
    rd = list(csv.reader(io.StringIO(text)))
    assert rd[0] == ["kernel", "workload", "metric", "unit", "value", "ci_low", "ci_high",
                     "spread_low", "spread_high", "n_boots", "note"]
    assert all(len(r) == 11 for r in rd)
    assert text == summarize.csv_text(summarize.summarize(run))
    assert summarize.json_text(s) == summarize.json_text(summarize.summarize(run))
    line = next(r for r in rd if r[:3] == ["baseline", "micro", "pages_o0_alloc.p50.overhead"])
    assert line[4] == summarize.fmt((1401 / 1001 - 1) * 100) == "39.96004"
    assert summarize.fmt(2147483648.0) == "2147483648" and summarize.fmt(-1e-9) == "0"


def test_kvm_run_has_bootstrap_cis(tmp_path):
    s = summarize.summarize(load.load_run(synth.make_run(
        tmp_path, synth.Spec(timing="kvm", reps=5, workloads=("micro",)))))
    r = row(s, "baseline", "micro", "pages_o0_alloc.p50.overhead")
    # off 1000, 1002, 1010, 1003, 1005 -> median 1003; baseline 1400, 1402, 1410, 1403, 1405
    assert r.value == pytest.approx((1403 / 1003 - 1) * 100)
    assert r.ci_low < r.value < r.ci_high and r.ci_low >= r.spread_low and r.ci_high <= r.spread_high
    assert row(s, "off", "micro", "pages_o0_alloc.p50").unit == "ns"


def test_tcg_allowed_is_labelled_relative_only(tmp_path):
    run = load.load_run(synth.make_run(tmp_path, synth.Spec(timing="tcg", workloads=("micro", "mem"))),
                        allow_tcg=True)
    s = summarize.summarize(run)
    r = row(s, "baseline", "micro", "pages_o0_alloc.p50.overhead")
    assert "relative only" in r.note
    assert "relative only" in row(s, "off", "micro", "pages_o0_alloc.p50").unit
    assert "relative only" not in row(s, "baseline", "mem-m1024", "page_ext_bytes").note


def test_icount_determinism_is_checked_per_metric(tmp_path):
    # boots that agree: spread notes, no warning for micro latencies
    s = summarize.summarize(load.load_run(synth.make_run(
        tmp_path / "a", synth.Spec(workloads=("micro",), jitter=False))))
    assert not any("disagree" in w for w in s.warnings), s.warnings
    assert "icount is deterministic" in row(s, "baseline", "micro", "pages_o0_alloc.p50").note
    # boots that disagree under icount: flagged by name, no spread-as-exact claim
    s = summarize.summarize(load.load_run(synth.make_run(
        tmp_path / "b", synth.Spec(workloads=("micro",), jitter=True))))
    w = [w for w in s.warnings if w.startswith("micro: boots of one kernel disagree")]
    assert len(w) == 1 and "kmalloc_64_alloc.p50 (off, baseline" in w[0] and "R >= 5" in w[0], s.warnings
    r = row(s, "baseline", "micro", "pages_o0_alloc.p50")
    assert "boots disagree" in r.note and "icount is deterministic" not in r.note


def test_fio_that_allocates_no_pages_is_flagged(tmp_path):
    run = synth.make_run(tmp_path, synth.Spec(workloads=("fio",)))
    for v in (run / "boots").glob("packed--fio--*/result/vmstat-after.txt"):
        v.write_text((v.parent / "vmstat-before.txt").read_text())
    s = summarize.summarize(load.load_run(run))
    assert any("fio allocated no pages" in w and "packed--fio" in w for w in s.warnings), s.warnings
    assert not any("fio allocated no pages" in w and "off--fio" in w for w in s.warnings)


def test_peer_kernels_are_compared_with_their_own_off(tmp_path):
    run = load.load_run(synth.make_run(tmp_path, synth.Spec(
        kernels=synth.KERNELS + synth.PEER_KERNELS, workloads=("micro", "mem"), jitter=False)))
    s = summarize.summarize(run)
    # up-off pair 1200 + 600; up-pageext 1560 + 780: +540, +30% (vs 6.12 off it would be +56%)
    assert row(s, "up-pageext", "micro", "pages_o0_pair.p50.delta").value == 540
    assert row(s, "up-pageext", "micro", "pages_o0_pair.p50.overhead").value == pytest.approx(30.0)
    # nopf of the peer tree is up-nopf: absent here, so no delta_nopf row at all
    assert s.get("up-pageext", "micro", "pages_o0_pair.p50.delta_nopf") is None
    assert s.get("up-off", "micro", "pages_o0_pair.p50.delta") is None
    # memory from upstream's own page_ext allocation line
    assert row(s, "up-pageext", "mem-m1024", "page_ext_bytes").value == 8 * 262144
    r = row(s, "up-compressed", "mem-m1024", "page_ext_bytes")
    assert r.value == 0 and "no page_ext allocated" in r.note
    assert row(s, "up-pageext", "mem-m8192", "memfree_kb.delta").value == -(2100 - 100) - 16384


def test_peer_without_its_off_is_refused(tmp_path):
    with pytest.raises(load.AnalysisError, match="no 'up-off' kernel"):
        load.load_run(synth.make_run(tmp_path, synth.Spec(kernels=("off", "up-pageext"), workloads=("micro",))))


def test_cache_model_rows_and_pairs(tmp_path):
    s = summarize.summarize(load.load_run(synth.make_run(tmp_path, synth.Spec(
        workloads=("micro",), jitter=False, cache=True))))
    # batch pair = alloc mean + free mean: off 0 + 1; baseline 0.5 + 1.5
    assert row(s, "off", "micro", "cache.pages_o0_batch_pair.llc_miss.mean").value == 1.0
    assert row(s, "baseline", "micro", "cache.pages_o0_batch_pair.llc_miss.mean.delta").value == 1.0
    assert row(s, "packed", "micro", "cache.pages_o0_batch_pair.llc_miss.mean.delta").value == 0.0
    assert row(s, "baseline", "micro", "cache.pages_o0_batch_free.est_cycles.p50.delta").value == \
        (1400 // 2 - 5 + 1.5 * 200 // 1) - (500 - 5 + 200)
    assert "cache model: l1=48K/12" in row(s, "off", "micro", "cache.pages_o0_alloc.insns.p50").note


def test_roles_come_from_the_runs_kernel_table(tmp_path):
    """A group the analysis has never heard of (say Linux 7.3 with this
    project's series) is compared within itself, from the manifest alone."""
    spec = synth.Spec(kernels=synth.KERNELS + ("x-off", "x-nopf", "x-pageext", "x-packed"),
                      workloads=("micro",), jitter=False,
                      data_of={"x-off": "up-off", "x-nopf": "up-off", "x-pageext": "up-pageext",
                               "x-packed": "up-compressed"},
                      extra="x-off up-off x - noprof\n"
                            "x-nopf up x x-off nopf sysctl.vm.mem_profiling=0\n"
                            "x-pageext up x x-off pageext\n"
                            "x-packed up x x-off flags\n")
    run = synth.make_run(tmp_path, spec)
    s = summarize.summarize(load.load_run(run))
    # x-off pair 1200 + 600; x-pageext 1560 + 780: +540 against x-off, not against 6.12's off
    assert row(s, "x-pageext", "micro", "pages_o0_pair.p50.delta").value == 540
    assert row(s, "x-packed", "micro", "pages_o0_pair.p50.delta_nopf").value == \
        row(s, "x-packed", "micro", "pages_o0_pair.p50.delta").value
    assert s.get("x-off", "micro", "pages_o0_pair.p50.delta") is None
    assert s.get("x-nopf", "micro", "pages_o0_pair.p50.delta_nopf") is None


def test_run_without_kernel_table_reads_bench_kernels(tmp_path):
    """Runs recorded before the manifest had the table (the reference run
    20261204-202248) get their roles from bench/kernels of the checkout."""
    spec = dict(kernels=synth.KERNELS + synth.PEER_KERNELS, workloads=("micro", "mem"), jitter=False)
    old = summarize.csv_text(summarize.summarize(load.load_run(
        synth.make_run(tmp_path / "old", synth.Spec(table=False, **spec)))))
    new = summarize.csv_text(summarize.summarize(load.load_run(synth.make_run(tmp_path / "new", synth.Spec(**spec)))))
    assert old == new and ".delta_nopf" in old


def test_label_missing_from_the_table_is_a_one_line_error(tmp_path):
    import json
    run = synth.make_run(tmp_path, synth.Spec(workloads=("mem",), reps=1))
    m = json.loads((run / "manifest.json").read_text())
    m["kernel_table"] = [k for k in m["kernel_table"] if k["label"] != "packed-ext16"]
    (run / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(load.AnalysisError, match="kernel 'packed-ext16' is not in the run's kernel table") as e:
        load.load_run(run)
    assert "\n" not in str(e.value)
