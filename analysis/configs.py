"""Which kernel config options two kernels differ in, from runs alone
(bench/run-bench archives each variant's .config in results/<run>/configs/).

    /usr/bin/python3 -m analysis.configs results/<run> VARIANT_A VARIANT_B
    /usr/bin/python3 -m analysis.configs results/<run-a> results/<run-b> VARIANT

Prints one line per option that differs ("CONFIG_X: a -> b", "n" for an
option that is not set); exit status 1 with a one-line error when a config
is not archived."""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

from analysis.load import AnalysisError, cli


def options(run: Path, variant: str) -> dict[str, str]:
    """{CONFIG_X: value} of a variant's archived .config; "n" for "is not set"."""
    p = run / "configs" / f"{variant}.config.gz"
    try:
        text = gzip.decompress(p.read_bytes()).decode(errors="replace")
    except FileNotFoundError:
        raise AnalysisError(f"{p}: no archived config (runs before configs/ was recorded have none)") from None
    except (OSError, EOFError) as e:
        raise AnalysisError(f"{p}: unreadable: {e}") from None
    out: dict[str, str] = {}
    for ln in text.splitlines():
        if ln.startswith("CONFIG_") and "=" in ln:
            k, _, v = ln.partition("=")
            out[k] = v
        elif ln.startswith("# CONFIG_") and ln.endswith(" is not set"):
            out[ln[2:-len(" is not set")]] = "n"
    return out


def diff(a: dict[str, str], b: dict[str, str]) -> list[str]:
    return [f"{k}: {a.get(k, 'n')} -> {b.get(k, 'n')}" for k in sorted(set(a) | set(b))
            if a.get(k, "n") != b.get(k, "n")]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv

    def body() -> int:
        if len(args) == 3 and Path(args[1]).is_dir():
            a, b = options(Path(args[0]), args[2]), options(Path(args[1]), args[2])
        elif len(args) == 3:
            a, b = options(Path(args[0]), args[1]), options(Path(args[0]), args[2])
        else:
            raise AnalysisError("usage: python3 -m analysis.configs RUN VARIANT_A VARIANT_B | RUN_A RUN_B VARIANT")
        for ln in diff(a, b):
            print(ln)
        return 0
    return cli(body)


if __name__ == "__main__":
    sys.exit(main())
