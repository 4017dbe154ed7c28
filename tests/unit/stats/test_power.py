"""Power planning (stats/power.py), checked by seeded simulation: audits simulated at the
planned n with the engine's own estimators and verdict rules decide with the target
probability (within 3 points), and the minimum detectable deviation matches statsmodels."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.power import NormalIndPower, TTestPower
from statsmodels.stats.proportion import proportion_effectsize

from biasaudit.stats import mean_t, wilson_clustered
from biasaudit.stats.power import (
    Dispersion,
    Rule,
    design_factor,
    detectable,
    p_decide,
    stimuli_needed,
)
from biasaudit.verdicts.thresholds import judge, judge_equivalence

SIMS = 1500
TARGET = 0.8


def _clustered_shares(rng: np.random.Generator, p: float, rho: float, k: int, m: int) -> np.ndarray:
    """(SIMS, k, m) 0/1 rows: a stimulus's rate ~ Beta with mean p and intra-cluster correlation rho."""
    ab = 1 / rho - 1
    rate = rng.beta(p * ab, (1 - p) * ab, size=(SIMS, k))
    return (rng.random((SIMS, k, m)) < rate[..., None]).astype(float)


def _share_decided(x: np.ndarray, verdict: str, low: float | None, high: float | None, equivalence: bool) -> float:
    k, m = x.shape[1], x.shape[2]
    clusters = np.repeat(np.arange(k), m)
    got = 0
    for s in range(SIMS):
        e = wilson_clustered(x[s].ravel(), clusters)
        v = judge_equivalence(e, low, high)[0] if equivalence else judge(e, low, high)[0]  # type: ignore[arg-type]
        got += v == verdict
    return got / SIMS


@pytest.mark.parametrize(("p", "low", "high", "equivalence", "verdict", "seed"), [
    (0.5, None, 0.6, False, "PASS", 1),    # a label rate under a bound
    (0.7, None, 0.6, False, "FAIL", 2),    # ... over it
    (0.5, 0.4, 0.6, True, "PASS", 3),      # equivalence (TOST) within a band
])
def test_share_decides_with_the_target_probability_at_the_planned_n(p: float, low: float | None, high: float | None,
                                                                    equivalence: bool, verdict: str,
                                                                    seed: int) -> None:
    m, rho = 3, 0.3  # three prompt conditions per stimulus, correlated within the stimulus
    rule = Rule(low=low, high=high, equivalence=equivalence)
    d = Dispersion("proportion", factor=design_factor(m, rho))
    k = stimuli_needed(rule, d, p, TARGET)
    assert k is not None and 20 < k < 1000
    decided = p_decide(rule, d, p, k)
    assert decided is not None and decided[0] == verdict and decided[1] >= TARGET
    share = _share_decided(_clustered_shares(np.random.default_rng(seed), p, rho, k, m), verdict, low, high,
                           equivalence)
    assert abs(share - TARGET) <= 0.03, (k, share)
    # one stimulus fewer falls short of the target (the smallest n is found)
    prev = p_decide(rule, d, p, k - 1)
    assert prev is not None and prev[1] < TARGET


@pytest.mark.parametrize(("truth", "low", "high", "equivalence", "seed"), [
    (0.0, None, 0.2, False, 4),   # paired log-prob difference under a bound
    (0.05, -0.2, 0.2, True, 5),   # paired difference shown equivalent to 0 within a margin
])
def test_paired_difference_decides_with_the_target_probability(truth: float, low: float | None,
                                                               high: float | None, equivalence: bool,
                                                               seed: int) -> None:
    sd = 1.3  # per-pair standard deviation of the log-prob difference
    rule = Rule(low=low, high=high, equivalence=equivalence)
    k = stimuli_needed(rule, Dispersion("mean", sd_cluster=sd), truth, TARGET)
    assert k is not None
    diffs = np.random.default_rng(seed).normal(truth, sd, size=(SIMS, k))
    got = 0
    for s in range(SIMS):
        e = mean_t(diffs[s])  # the engine's estimator of a pooled mean with one row per stimulus
        v = judge_equivalence(e, low, high)[0] if equivalence else judge(e, low, high)[0]  # type: ignore[arg-type]
        got += v == "PASS"
    assert abs(got / SIMS - TARGET) <= 0.03, (k, got / SIMS)


def test_mean_mde_matches_statsmodels_ttest_power() -> None:
    sd, k, bound = 1.3, 120, 0.5
    mde = detectable(Rule(low=None, high=bound), Dispersion("mean", sd_cluster=sd), k, TARGET)
    # FAIL beyond a bound: a one-sided t test at alpha / 2 (the 95% interval's lower end above it)
    effect = TTestPower().solve_power(effect_size=None, nobs=k, alpha=0.025, power=TARGET, alternative="larger")
    assert mde.fail_beyond["high"] == pytest.approx(effect * sd, rel=1e-5)
    assert mde.pass_inside == pytest.approx(effect * sd, rel=1e-5)


def test_clustered_mean_uses_the_design_effect() -> None:
    sd_row, m, rho, k = 2.0, 4, 0.25, 200
    d = Dispersion("mean", sd_cluster=sd_row * np.sqrt(design_factor(m, rho)))
    mde = detectable(Rule(low=None, high=0.0), d, k, TARGET)
    # k stimuli x m rows with design effect 1 + (m - 1) rho is k*m / deff independent rows
    n_eff = k * m / (1 + (m - 1) * rho)
    effect = TTestPower().solve_power(effect_size=None, nobs=k, alpha=0.025, power=TARGET, alternative="larger")
    assert mde.fail_beyond["high"] == pytest.approx(effect * sd_row * np.sqrt(k / n_eff), rel=1e-5)


def test_share_mde_agrees_with_statsmodels_arcsine_power() -> None:
    # no exact statsmodels counterpart of the score test; the arcsine (Cohen's h) normal
    # power agrees to a fraction of a point at these n
    k, bound = 400, 0.6
    mde = detectable(Rule(low=None, high=bound), Dispersion("proportion"), k, TARGET, limits=(0.0, 1.0))
    truth = bound + mde.fail_beyond["high"]  # type: ignore[operator]
    sm = NormalIndPower().power(effect_size=proportion_effectsize(truth, bound), nobs1=k, alpha=0.025, ratio=0,
                                alternative="larger")
    assert sm == pytest.approx(TARGET, abs=0.02)


def test_on_a_bound_nothing_decides() -> None:
    rule = Rule(low=None, high=0.6)
    d = Dispersion("proportion")
    assert p_decide(rule, d, 0.6, 100) is None
    assert stimuli_needed(rule, d, 0.6) is None
