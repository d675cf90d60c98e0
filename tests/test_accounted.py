"""Accounted vs unaccounted (patches/packed-select) on packed-debug, which has
MEMCG: allocations charged to a memory cgroup and uncharged ones from the
same call sites land in the right part of the counters and go back to zero
(the guest side is bench/guest/jobs/acct, the module tests/kmod/alloctag_acct)."""

from bench import parse
from tests.guest import boot
from tests.test_select import problems
from tests.test_system import module_sites


def acct_boot():
    b = boot("acct-packed-debug", "packed-debug", job="acct", smp=2, tools=True)
    assert b.ok, b.why()
    assert b.file("job.rc").strip() == "0", f"acct job failed, see {b.dir}/result/job.log"
    return b


def expected(b):
    """{line: (site, bytes, calls, accounted bytes, accounted calls)}."""
    slab = int(b.file("slab_size-512.txt"))
    out = {}
    for ln in b.file("expected-acct.txt").splitlines():
        line, site, nbytes, calls, abytes, acalls = ln.split()
        calls, acalls = int(calls), int(acalls)
        nbytes = slab * calls if nbytes == "slab" else int(nbytes)
        abytes = slab * acalls if abytes == "slab" else int(abytes)
        out[int(line)] = (site, nbytes, calls, abytes, acalls)
    assert {s for s, *_ in out.values()} == {"page", "split", "small", "large"}, out
    return out


def test_charged_and_uncharged_allocations_of_one_site_are_kept_apart():
    b = acct_boot()
    assert "step alloc" in b.file("steps.txt")
    # The memcg was charged at all (not the root one, which charges nothing).
    assert int(b.file("memcg-current-alloc.txt")) > 0
    got = module_sites(b, "alloc", "alloctag_acct")
    for line, (site, nbytes, calls, abytes, acalls) in expected(b).items():
        a = got.get(line)
        assert a is not None, f"{site} (line {line}) missing from allocinfo"
        assert (a.bytes, a.calls) == (nbytes, calls), f"{site}: {a}"
        assert a.accounted == (abytes, acalls), f"{site}: accounted {a.accounted}, want {(abytes, acalls)}"


def test_both_parts_go_back_to_zero_when_freed():
    b = acct_boot()
    assert "step free" in b.file("steps.txt") and "step rmmod" in b.file("steps.txt")
    got = module_sites(b, "free", "alloctag_acct")
    assert set(got) == set(expected(b))
    for line, a in got.items():
        assert (a.bytes, a.calls, a.accounted) == (0, 0, None), a
    assert not problems(b), problems(b)


def test_summary_splits_every_site_into_accounted_and_unaccounted():
    b = acct_boot()
    start = parse.allocinfo_accounted(b.file("accounted-start.txt"))
    alloc = parse.allocinfo_accounted(b.file("accounted-alloc.txt"))
    exp = expected(b)
    # At least the test module's charged allocations were added ...
    abytes = sum(e[3] for e in exp.values())
    acalls = sum(e[4] for e in exp.values())
    assert alloc["accounted"][0] - start["accounted"][0] >= abytes
    assert alloc["accounted"][1] - start["accounted"][1] >= acalls
    # ... and the kernel's own allocations are mostly unaccounted (the two
    # files are read one after the other: their sums differ by what the
    # reads allocate, so they are not compared here).
    assert alloc["unaccounted"][0] > alloc["accounted"][0] > 0
    total = parse.allocinfo(b.file("allocinfo-alloc.txt"))
    assert sum(a.accounted[0] for a in total if a.accounted) >= abytes
    # stress-ng in the memcg charges kernel memory while it runs
    if b.file("stress-rc.txt"):
        assert b.file("stress-rc.txt").strip() == "0", b.file("stress.log")
        stress = parse.allocinfo_accounted(b.file("accounted-stress.txt"))
        assert stress["accounted"][0] > start["accounted"][0]
