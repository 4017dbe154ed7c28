"""Paired tests against statsmodels and scipy on hand-made tables."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import wilcoxon
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from biasaudit.stats.paired import mcnemar, paired_difference, paired_wilcoxon


def _pairs(n11: int, n10: int, n01: int, n00: int) -> tuple[list[int], list[int]]:
    a = [1] * n11 + [1] * n10 + [0] * n01 + [0] * n00
    b = [1] * n11 + [0] * n10 + [1] * n01 + [0] * n00
    return a, b


@pytest.mark.parametrize(("table", "exact"), [((30, 2, 9, 40), True), ((5, 7, 1, 3), True), ((50, 30, 12, 60), False)])
def test_mcnemar_matches_statsmodels(table: tuple[int, int, int, int], exact: bool) -> None:
    a, b = _pairs(*table)
    r = mcnemar(a, b)
    ref = sm_mcnemar([[table[0], table[1]], [table[2], table[3]]], exact=exact, correction=True)
    assert r.method == ("mcnemar-exact" if exact else "mcnemar-chi2")
    assert r.p_value == pytest.approx(ref.pvalue) and r.statistic == pytest.approx(ref.statistic)


def test_mcnemar_exact_by_hand() -> None:
    # 2 discordant one way, 9 the other: p = 2 * P(X <= 2), X ~ Bin(11, 1/2) = 2 * 67/2048
    r = mcnemar(*_pairs(30, 2, 9, 40))
    assert r.p_value == pytest.approx(2 * (1 + 11 + 55) / 2048)


def test_mcnemar_without_discordant_pairs() -> None:
    assert mcnemar([1, 0, 1], [1, 0, 1]).p_value == 1.0


def test_paired_difference_and_wilcoxon_per_stimulus() -> None:
    rng = np.random.default_rng(5)
    a = rng.normal(size=40)
    b = a - 0.3 + rng.normal(0, 0.1, 40)
    clusters = [f"s{i // 2}" for i in range(40)]  # two conditions per stimulus
    d = paired_difference(a, b, clusters, n_resamples=2000)
    assert d.value == pytest.approx(float((a - b).mean())) and d.n == 20 and d.rows == 40
    assert (d.ci_low or 0) > 0
    per = (a - b).reshape(20, 2).mean(axis=1)
    w = paired_wilcoxon(a, b, clusters)
    assert w.p_value == pytest.approx(wilcoxon(per).pvalue) and w.n == 20
    assert paired_wilcoxon(a, b).p_value == pytest.approx(wilcoxon(a, b).pvalue)


def test_paired_bootstrap_agrees_with_scipy_bootstrap() -> None:
    from scipy.stats import bootstrap

    rng = np.random.default_rng(9)
    a = rng.normal(1.0, 1.0, 80)
    b = a - rng.normal(0.2, 0.5, 80)
    ours = paired_difference(a, b, n_resamples=20_000, seed=1)
    ref = bootstrap((a - b,), np.mean, method="percentile", n_resamples=20_000, random_state=2).confidence_interval
    se = float(np.std(a - b, ddof=1) / np.sqrt(80))
    # two Monte Carlo runs of the same percentile interval: equal up to resampling noise
    assert abs((ours.ci_low or 0) - ref.low) < 0.1 * se and abs((ours.ci_high or 0) - ref.high) < 0.1 * se
