"""Reader of bench/kernels, the one table of kernel labels and their roles.

Every consumer reads the table through this module: the Makefile and the
bench/ scripts through its command line, the analysis through the copy
bench/run-bench puts into each run's manifest.json ("kernel_table"), the
tests directly.

    python3 -m bench.kernels check [LABEL...]        validate (and the labels); silent if fine
    python3 -m bench.kernels labels                  labels a benchmark run boots by default
    python3 -m bench.kernels variants [--bench|--peer|--test] [LABEL...]
                                                     variants to build, each once, in table order
    python3 -m bench.kernels field LABEL FIELD       variant, group, ref, roles, args or workloads
    python3 -m bench.kernels runs LABEL WORKLOAD     exit 0 if LABEL runs WORKLOAD
    python3 -m bench.kernels is-peer LABEL           exit 0 if LABEL is an upstream peer kernel
    python3 -m bench.kernels static-ref VARIANT      variant its static instruction counts are against
    python3 -m bench.kernels json                    the parsed table, as run-bench records it

Bad input (unknown label, malformed line) is one "error: ..." line on stderr
and exit status 1."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from bench import workloads as wl_registry

REPO = Path(__file__).resolve().parent.parent
TABLE = REPO / "bench" / "kernels"
VARIANTS = REPO / "bench" / "build" / "variants"

# Roles a label can play (the header of bench/kernels says what each means).
# Those in GROUP_ROLES name at most one label per group: the analysis finds
# "the nopf kernel of this group" through them.
GROUP_ROLES = ("noprof", "nopf", "pageext", "flags", "flags-nopf", "ext16", "numa",
               "series", "series-nopf", "series-step", "tagoff", "keyon")
ROLES = GROUP_ROLES + ("peer", "test", "test-only")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
NONE = "-"


class KernelsError(Exception):
    """Bad table or unknown label; str() is one line naming the file and line."""


@dataclass(frozen=True)
class Kernel:
    label: str
    variant: str
    group: str
    ref: str | None               # label its overheads are against; None: it is a reference
    roles: tuple[str, ...]
    args: tuple[str, ...]         # extra kernel command line
    workloads: tuple[str, ...] | None  # None: every workload

    @property
    def reference(self) -> str:
        """The label this one is measured against (itself for a reference)."""
        return self.ref or self.label

    @property
    def peer(self) -> bool:
        return "peer" in self.roles

    @property
    def bench(self) -> bool:
        return "test-only" not in self.roles

    @property
    def test(self) -> bool:
        return "test" in self.roles or "test-only" in self.roles

    def runs(self, workload: str) -> bool:
        """Whether the label boots the workload: the ones its "@" list names,
        or without one every workload but those that are opt-in."""
        if self.workloads is not None:
            return workload in self.workloads
        return not wl_registry.get(workload).opt_in

    def to_json(self) -> dict:
        d = asdict(self)
        d["roles"], d["args"] = list(self.roles), list(self.args)
        d["workloads"] = None if self.workloads is None else list(self.workloads)
        return d


class Table:
    """The labels of bench/kernels, in table order (the order boots interleave)."""

    def __init__(self, kernels: list[Kernel], source: str = "bench/kernels"):
        self.kernels = list(kernels)
        self.source = source
        self._by = {k.label: k for k in self.kernels}

    def __contains__(self, label: object) -> bool:
        return label in self._by

    def __iter__(self):
        return iter(self.kernels)

    def get(self, label: str) -> Kernel:
        k = self._by.get(label)
        if k is None:
            raise KernelsError(f"{self.source}: unknown kernel label '{label}' "
                               f"(labels: {', '.join(self.labels())})")
        return k

    def labels(self, bench_only: bool = False) -> list[str]:
        return [k.label for k in self.kernels if k.bench or not bench_only]

    def groups(self) -> list[str]:
        return list(dict.fromkeys(k.group for k in self.kernels))

    @property
    def main_group(self) -> str:
        """The project's own group: the first line's (its roles are the ones
        the report's targets and the cover letter name)."""
        return self.kernels[0].group

    @property
    def peer_group(self) -> str | None:
        return next((k.group for k in self.kernels if k.peer), None)

    def role(self, role: str, group: str | None) -> str | None:
        """The label playing role in group, if any."""
        return next((k.label for k in self.kernels if k.group == group and role in k.roles), None)

    def counterpart(self, label: str, role: str) -> str | None:
        """The label playing role in label's own group (e.g. its nopf kernel)."""
        return self.role(role, self.get(label).group)

    def static_ref(self, variant: str) -> str:
        """The variant a variant's static instruction counts are against: that of
        the group's kernel without profiling (noprof), or for a group without one
        (e.g. a distro layout only built with profiling) that of the main group,
        or of the peer's group for a peer kernel (its tree)."""
        labels = [k for k in self.kernels if k.variant == variant]
        if not labels:
            raise KernelsError(f"{self.source}: no kernel label boots variant '{variant}'")
        home = self.peer_group if labels[0].peer else self.main_group
        ref = self.counterpart(labels[0].label, "noprof") or self.role("noprof", home)
        if ref is None:
            raise KernelsError(f"{self.source}: no 'noprof' kernel for variant '{variant}'")
        return self.get(ref).variant

    def variants(self, labels: list[str] | None = None, which: str = "all") -> list[str]:
        """Variants to build for labels (default: all), each once, in table
        order; with labels, also those of their references, which their
        figures need."""
        if labels:
            want = {x for k in map(self.get, labels) for x in (k.label, k.reference)}
            want |= {k.label for k in self.kernels
                     if k.variant in {self.static_ref(self.get(x).variant) for x in labels}}
            ks = [k for k in self.kernels if k.label in want]
        else:
            ks = self.kernels
        sel = {"all": lambda k: True, "bench": lambda k: k.bench and not k.peer,
               "peer": lambda k: k.peer, "test": lambda k: k.test}[which]
        return list(dict.fromkeys(k.variant for k in ks if sel(k)))

    def to_json(self) -> list[dict]:
        return [k.to_json() for k in self.kernels]

    def dumps(self) -> str:
        """The table as JSON text, as each run records it (kernels.json)."""
        return json.dumps(self.to_json(), indent=1)


def _names(path: Path) -> set[str] | None:
    """First words of a table file's lines (bench/build/variants), None if it is absent."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    return {ln.split()[0] for ln in text.splitlines() if ln.strip() and not ln.startswith("#")}


def parse(text: str, source: str = "bench/kernels", variants: set[str] | None = None,
          workloads: set[str] | None = None) -> Table:
    """Parse the table's text.  Columns: label variant group ref roles, then
    boot arguments and at most one "@w1,w2" workload limit; "-" is empty."""
    kernels: list[Kernel] = []
    seen: dict[str, int] = {}
    lines: dict[str, int] = {}
    for n, ln in enumerate(text.splitlines(), 1):
        if not ln.strip() or ln.lstrip().startswith("#"):
            continue
        where = f"{source}:{n}"
        f = ln.split()
        if len(f) < 5:
            raise KernelsError(f"{where}: expected 'label variant group ref roles [args] [@workloads]', "
                               f"got {ln.strip()!r}")
        label, variant, group, ref, roles = f[:5]
        for what, v in (("label", label), ("variant", variant), ("group", group)):
            if not _NAME.match(v) or v == NONE:
                raise KernelsError(f"{where}: bad {what} {v!r}")
        if label in seen:
            raise KernelsError(f"{where}: label '{label}' already defined on line {seen[label]}")
        seen[label] = n
        if variants is not None and variant not in variants:
            raise KernelsError(f"{where}: unknown variant '{variant}' of '{label}' (see bench/build/variants)")
        rs = () if roles == NONE else tuple(roles.split(","))
        for r in rs:
            if r not in ROLES:
                raise KernelsError(f"{where}: unknown role '{r}' of '{label}' (roles: {', '.join(ROLES)})")
        limits = [x for x in f[5:] if x.startswith("@")]
        if len(limits) > 1:
            raise KernelsError(f"{where}: more than one '@workloads' token for '{label}'")
        only = tuple(limits[0][1:].split(",")) if limits else None
        for w in only or ():
            if not w or (workloads is not None and w not in workloads):
                raise KernelsError(f"{where}: unknown workload '{w}' of '{label}' (see bench/workloads/)")
        kernels.append(Kernel(label, variant, group, None if ref == NONE else ref, rs,
                              tuple(x for x in f[5:] if not x.startswith("@")), only))
        lines[label] = n
    if not kernels:
        raise KernelsError(f"{source}: no kernel labels")
    table = Table(kernels, source)
    taken: dict[tuple[str, str], str] = {}
    for k in kernels:
        where = f"{source}:{lines[k.label]}"
        if k.ref is not None:
            if k.ref not in table:
                raise KernelsError(f"{where}: reference '{k.ref}' of '{k.label}' is not a label")
            r = table.get(k.ref)
            if r.ref is not None:
                raise KernelsError(f"{where}: reference '{k.ref}' of '{k.label}' is itself measured "
                                   f"against '{r.ref}' (give it ref '-')")
            if r.group != k.group:
                raise KernelsError(f"{where}: reference '{k.ref}' of '{k.label}' is in group "
                                   f"'{r.group}', not '{k.group}'")
        for role in k.roles:
            if role in GROUP_ROLES:
                if (k.group, role) in taken:
                    raise KernelsError(f"{where}: group '{k.group}' has two '{role}' kernels: "
                                       f"'{taken[k.group, role]}' and '{k.label}'")
                taken[k.group, role] = k.label
    return table


def read(path: Path = TABLE) -> Table:
    """bench/kernels of this checkout, checked against bench/build/variants and
    bench/workloads/."""
    try:
        text = path.read_text()
    except OSError as e:
        raise KernelsError(f"{path}: unreadable: {e.strerror}") from None
    try:
        wl = set(wl_registry.names())
    except wl_registry.WorkloadError as e:
        raise KernelsError(str(e)) from None
    try:
        name = str(path.relative_to(REPO))
    except ValueError:
        name = str(path)
    return parse(text, name, _names(VARIANTS), wl)


def from_json(rows: object, source: str) -> Table:
    """A table as run-bench recorded it in a manifest ("kernel_table")."""
    if not isinstance(rows, list) or not rows:
        raise KernelsError(f"{source}: kernel_table is not a list of kernels")
    out = []
    for i, d in enumerate(rows):
        try:
            wl = d["workloads"]
            out.append(Kernel(str(d["label"]), str(d["variant"]), str(d["group"]),
                              None if d["ref"] is None else str(d["ref"]), tuple(map(str, d["roles"])),
                              tuple(map(str, d["args"])), None if wl is None else tuple(map(str, wl))))
        except (KeyError, TypeError) as e:
            raise KernelsError(f"{source}: kernel_table[{i}] is malformed ({e})") from None
    return Table(out, source)


def main(argv: list[str]) -> int:
    usage = ("usage: python3 -m bench.kernels check|labels|variants|field|runs|is-peer|static-ref|json ...")
    if not argv:
        print(f"error: {usage}", file=sys.stderr)
        return 1
    cmd, args = argv[0], argv[1:]
    try:
        t = read()
        if cmd == "check":
            for x in args:
                t.get(x)
        elif cmd == "labels":
            print(" ".join(t.labels(bench_only=True)))
        elif cmd == "variants":
            which = "all"
            if args and args[0] in ("--bench", "--peer", "--test"):
                which, args = args[0][2:], args[1:]
            print(" ".join(t.variants(args, which)))
        elif cmd == "field" and len(args) == 2:
            k = t.get(args[0])
            v = {"variant": k.variant, "group": k.group, "ref": k.reference, "roles": ",".join(k.roles),
                 "args": " ".join(k.args), "workloads": ",".join(k.workloads or ())}.get(args[1])
            if v is None:
                raise KernelsError(f"unknown field '{args[1]}' (variant, group, ref, roles, args, workloads)")
            print(v)
        elif cmd == "runs" and len(args) == 2:
            return 0 if t.get(args[0]).runs(args[1]) else 1
        elif cmd == "is-peer" and len(args) == 1:
            return 0 if t.get(args[0]).peer else 1
        elif cmd == "static-ref" and len(args) == 1:
            print(t.static_ref(args[0]))
        elif cmd == "json":
            print(t.dumps())
        else:
            print(f"error: {usage}", file=sys.stderr)
            return 1
    except KernelsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
