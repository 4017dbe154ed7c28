"""Prediction-powered inference (stats/ppi.py): the estimate and its standard error against
a hand computation of Angelopoulos et al. (2023)'s formulas and PPI++'s weight, the
stratified combination, the degenerate cases, when PPI is not used, and seeded coverage
simulations at 95% nominal (the authors' `ppi_py` on the same inputs:
tests/conformance/test_ppi.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom
from statsmodels.stats.proportion import proportion_confint

from biasaudit.stats.ppi import PPIFit, ppi_fit, ppi_mean, stratified_mean

Z = 1.959963984540054  # the 97.5% normal quantile


def test_simple_random_sample_matches_the_hand_computation() -> None:
    # 10 units, the first 4 labelled by people
    f = [1, 0, 1, 1, 1, 0, 0, 1, 0, 1]
    y = [1, 1, 0, 1, None, None, None, None, None, None]
    lab = [True] * 4 + [False] * 6
    fit = ppi_fit(f, lab, y, lam=1.0)  # the original PPI
    assert isinstance(fit, PPIFit)
    # unlabelled judge mean: f[4:] = 1,0,0,1,0,1 -> 1/2 (variance over N: 1/4);
    # correction y - f = 0,1,-1,0 -> mean 0 (variance over n: 1/2)
    assert fit.theta == pytest.approx(0.5)
    assert fit.se == pytest.approx(math.sqrt(0.25 / 6 + 0.5 / 4))
    # PPI++: cov(y, f) over the sample = -1/16 < 0, so the weight is clipped to 0 and the
    # estimate is the humans' mean 3/4 with variance (3/16) / 4
    tuned = ppi_fit(f, lab, y)
    assert isinstance(tuned, PPIFit) and tuned.lams == {"all": 0.0}
    assert (tuned.theta, tuned.se) == pytest.approx((0.75, math.sqrt(3 / 16 / 4)))
    # 3 of 4 human labels: too few of each kind, so the report shows the humans' own rate
    e = ppi_mean(f, lab, y)
    lo, hi = proportion_confint(3, 4, method="wilson")
    assert e.method == "wilson" and e.note.startswith("PPI not used: 3 of the 4 human labels")
    assert (e.value, e.ci_low, e.ci_high) == pytest.approx((0.75, lo, hi))


def test_stratified_estimate_weights_strata_by_their_share() -> None:
    # stratum A: 6 units, 3 labelled; stratum B: 4 units, 2 labelled
    f = [1, 1, 0, 1, 0, 1, 0, 1, 0, 0]
    y = [1, 0, 0, None, None, None, 1, 1, None, None]
    lab = [True, True, True, False, False, False, True, True, False, False]
    strata = ["A"] * 6 + ["B"] * 4
    fit = ppi_fit(f, lab, y, strata, lam=1.0)
    # A: unlabelled 1,0,1 -> 2/3 (var 2/9 over 3), correction 0,-1,0 -> -1/3 (var 2/9 over 3)
    # B: unlabelled 0,0 -> 0 (var 0), correction 1,0 -> 1/2 (var 1/4 over 2)
    theta = 0.6 * (1 / 3) + 0.4 * 0.5
    var = 0.6**2 * (4 / 27) + 0.4**2 * 0.125
    assert isinstance(fit, PPIFit) and fit.theta == pytest.approx(theta) and fit.se == pytest.approx(math.sqrt(var))
    # humans only: A's labels 1,0,0 -> 1/3 (var 1/3 over 3), B's 1,1 -> 1 (var 0); the
    # Wilson interval on the effective n 0.6 * 0.4 / 0.04 = 6 (statsmodels, fractional count)
    h = stratified_mean(lab, y, strata)
    assert h.value == pytest.approx(0.6) and h.method == "wilson-stratified"
    lo, hi = proportion_confint(0.6 * 6, 6, method="wilson")
    assert (h.ci_low, h.ci_high) == pytest.approx((lo, hi))


def test_a_judge_that_agrees_with_every_human_label_is_not_used_and_says_why() -> None:
    f = [1, 0, 1, 0, 1, 0]
    e = ppi_mean(f, [True, True, True, False, False, False], [1, 0, 1, None, None, None])
    assert e.has_data and e.method == "wilson" and e.note.startswith("PPI not used")


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


@pytest.mark.slow
def test_ppi_interval_covers_the_human_rate_at_its_nominal_level() -> None:
    # a judge that over-reports the label (true positives 80%, false positives 15%): its
    # own rate is 0.345 where people would say 0.30
    cover, judge_cover, _ = _simulate(np.random.default_rng(20231110), 2000, {"all": 1000}, {"all": 0.3},
                                      {"all": 100}, tpr=0.8, fpr=0.15)
    assert 0.93 <= cover <= 0.97
    assert judge_cover < 0.5  # the judge-only interval misses the humans' rate


@pytest.mark.slow
def test_stratified_ppi_covers_at_its_nominal_level_with_disproportionate_allocation() -> None:
    cover, _, _ = _simulate(np.random.default_rng(7), 2000, {"A": 600, "B": 400}, {"A": 0.5, "B": 0.1},
                            {"A": 30, "B": 50}, tpr=0.85, fpr=0.1)
    assert 0.93 <= cover <= 0.97


def _rare(rng: np.random.Generator, reps: int, p: float, n: int, total: int = 1000, tpr: float = 0.8,
          fpr: float = 0.05) -> tuple[float, float, float, dict[str, int]]:
    """(share of audits with an interval, PPI-path coverage of p when defined, mean width,
    methods used) over seeded audits of a label with rate p, n of `total` units labelled by
    people at random."""
    defined = hits = 0
    widths = []
    methods: dict[str, int] = {}
    for _ in range(reps):
        y = (rng.random(total) < p).astype(float)
        f = np.where(y == 1, rng.random(total) < tpr, rng.random(total) < fpr).astype(float)
        lab = np.zeros(total, dtype=bool)
        lab[rng.choice(total, n, replace=False)] = True
        e = ppi_mean(f, lab, y, bounds=(0.0, 1.0))
        methods[e.method] = methods.get(e.method, 0) + 1
        if e.ci_low is not None and e.ci_high is not None:
            defined += 1
            hits += e.ci_low <= p <= e.ci_high
            widths.append(e.ci_high - e.ci_low)
    return defined / reps, hits / max(defined, 1), float(np.mean(widths)), methods


def _exact_coverage(n: int, p: float, method: str) -> float:
    """Exact coverage of a binomial interval (statsmodels) at p, enumerating k = 0..n (scipy)."""
    k = np.arange(n + 1)
    lo, hi = proportion_confint(k, n, method=method)
    return float(binom.pmf(k, n, p)[(lo <= p) & (p <= hi)].sum())


@pytest.mark.slow
def test_humans_only_rate_is_wilson_not_wald_at_a_rare_label() -> None:
    # p = 0.05, n = 20: the Wald interval it replaced covers 63.9% (zero width at 0 of 20);
    # the Wilson interval 92.45% exactly (its coverage oscillates around 95% with n and p:
    # 93.9% at n = 30, 96.2% at n = 50; Brown, Cai & DasGupta 2001)
    assert _exact_coverage(20, 0.05, "normal") == pytest.approx(0.6389, abs=1e-4)
    exact = _exact_coverage(20, 0.05, "wilson")
    rng = np.random.default_rng(38)
    reps, hits = 3000, 0
    for _ in range(reps):  # the humans' sample alone: 20 labelled units, rate 0.05
        h = stratified_mean([True] * 20, (rng.random(20) < 0.05).astype(float), bounds=(0.0, 1.0))
        assert h.ci_low is not None and h.ci_high is not None
        hits += h.ci_low <= 0.05 <= h.ci_high
    print(f"humans-only coverage at p = 0.05, n = 20: {hits / reps:.4f} (exact Wilson {exact:.4f})")
    assert hits / reps >= 0.91 and abs(hits / reps - exact) <= 0.015  # Monte Carlo s.e. 0.0048


@pytest.mark.slow
@pytest.mark.parametrize(("n", "seed"), [(20, 1), (50, 2)])
def test_a_rare_label_always_gets_an_interval_that_covers(n: int, seed: int) -> None:
    # the CLT-only PPI was undefined in 29% (n = 20) and 6% (n = 50) of these audits and
    # covered 97.9% when defined; now every audit has an interval: PPI++ where it can help,
    # else the humans-only Wilson interval with the reason
    defined, cover, _, methods = _rare(np.random.default_rng(seed), 1000, 0.05, n)
    print(f"n = {n}: defined {defined:.3f}, coverage {cover:.4f}, methods {methods}")
    assert defined == 1.0
    assert cover >= 0.9
    assert methods.get("wilson", 0) > 800  # few human labels of the label: PPI is not used


def test_ppi_is_used_where_it_helps_and_is_narrower_than_the_humans() -> None:
    rng = np.random.default_rng(11)
    defined, cover, width, methods = _rare(rng, 400, 0.3, 100, tpr=0.9, fpr=0.05)
    assert defined == 1.0 and methods == {"ppi++-wilson": 400}
    assert 0.92 <= cover <= 0.98
    lo, hi = proportion_confint(30, 100, method="wilson")
    assert width < 0.8 * (hi - lo)  # a good judge on 900 more units narrows the humans' interval
