"""Estimates over per-boot values: medians, ratios and differences of medians
against a reference kernel, with either a bootstrap 95% CI (resampling the
boots of each kernel independently, fixed seed) or, where boots are
deterministic (icount, one vCPU), the boot-to-boot spread."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np

SEED = 20240513  # LSFMM+BPF 2024; any constant makes output reproducible
RESAMPLES = 2000
CONFIDENCE = 95.0

SPREAD_NOTE = "spread: min..max over boots (icount is deterministic, so no CI)"
CI_NOTE = f"{CONFIDENCE:g}% CI: bootstrap over boots ({RESAMPLES} resamples)"
# A bootstrap CI of a median over fewer boots is just their min..max.
MIN_CI_BOOTS = 5
FEW_NOTE = f"fewer than {MIN_CI_BOOTS} boots: spread only, no CI"


@dataclass(frozen=True)
class Estimate:
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    spread_low: float | None = None
    spread_high: float | None = None
    n: int = 0
    note: str = ""

    def map(self, fn: Callable[[float], float]) -> "Estimate":
        """The same estimate under an increasing transformation."""
        def f(x: float | None) -> float | None:
            return None if x is None else fn(x)
        return replace(self, value=f(self.value), ci_low=f(self.ci_low), ci_high=f(self.ci_high),
                       spread_low=f(self.spread_low), spread_high=f(self.spread_high))

    def interval(self) -> tuple[float, float] | None:
        """The CI where there is one, else the spread."""
        if self.ci_low is not None and self.ci_high is not None:
            return self.ci_low, self.ci_high
        if self.spread_low is not None and self.spread_high is not None:
            return self.spread_low, self.spread_high
        return None


def median(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("median of no values")
    return float(np.median(np.asarray(values, dtype=float)))


def _rng(key: str) -> np.random.Generator:
    return np.random.default_rng([SEED, zlib.crc32(key.encode())])


def _resampled_medians(rng: np.random.Generator, values: Sequence[float]) -> np.ndarray:
    a = np.asarray(values, dtype=float)
    idx = rng.integers(0, len(a), size=(RESAMPLES, len(a)))
    return np.median(a[idx], axis=1)


def _ci(samples: np.ndarray) -> tuple[float, float]:
    lo, hi = np.percentile(samples, [(100 - CONFIDENCE) / 2, 100 - (100 - CONFIDENCE) / 2])
    return float(lo), float(hi)


def describe(values: Sequence[float], deterministic: bool, key: str) -> Estimate:
    """Median of per-boot values, its spread and (non-deterministic) CI."""
    v = list(values)
    est = Estimate(median(v), spread_low=min(v), spread_high=max(v), n=len(v))
    if deterministic:
        return replace(est, note=SPREAD_NOTE)
    if len(v) < MIN_CI_BOOTS:
        return replace(est, note=FEW_NOTE)
    lo, hi = _ci(_resampled_medians(_rng(key), v))
    return replace(est, ci_low=lo, ci_high=hi, note=CI_NOTE)


def _against(values: Sequence[float], ref: Sequence[float], deterministic: bool, key: str,
             op: Callable, spread: tuple[float, float], n_note: str) -> Estimate:
    est = Estimate(op(median(values), median(ref)), spread_low=spread[0], spread_high=spread[1],
                   n=len(values))
    if deterministic:
        return replace(est, note=f"{SPREAD_NOTE}; {n_note}")
    if len(values) < MIN_CI_BOOTS or len(ref) < MIN_CI_BOOTS:
        return replace(est, note=f"{FEW_NOTE}; {n_note}")
    rng = _rng(key)
    a = _resampled_medians(rng, values)
    b = _resampled_medians(rng, ref)
    lo, hi = _ci(op(a, b))
    return replace(est, ci_low=lo, ci_high=hi, note=f"{CI_NOTE}; {n_note}")


def ratio(values: Sequence[float], ref: Sequence[float], deterministic: bool, key: str,
          ref_name: str = "reference") -> Estimate | None:
    """median(values) / median(ref); None when the reference is not positive.
    Spread: the extreme ratios over all pairs of boots."""
    if not values or not ref or min(ref) <= 0:
        return None
    spread = (min(values) / max(ref), max(values) / min(ref))
    return _against(values, ref, deterministic, key, lambda x, y: x / y, spread,
                    f"vs {ref_name} (n={len(ref)})")


def difference(values: Sequence[float], ref: Sequence[float], deterministic: bool, key: str,
               ref_name: str = "reference") -> Estimate | None:
    """median(values) - median(ref); spread over all pairs of boots."""
    if not values or not ref:
        return None
    spread = (min(values) - max(ref), max(values) - min(ref))
    return _against(values, ref, deterministic, key, lambda x, y: x - y, spread,
                    f"vs {ref_name} (n={len(ref)})")


def percent(r: float) -> float:
    """A ratio as a percentage change: 1.4 -> 40.0."""
    return (r - 1.0) * 100.0
