"""bench/kernels, the one table of kernel labels, and its reader bench/kernels.py:
roles, the variants the Makefile builds, one-line errors for bad input, and
that the analysis names no kernel label of its own."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import kernels, manifest

REPO = Path(__file__).resolve().parent.parent


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bench.kernels", *args], cwd=REPO,
                          capture_output=True, text=True)


def test_table_gives_every_role():
    t = kernels.read()
    assert t.labels()[:2] == ["off", "baseline"] and t.main_group == "6.12" and t.peer_group == "7.3"
    assert t.get("packed").reference == "off" and t.get("off").reference == "off"
    assert t.get("up-pageext").reference == "up-off"
    assert t.get("packed-distro").reference == "packed-distro-nopf"
    assert t.counterpart("packed", "nopf") == "baseline-nopf"
    assert t.counterpart("up-compressed", "nopf") == "up-nopf"
    assert t.counterpart("packed-distro", "nopf") == "packed-distro-nopf"
    assert t.counterpart("packed-distro", "pageext") == "baseline-distro"
    assert t.get("packed-distro-numa").args == ("numa=fake=2",)
    assert t.get("packed-distro-numa").workloads == ("mem",) and not t.get("packed-distro").runs("stress")
    assert [k.label for k in t if k.peer] == ["up-off", "up-nopf", "up-pageext", "up-compressed",
                                             "up-packed", "up-table", "up-packed-nopf",
                                             "up-packed-distro-nopf", "up-packed-distro"]
    assert t.get("up-table").reference == "up-off"
    assert t.get("up-packed-distro").reference == "up-packed-distro-nopf"
    assert t.role("series", "distro-7.3") == "up-packed-distro"
    assert t.get("up-packed").reference == "up-off"
    assert t.role("series", "7.3") == "up-packed" and t.role("series-nopf", "7.3") == "up-packed-nopf"
    assert "packed-debug" not in t.labels(bench_only=True)


def test_variants_the_makefile_builds():
    assert cli("variants", "--bench").stdout.split() == ["off", "baseline", "packed", "packed-cmpxchg",
                                                         "packed-distro", "baseline-distro"]
    assert cli("variants", "--peer").stdout.split() == ["up-off", "up", "up-packed", "up-table",
                                                        "up-packed-distro"]
    assert cli("variants", "--test").stdout.split() == ["off", "baseline", "packed", "packed-debug",
                                                        "up-packed", "up-packed-distro"]
    # a label's figures need its reference, and its static counts their noprof kernel
    assert cli("variants", "--bench", "packed-distro").stdout.split() == ["off", "packed-distro"]
    assert cli("variants", "--peer", "up-pageext").stdout.split() == ["up-off", "up"]
    # a peer group without a noprof kernel counts against the peer's tree
    assert [cli("static-ref", v).stdout.strip()
            for v in ("packed", "packed-distro", "up", "up-packed-distro")] == \
        ["off", "off", "up-off", "up-off"]
    out = subprocess.run(["make", "-n", "--no-print-directory", "test-kernels"], cwd=REPO,
                         capture_output=True, text=True).stdout
    assert "for v in off baseline packed packed-debug up-packed up-packed-distro;" in out


def test_up_table_is_the_7_3_series_up_to_the_index_table():
    """The attribution tree stops right before the inline hooks: a renumbered
    series must move "packed-refs-7.3:N" in bench/lib.sh with it."""
    r = subprocess.run(["sh", "-c", '. "$0"; tree_patches up-table', str(REPO / "bench/lib.sh")],
                       cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    series = [ln for ln in (REPO / "patches/packed-refs-7.3/series").read_text().splitlines()
              if ln.strip() and not ln.startswith("#")]
    own = [Path(p).name for p in r.stdout.split() if "/packed-refs-7.3/" in p]
    assert own == series[:len(own)] and own, own
    assert "map-page-tag-indexes-through-a-table" in own[-1], own[-1]
    assert "inline-page-allocator-hooks" in series[len(own)], series[len(own)]


def test_shell_scripts_read_the_table_through_the_cli():
    assert cli("field", "packed-ext16", "variant").stdout == "packed\n"
    assert cli("field", "up-compressed", "args").stdout == "sysctl.vm.mem_profiling=1,compressed\n"
    assert [cli("runs", "packed-distro", w).returncode for w in ("stress", "mem")] == [1, 0]
    assert [cli("is-peer", x).returncode for x in ("up-off", "off")] == [0, 1]



@pytest.mark.parametrize("text, msg", [
    ("off off 6.12 -\n", "t:1: expected 'label variant group ref roles"),
    ("off off 6.12 - -\noff off 6.12 - -\n", "t:2: label 'off' already defined on line 1"),
    ("off nope 6.12 - -\n", "t:1: unknown variant 'nope' of 'off'"),
    ("off off 6.12 - -\nb baseline 7.3 off -\n", "t:2: reference 'off' of 'b' is in group '6.12', not '7.3'"),
    ("off off 6.12 - -\nb baseline 6.12 up-off -\n", "t:2: reference 'up-off' of 'b' is not a label"),
    ("off off 6.12 - -\nb baseline 6.12 off pagext\n", "t:2: unknown role 'pagext' of 'b'"),
    ("off off 6.12 - nopf\nb baseline 6.12 off nopf\n", "t:2: group '6.12' has two 'nopf' kernels"),
    ("off off 6.12 - - @micro @mem\n", "t:1: more than one '@workloads' token"),
    ("off off 6.12 - - @mikro\n", "t:1: unknown workload 'mikro' of 'off'"),
])
def test_bad_table_is_a_one_line_error(text, msg):
    with pytest.raises(kernels.KernelsError) as e:
        kernels.parse(text, "t", {"off", "baseline"}, {"micro", "mem"})
    assert str(e.value).startswith(msg) and "\n" not in str(e.value)


def test_unknown_label_is_a_one_line_error_before_any_build():
    r = cli("check", "off", "packd")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("error: bench/kernels: unknown kernel label 'packd'") and r.stderr.count("\n") == 1
    # Not the make of "make test": its MAKEFLAGS would print directories.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    r = subprocess.run(["make", "--no-print-directory", "-n", "kernels", "KERNELS=off packd"],
                       cwd=REPO, capture_output=True, text=True, env=env)
    assert r.returncode != 0 and r.stdout == ""
    assert "unknown kernel label 'packd'" in r.stderr and r.stderr.count("\n") == 1


def test_run_manifest_carries_the_table_parsed_at_run_start(tmp_path):
    run = tmp_path / "r"
    (run / "boots").mkdir(parents=True)
    (run / "boots.jsonl").write_text("")
    (run / "kernels.json").write_text(cli("json").stdout)
    assert manifest.main([str(run), "0", "icount", "1", "1", "complete", "off"]) == 0
    m = json.loads((run / "manifest.json").read_text())
    t = kernels.from_json(m["kernel_table"], "manifest")
    assert [k.to_json() for k in t] == [k.to_json() for k in kernels.read()]


def _labels_in(path: Path, labels: set[str]) -> list[str]:
    tree = ast.parse(path.read_text())
    return [f"{path.name}:{n.lineno}: {n.value!r}" for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in labels]


def test_analysis_names_no_kernel_label():
    """Roles come from the run's table: a kernel label spelled in analysis/*.py
    is a second list that the next new kernel forgets."""
    labels = set(kernels.read().labels())
    found = [x for p in sorted((REPO / "analysis").glob("*.py")) for x in _labels_in(p, labels)]
    assert not found, "kernel labels in analysis/*.py: " + "; ".join(found)


@pytest.mark.parametrize("built, rc, verdict", [("0", "", "invalid"), ("1", "1", "caught"), ("1", "0", "MISSED")])
def test_mutation_that_does_not_build_is_invalid_not_caught(built, rc, verdict):
    """tests/mutation-check's verdict: a mutation whose kernel does not build
    ran no test, so it is no evidence that the tests catch it."""
    out = subprocess.run(["sh", "-c", f'. ./bench/lib.sh; mutation_verdict "{built}" "{rc}"', "bench/sh"],
                         cwd=REPO, capture_output=True, text=True).stdout
    assert out.strip() == verdict
    script = (REPO / "tests" / "mutation-check").read_text()
    assert "mutation_verdict" in script and '"caught  $m: kernel' not in script


def test_run_archives_each_kernels_config(tmp_path, capsys):
    """Issue 25 item 4: which options two kernels differ in, from the run alone."""
    import gzip
    import hashlib
    from analysis import configs
    build = tmp_path / "build"
    for v, extra in (("off", "# CONFIG_MEM_ALLOC_PROFILING is not set\n"),
                     ("packed", "CONFIG_MEM_ALLOC_PROFILING=y\nCONFIG_NR_CPUS=64\n")):
        (build / "out" / v).mkdir(parents=True)
        (build / "out" / v / ".config").write_text("CONFIG_MMU=y\n" + extra)
    run = tmp_path / "run"
    (run / "boots").mkdir(parents=True)
    (run / "boots.jsonl").write_text("")
    assert manifest.archive_configs(run, build, ["off", "packed", "up"]) == ["up"]
    first = (run / "configs" / "packed.config.gz").read_bytes()
    manifest.archive_configs(run, build, ["packed"])
    assert (run / "configs" / "packed.config.gz").read_bytes() == first  # no date in the gzip header
    assert manifest.main([str(run), "0", "icount", "1", "1", "running", "off"]) == 0
    m = json.loads((run / "manifest.json").read_text())
    want = hashlib.sha256((build / "out" / "packed" / ".config").read_bytes()).hexdigest()
    assert m["configs"]["packed"]["sha256"] == want and m["configs"]["packed"]["file"] == "configs/packed.config.gz"
    assert configs.main([str(run), "off", "packed"]) == 0
    assert capsys.readouterr().out.splitlines() == ["CONFIG_MEM_ALLOC_PROFILING: n -> y", "CONFIG_NR_CPUS: n -> 64"]
    assert configs.main([str(run), "off", "up"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "up.config.gz" in err and err.count("\n") == 1
    assert gzip.decompress(first).startswith(b"CONFIG_MMU=y")


@pytest.mark.unit
def test_make_n_bench_all_runs_nothing(tmp_path):
    """make -n is a dry run: a recipe line with $(MAKE) in it is run even
    under -n, so bench-all must not chain run-bench and the plots through
    a recursive make on one line (it once booted real guests)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    env.update(BUILD_DIR=str(tmp_path / "build"), RESULTS_DIR=str(tmp_path / "results"))
    r = subprocess.run(["make", "--no-print-directory", "-n", "bench-all", "PEER=0"],
                       cwd=REPO, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "bench/run-bench" in r.stdout and "analysis.plots" in r.stdout
    assert not (tmp_path / "results").exists() and not (tmp_path / "build" / "out").exists()


@pytest.mark.unit
def test_opt_in_workload_runs_only_where_a_label_names_it():
    """memcg needs MEMCG and patches/packed-select: a label without a
    workload list must not boot it (every such boot failed in
    20261207-004054-quick); a label that names it does."""
    t = kernels.read()
    assert workloads_opt_in() == {"memcg"}
    assert not t.get("packed").runs("memcg") and not t.get("off").runs("memcg")
    assert t.get("packed").runs("objext") and t.get("packed").runs("micro")
    assert t.get("packed-distro").runs("memcg") and not t.get("packed-distro").runs("stress")
    r = cli("runs", "packed", "memcg")
    assert r.returncode == 1


def workloads_opt_in():
    from bench import workloads
    return {n for n, w in workloads.workloads().items() if w.opt_in}
