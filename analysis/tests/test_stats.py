"""analysis.stats: medians, ratios, bootstrap CIs and spreads."""

import pytest

from analysis import stats

pytestmark = pytest.mark.unit


def test_describe_deterministic_gives_spread_not_ci():
    e = stats.describe([10.0, 12.0, 11.0], deterministic=True, key="k")
    assert (e.value, e.spread_low, e.spread_high, e.n) == (11.0, 10.0, 12.0, 3)
    assert e.ci_low is None and e.ci_high is None and "icount" in e.note
    assert e.interval() == (10.0, 12.0)


def test_ratio_value_and_spread_by_hand():
    e = stats.ratio([1400, 1402], [1000, 1002], deterministic=True, key="k")
    assert e.value == pytest.approx(1401 / 1001)
    assert (e.spread_low, e.spread_high) == pytest.approx((1400 / 1002, 1402 / 1000))
    p = e.map(stats.percent)
    assert p.value == pytest.approx((1401 / 1001 - 1) * 100)
    assert stats.ratio([1.0], [0.0], True, "k") is None


def test_bootstrap_ci_reproducible_and_brackets_value():
    a = [100.0, 104.0, 98.0, 101.0, 103.0, 99.0]
    b = [90.0, 91.0, 89.0, 92.0, 90.5, 88.0]
    e1 = stats.ratio(a, b, deterministic=False, key="x")
    e2 = stats.ratio(a, b, deterministic=False, key="x")
    assert e1 == e2
    assert e1.ci_low < e1.value < e1.ci_high
    assert e1.ci_low >= min(a) / max(b) and e1.ci_high <= max(a) / min(b)
    assert "bootstrap" in e1.note


def test_difference_and_single_boot():
    d = stats.difference([5.0, 7.0], [1.0, 2.0], deterministic=True, key="k")
    assert d.value == pytest.approx(4.5) and (d.spread_low, d.spread_high) == (3.0, 6.0)
    one = stats.describe([3.0], deterministic=False, key="k")
    assert one.value == 3.0 and one.ci_low is None and "fewer than 5 boots" in one.note
    four = stats.describe([3.0, 4.0, 5.0, 6.0], deterministic=False, key="k")
    assert four.ci_low is None and (four.spread_low, four.spread_high) == (3.0, 6.0)
