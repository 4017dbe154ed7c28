"""Interval-aware verdicts and the Wilson estimate."""

from __future__ import annotations

import math

import pytest
from statsmodels.stats.proportion import proportion_confint

from biasaudit.records.estimate import Estimate
from biasaudit.stats import mean_t, wilson
from biasaudit.verdicts.thresholds import judge


def est(v: float, lo: float, hi: float) -> Estimate:
    return Estimate(value=v, ci_low=lo, ci_high=hi, n=10, method="x")


@pytest.mark.parametrize(
    "e, lo, hi, verdict",
    [
        (est(50, 45, 55), 40, 60, "PASS"),
        (est(70, 62, 78), 40, 60, "FAIL"),
        (est(30, 20, 38), 40, 60, "FAIL"),
        (est(58, 52, 64), 40, 60, "INCONCLUSIVE"),
        (est(0.05, 0.01, 0.09), None, 0.10, "PASS"),
        (est(0.12, 0.11, 0.15), None, 0.10, "FAIL"),
        (Estimate.no_data("wilson"), 40, 60, "INCONCLUSIVE"),
    ],
)
def test_verdicts(e: Estimate, lo: float | None, hi: float | None, verdict: str) -> None:
    assert judge(e, lo, hi)[0] == verdict


@pytest.mark.parametrize("k, n", [(0, 10), (10, 10), (3, 17), (1, 1)])
def test_wilson_matches_statsmodels_and_is_not_degenerate(k: int, n: int) -> None:
    e = wilson(k, n)
    lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert (e.ci_low, e.ci_high) == pytest.approx((lo, hi))
    assert e.ci_high > e.ci_low


def test_wilson_by_hand() -> None:
    # k=3, n=10, z=1.959964: centre (p + z^2/2n)/(1+z^2/n), half width z*sqrt(p(1-p)/n + z^2/4n^2)/(1+z^2/n)
    z, p, n = 1.959963984540054, 0.3, 10
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    e = wilson(3, 10)
    assert e.ci_low == pytest.approx(centre - half) and e.ci_high == pytest.approx(centre + half)


def test_wilson_no_data() -> None:
    e = wilson(0, 0)
    assert e.value is None and e.n == 0 and not e.has_data


def test_mean_t_constant_sample_defined() -> None:
    e = mean_t([2.0, 2.0, 2.0])
    assert e.value == 2.0 and e.ci_low == 2.0 and "constant" in e.note
