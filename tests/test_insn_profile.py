"""bench/insn_profile.py, instructions of one timed op per kernel function, on
a tiny synthetic boot (alloc_bench.csv, cachesim.csv, pcs.csv) and
System.map: its table, and one line "insn_profile: <what> <path>: <reason>"
for a missing or malformed input, never a traceback."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

ALLOC_BENCH = "# alloc_bench samples=10\n#label 0 pages_o0\n#label 16 ksite_pages_o0\nop,cpu,...\n# end\n"
CACHESIM = ("# cachesim l1=48K/12 l2=2048K/16 llc=4096K/16 windows=20\n"
            "label,metric,count,min,p50,p90,p99,mean,max\n"
            "0,insns,10,40,40,40,40,40.0,40\n"
            "16,insns,10,50,50,50,50,50.0,50\n"
            "# end\n")
# op pages_o0_alloc is window label 0: ten windows, 400 instructions
PCS = ("label,pc,count\n"
       "0,0xffffffff81000010,150\n0,0xffffffff81000020,50\n"   # __free_pages
       "0,0xffffffff81000110,120\n"                             # ___free_pages
       "0,0xffffffffc0001000,80\n"                              # a module
       "16,0xffffffff81000010,500\n")                           # another op
SYSTEM_MAP = ("ffffffff81000000 T __free_pages\nffffffff81000100 t ___free_pages\n"
              "ffffffff81000180 D some_data\nffffffff81000200 T _etext\n")


@pytest.fixture
def boot(tmp_path):
    b = tmp_path / "boot"
    (b / "result").mkdir(parents=True)
    (b / "result" / "alloc_bench.csv").write_text(ALLOC_BENCH)
    (b / "cachesim.csv").write_text(CACHESIM)
    (b / "pcs.csv").write_text(PCS)
    (tmp_path / "System.map").write_text(SYSTEM_MAP)
    return b


def profile(*specs: str, op: str = "pages_o0_alloc") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bench.insn_profile", op, *specs], cwd=REPO,
                          capture_output=True, text=True)


def test_instructions_per_function(boot):
    r = profile(f"{boot}:{boot.parent}/System.map")
    assert r.returncode == 0, r.stderr
    assert r.stdout == ("function,boot\n__free_pages,20.0\n___free_pages,12.0\n[module],8.0\n"
                        "total,40.0\n")


@pytest.mark.parametrize("remove, what", [
    ("", "boot directory {boot}"),
    ("result/alloc_bench.csv", "alloc_bench.csv {boot}/result/alloc_bench.csv"),
    ("cachesim.csv", "cachesim.csv {boot}/cachesim.csv"),
    ("pcs.csv", "pcs.csv {boot}/pcs.csv"),
    ("../System.map", "System.map {boot}/../System.map"),
])
def test_missing_input_is_one_line(boot, remove, what):
    p = boot / remove
    if p.is_dir():
        subprocess.run(["rm", "-r", str(p)], check=True)
    else:
        p.unlink()
    r = profile(f"{boot}:{boot}/../System.map")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == f"insn_profile: {what.format(boot=boot)}: No such file or directory\n"


@pytest.mark.parametrize("name, text, what, reason", [
    ("../System.map", "ffffffff81000000 T __free_pages\nnot an address T foo\n", "System.map",
     "line 2: not a System.map line: 'not an address T foo'"),
    ("../System.map", "ffffffff81000180 D some_data\n", "System.map", "no text symbols"),
    ("../System.map", "\x80\x81 binary\n", "System.map", "not a text file"),
    ("pcs.csv", "label,pc,count\n0,0xffffffff81000010,150\n0,zzz,5\n", "pcs.csv",
     "line 3: malformed line: '0,zzz,5'"),
    ("pcs.csv", "pc,count\n0x1,5\n", "pcs.csv", "no 'label,pc,count' header"),
    ("pcs.csv", "label,pc,count\n16,0xffffffff81000010,500\n", "pcs.csv",
     "no PCs of op 'pages_o0_alloc' (window label 0)"),
    ("cachesim.csv", CACHESIM.replace("# end\n", ""), "cachesim.csv",
     "cachesim output is truncated (no '# end' line)"),
    ("cachesim.csv", CACHESIM.replace("0,insns", "1,insns"), "cachesim.csv",
     "no windows of op 'pages_o0_alloc' (window label 0)"),
    ("result/alloc_bench.csv", "#label 16 ksite_pages_o0\n# end\n", "alloc_bench.csv",
     "no window label for op 'pages_o0_alloc'"),
])
def test_malformed_input_is_one_line(boot, name, text, what, reason):
    (boot / name).write_bytes(text.encode("latin-1"))
    r = profile(f"{boot}:{boot}/../System.map")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == f"insn_profile: {what} {boot}/{name}: {reason}\n"


def test_table_of_the_profiled_ops(boot, tmp_path):
    """write_table(): every op of PROFILED_OPS with windows, its functions by
    instructions, those under MIN_INSNS left out; nothing written on error."""
    from bench import insn_profile
    (boot / "pcs.csv").write_text(PCS + "0,0xffffffff81000200,2\n")   # 0.2 per op in _etext
    out = tmp_path / "insn-profile.csv"
    assert insn_profile.write_table(boot, tmp_path / "System.map", out) == 2
    assert out.read_text() == ("op,function,instructions\nksite_pages_o0_alloc,__free_pages,50.00\n"
                               "pages_o0_alloc,__free_pages,20.00\npages_o0_alloc,___free_pages,12.00\n"
                               "pages_o0_alloc,[module],8.00\n")
    out.unlink()
    (boot / "pcs.csv").write_text(PCS + "0,zzz,1\n")
    with pytest.raises(insn_profile.InputError, match="malformed line"):
        insn_profile.write_table(boot, tmp_path / "System.map", out)
    assert list(tmp_path.glob("insn-profile.csv*")) == []


def test_argument_without_system_map_is_one_line(boot):
    r = profile(str(boot))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == f"insn_profile: argument {boot}: expected BOOT:SYSTEM_MAP\n"
