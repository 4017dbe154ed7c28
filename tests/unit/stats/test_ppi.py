"""Prediction-powered inference (stats/ppi.py): the estimate and its CLT interval against
a hand computation of Angelopoulos et al. (2023)'s formulas, the stratified combination,
the degenerate cases, and seeded coverage simulations at 95% nominal."""

from __future__ import annotations

import math

import numpy as np
import pytest

from biasaudit.stats.ppi import ppi_mean, stratified_mean

Z = 1.959963984540054  # the 97.5% normal quantile


def test_simple_random_sample_matches_the_hand_computation() -> None:
    # 10 units, the first 4 labelled by people
    f = [1, 0, 1, 1, 1, 0, 0, 1, 0, 1]
    y = [1, 1, 0, 1, None, None, None, None, None, None]
    lab = [True] * 4 + [False] * 6
    e = ppi_mean(f, lab, y)
    # unlabelled judge mean: f[4:] = 1,0,0,1,0,1 -> 3/6; correction: y - f = 0,1,-1,0 -> mean 0
    assert e.value == pytest.approx(0.5)
    # var(f) over all 10 (mean 0.6): (6 * 0.4^2 + 4 * 0.6^2) / 9 = 2.4 / 9; var(y - f) = 2 / 3
    var = (2.4 / 9) / 6 + (2 / 3) / 4
    assert var == pytest.approx(0.2111111111)
    assert e.ci_low == pytest.approx(0.5 - Z * math.sqrt(var))
    assert e.ci_high == pytest.approx(0.5 + Z * math.sqrt(var))
    assert (e.n, e.rows, e.method) == (4, 10, "ppi-clt")
    cut = ppi_mean(f, lab, y, bounds=(0.0, 1.0))  # a rate: the interval is cut to [0, 1]
    assert (cut.ci_low, cut.ci_high) == (0.0, 1.0)


def test_stratified_estimate_weights_strata_by_their_share() -> None:
    # stratum A: 6 units, 3 labelled; stratum B: 4 units, 2 labelled
    f = [1, 1, 0, 1, 0, 1, 0, 1, 0, 0]
    y = [1, 0, 0, None, None, None, 1, 1, None, None]
    lab = [True, True, True, False, False, False, True, True, False, False]
    strata = ["A"] * 6 + ["B"] * 4
    e = ppi_mean(f, lab, y, strata)
    # A: unlabelled mean 2/3, correction mean -1/3 -> 1/3; var = (12/45)/3 + (1/3)/3 = 0.2
    # B: unlabelled mean 0, correction mean 1/2 -> 1/2; var = 0.25/2 + 0.5/2 = 0.375
    theta = 0.6 * (1 / 3) + 0.4 * 0.5
    var = 0.6**2 * 0.2 + 0.4**2 * 0.375
    assert theta == pytest.approx(0.4) and var == pytest.approx(0.132)
    assert e.value == pytest.approx(theta)
    assert e.ci_low == pytest.approx(theta - Z * math.sqrt(var))
    assert e.ci_high == pytest.approx(theta + Z * math.sqrt(var))
    assert "stratified" in e.note
    # humans only: A's labels 1,0,0 -> 1/3 (var 1/3), B's 1,1 -> 1 (var 0)
    h = stratified_mean(lab, y, strata)
    assert h.value == pytest.approx(0.6 / 3 + 0.4)
    assert h.ci_high - h.value == pytest.approx(Z * math.sqrt(0.36 * (1 / 3) / 3))


def test_an_unbiased_judge_with_no_errors_on_the_sample_is_undefined_not_certain() -> None:
    f = [1, 0, 1, 0, 1, 0]
    e = ppi_mean(f, [True, True, True, False, False, False], [1, 0, 1, None, None, None])
    assert e.value is None and e.note.startswith("undefined: the judge agrees with every one of the 3")


@pytest.mark.parametrize(("lab", "strata", "why"), [
    ([False] * 6, None, "no unit has both"),
    ([True, False, False, False, False, False], None, "has 1 human-labelled unit"),
    ([True, True, True, True, False, False], ["A"] * 4 + ["B"] * 2, "stratum 'B' has 0"),
])
def test_degenerate_samples_are_undefined_with_a_reason(lab: list[bool], strata: list[str] | None,
                                                        why: str) -> None:
    e = ppi_mean([1, 0, 1, 0, 1, 0], lab, [0, 1, 1, 1, 0, 0], strata)
    assert e.value is None and e.n == 0 and why in e.note


def _simulate(rng: np.random.Generator, reps: int, sizes: dict[str, int], rates: dict[str, float],
              take: dict[str, int], tpr: float, fpr: float) -> tuple[float, float, float]:
    """Coverage of the PPI and the judge-only intervals of the humans' rate (the
    superpopulation mean sum W_h p_h) over seeded reps, and the mean PPI half-width."""
    total = sum(sizes.values())
    truth = sum(sizes[h] / total * rates[h] for h in sizes)
    strata = np.concatenate([[h] * sizes[h] for h in sizes])
    p = np.concatenate([[rates[h]] * sizes[h] for h in sizes])
    y = rng.random((reps, total)) < p
    f = np.where(y, rng.random((reps, total)) < tpr, rng.random((reps, total)) < fpr).astype(float)
    lab = np.zeros((reps, total), dtype=bool)
    start = 0
    for h in sizes:  # a simple random sample within each stratum, every rep
        keys = rng.random((reps, sizes[h]))
        ranks = keys.argsort(axis=1).argsort(axis=1)
        lab[:, start:start + sizes[h]] = ranks < take[h]
        start += sizes[h]
    hits = judge_hits = 0
    widths = []
    one = len(sizes) == 1
    for r in range(reps):
        e = ppi_mean(f[r], lab[r], y[r].astype(float), None if one else strata)
        assert e.ci_low is not None and e.ci_high is not None
        hits += e.ci_low <= truth <= e.ci_high
        widths.append(e.ci_high - e.ci_low)
        m = f[r].mean()
        se = math.sqrt(m * (1 - m) / total)
        judge_hits += m - Z * se <= truth <= m + Z * se
    return hits / reps, judge_hits / reps, float(np.mean(widths))


def test_ppi_interval_covers_the_human_rate_at_its_nominal_level() -> None:
    # a judge that over-reports the label (true positives 80%, false positives 15%): its
    # own rate is 0.345 where people would say 0.30
    cover, judge_cover, _ = _simulate(np.random.default_rng(20231110), 2000, {"all": 1000}, {"all": 0.3},
                                      {"all": 100}, tpr=0.8, fpr=0.15)
    assert 0.93 <= cover <= 0.97
    assert judge_cover < 0.5  # the judge-only interval misses the humans' rate


def test_stratified_ppi_covers_at_its_nominal_level_with_disproportionate_allocation() -> None:
    cover, _, _ = _simulate(np.random.default_rng(7), 2000, {"A": 600, "B": 400}, {"A": 0.5, "B": 0.1},
                            {"A": 30, "B": 50}, tpr=0.85, fpr=0.1)
    assert 0.93 <= cover <= 0.97
