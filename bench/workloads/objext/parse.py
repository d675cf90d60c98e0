"""objext: the slab object extension vectors (patches/packed-slab keeps a
2-byte tag index per object slot in them) after boot and after a
slab-heavy stress-ng run, run by ./job (objext.conf).

Files: allocinfo-boot.txt, slabinfo-boot.txt, allocinfo-after.txt,
slabinfo-after.txt, stress-rc.txt (stress-ng's exit code), stress.log.
Figures, at each point: the vectors' bytes and number (the bytes and calls
of /proc/allocinfo's alloc_slab_obj_exts() line) and bytes per object slot
(of the caches whose vectors carry a tag: bench.parse.obj_ext_vectors).
Kernels without profiling have no /proc/allocinfo, kernels booted with
it off count nothing, kernels without an alloc_slab_obj_exts() call site
have no line for it: no figures, a warning."""

from __future__ import annotations

from bench.parse import ParseError, allocinfo, obj_ext_vectors, slabinfo
from bench.workloads.mem.parse import obj_ext_rows

POINTS = ("boot", "after")


def load(r, warnings: list[str]) -> dict[str, tuple[int, int, int]] | None:
    """{point: (bytes, vectors, object slots)}."""
    rc = r.text("stress-rc.txt").strip()
    if rc != "0":
        raise r.error("stress-rc.txt", f"stress-ng exited with {rc!r} (see stress.log)")
    if not r.exists("allocinfo-boot.txt"):
        warnings.append(f"boot {r.id}: no /proc/allocinfo (kernel without profiling): "
                        "no slab vector figures")
        return None
    if r.exists("sysctl-mem_profiling") and r.text("sysctl-mem_profiling").strip() == "0":
        # Nothing is counted, the vectors memcg allocates neither: a 0
        # there would be no measurement.
        warnings.append(f"boot {r.id}: profiling off at boot (vm.mem_profiling=0): allocinfo "
                        "counts no slab vectors; no slab vector figures")
        return None
    out = {}
    for p in POINTS:
        lines = r.parsed(f"allocinfo-{p}.txt", allocinfo)
        slabs = r.parsed(f"slabinfo-{p}.txt", slabinfo)
        try:
            out[p] = obj_ext_vectors(lines, slabs)
        except ParseError as e:
            # A kernel whose vectors are not allocated by that function
            # (Linux 7.0+ may keep them in a slab's leftover space).
            warnings.append(f"boot {r.id}: allocinfo-{p}.txt: {e}: no slab vector figures")
            return None
    return out


def figures(c, d) -> None:
    for p in POINTS:
        obj_ext_rows(c, d, d.boot.workload, d.data[p], prefix=f"{p}.",
                     when="after boot" if p == "boot" else "after the stress-ng run", rel=("vs_baseline",))
