"""The cache model of bench/qemu-plugin, through its test driver model-check
(the same cachemodel.c the plugin links), on traces whose misses are known."""

import os
import subprocess

import pytest

from bench import parse
from bench.workloads.micro import parse as micro
from tests.guest import REPO

BUILD_DIR = os.environ.get("BUILD_DIR", "/var/tmp/alloctag-build")
CHECK = os.path.join(BUILD_DIR, "qemu-plugin", "model-check")
FIELDS = ("label", "insns", "loads", "stores", "lines", "l1", "l2", "llc", "split", "cycles")
# One pytest worker builds the driver (tests/run): two makes of one file race.
pytestmark = pytest.mark.xdist_group("cachemodel")


@pytest.fixture(scope="module", autouse=True)
def driver():
    subprocess.run(["make", "-s", "-C", str(REPO / "bench/qemu-plugin"), f"BUILD_DIR={BUILD_DIR}",
                    CHECK], check=True)


def run(trace: str) -> list[dict]:
    r = subprocess.run([CHECK], input=trace, capture_output=True, text=True, check=True)
    return [dict(zip(FIELDS, map(int, ln.split()))) for ln in r.stdout.splitlines()]


def seq(base: int, nbytes: int, stride: int = 64, op: str = "L") -> str:
    return "".join(f"{op} {base + i:x} 8\n" for i in range(0, nbytes, stride))


def test_cold_lines_miss_everywhere_then_hit():
    w = run("S 1\n" + seq(0, 32 << 10) + "E\nS 2\n" + seq(0, 32 << 10) + "E\n")
    assert (w[0]["lines"], w[0]["l1"], w[0]["l2"], w[0]["llc"]) == (512, 512, 512, 512)
    assert (w[1]["lines"], w[1]["l1"], w[1]["l2"], w[1]["llc"]) == (512, 0, 0, 0)


def test_a_set_larger_than_l1_hits_in_l2():
    # 64 KiB streamed twice through a 48 KiB LRU L1: every line misses L1
    # again, none misses the 2 MiB L2.
    w = run(seq(0, 64 << 10) + "S 1\n" + seq(0, 64 << 10) + "E\n")
    assert (w[0]["l1"], w[0]["l2"], w[0]["llc"]) == (1024, 0, 0)


def test_lru_evicts_the_least_recently_used_way():
    # one set of 16 ways: lines 0..15, touch 0, then 16 evicts 1, not 0
    p = "P l1_kib=1 l1_ways=16 l2_kib=1 l2_ways=16 llc_kib=1 llc_ways=16\n"
    t = p + seq(0, 16 * 64) + "L 0 8\nL 400 8\nS 1\nL 0 8\nE\nS 2\nL 40 8\nE\n"
    w = run(t)
    assert w[0]["l1"] == 0   # line 0 was used recently: kept in L1
    assert w[1]["l1"] == 1   # line 1 was L1's LRU way: evicted by line 16
    # L2 saw line 0 only once (the later L1 hit never reached it), so there
    # line 16 evicted line 0 and line 1 is still cached: levels are filled
    # on misses only, not inclusive.
    assert (w[1]["l2"], w[1]["llc"]) == (0, 0)


def test_line_crossing_access_touches_two_lines():
    w = run("S 1\nW 3c 8\nE\n")
    assert (w[0]["stores"], w[0]["lines"], w[0]["split"], w[0]["llc"]) == (1, 2, 1, 2)


def test_estimated_cycles_follow_the_documented_penalties():
    p = "P pen_l2=10 pen_llc=100 pen_mem=1000\n"
    # one line from memory, one from L2 (evicted from L1 only), 5 instructions
    t = (p + "L 0 8\n" + seq(1 << 20, 64 << 10) + "S 1\nI 5\nL 0 8\nL 4000000 8\nE\n")
    w = run(t)
    assert (w[0]["l1"], w[0]["l2"], w[0]["llc"]) == (2, 1, 1)
    assert w[0]["cycles"] == 5 + 10 + 1000


def test_bad_parameters_are_refused():
    r = subprocess.run([CHECK], input="P l1_kib=48 l1_ways=7\nS 1\nE\n", capture_output=True, text=True)
    assert r.returncode == 2 and "l1=48K/7-way" in r.stderr


def test_plugin_output_parses_and_labels_name_ops():
    text = ("# cachesim l1=48K/12 l2=2048K/16 llc=4096K/16 pen_l2=14 pen_llc=50 pen_mem=200 windows=2\n"
            "label,metric,count,min,p50,p90,p99,mean,max\n"
            "3,llc_miss,2,0,1,1,1,0.5,1\n# end\n")
    params, by_label = parse.cachesim(text)
    assert params["llc"] == "4096K/16" and by_label[3]["llc_miss"].mean == 0.5
    ops = micro.bench_labels("#label 0 pages_o0\n#label 16 pages_o1\n")
    assert micro.window_name(3, ops) == "pages_o0_batch_free"
    assert micro.window_name(16, ops) == "pages_o1_alloc"
    assert micro.window_name(5, ops) == "pages_o0_parallel_free"
    assert micro.window_name(32, ops) is None
    with pytest.raises(parse.ParseError):
        parse.cachesim(text.replace("# end\n", ""))
    with pytest.raises(parse.ParseError):
        parse.cachesim(text.replace("0,1,1,1,0.5,1", "2,1,1,1,0.5,1"))
