"""Group-sequential boundaries (stats/sequential.py) and issue 30's acceptance 2: over
2,000 seeded simulated runs whose true value sits exactly on the bound, the sequential
procedure decides (PASS or FAIL, both wrong there) at most alpha + 1 point of the time;
under a planted effect it stops earlier on average than the fixed design.

The simulations draw the estimator's sampling directly (per-stimulus values, cumulative
at each look), vectorised, and judge with the boundaries the engine uses
(`boundaries(...).nominal_alpha`) and the intervals the engine's verdicts use at those
levels (Wilson for a proportion, t for a mean: `stats.adjust.at_level`)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st
from scipy.stats import multivariate_normal

from biasaudit.records.estimate import Estimate
from biasaudit.stats.adjust import at_level
from biasaudit.stats.proportions import wilson
from biasaudit.stats.sequential import boundaries, look_sizes, spent

ALPHA = 0.05
RUNS = 2000


# -- the spending functions, by hand ------------------------------------------------------------

def test_spending_functions_are_the_lan_demets_forms() -> None:
    """Each side spends alpha / 2 with the one-sided Lan-DeMets function; the published
    boundaries (O'Brien-Fleming and Pocock) and gsDesign's own formulas are checked in
    tests/conformance/test_sequential_boundaries.py."""
    t = np.array([0.25, 0.5, 1.0])
    z = st.norm.ppf(1 - ALPHA / 4)
    assert spent("obrien_fleming", t, ALPHA) == pytest.approx([2 * (2 - 2 * st.norm.cdf(z / math.sqrt(x))) for x in t])
    assert spent("pocock", t, ALPHA) == pytest.approx([ALPHA * math.log(1 + (math.e - 1) * x) for x in t])
    assert spent("obrien_fleming", 1.0, ALPHA) == pytest.approx(ALPHA)
    assert spent("pocock", 1.0, ALPHA) == pytest.approx(ALPHA)
    assert spent("obrien_fleming", 0.0, ALPHA) == 0.0


def test_one_look_is_the_fixed_design() -> None:
    for sp in ("obrien_fleming", "pocock"):
        b = boundaries([1.0], ALPHA, sp)  # type: ignore[arg-type]
        assert b.z[0] == pytest.approx(st.norm.ppf(0.975), abs=1e-8)
        assert b.nominal_alpha[0] == pytest.approx(ALPHA, abs=1e-9)


def test_first_boundary_in_closed_form() -> None:
    # at the first look nothing was spent before: 2 (1 - Phi(c_1)) = alpha*(t_1)
    b = boundaries([0.2, 0.6, 1.0], ALPHA, "obrien_fleming")
    assert b.z[0] == pytest.approx(st.norm.isf(2 * st.norm.sf(st.norm.isf(ALPHA / 4) / math.sqrt(0.2))), abs=1e-7)
    assert b.z[0] == pytest.approx(4.877, abs=1e-3)  # the published first of five equal looks
    b = boundaries([0.2, 0.6, 1.0], ALPHA, "pocock")
    assert b.z[0] == pytest.approx(st.norm.isf(ALPHA * math.log(1 + (math.e - 1) * 0.2) / 2), abs=1e-7)


@pytest.mark.parametrize("spending", ["obrien_fleming", "pocock"])
def test_boundaries_agree_with_scipy_multivariate_normal(spending: str) -> None:
    """P(|Z_j| < c_j for every look j <= k) = 1 - alpha*(t_k) under the joint normal of
    the looks (corr sqrt(t_i / t_j)), computed independently by scipy (Genz)."""
    t = np.array([0.15, 0.4, 0.7, 1.0])  # unequal spacing on purpose
    b = boundaries(t, ALPHA, spending)  # type: ignore[arg-type]
    corr = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    c = np.array(b.z)
    for k in range(1, len(t) + 1):
        mvn = multivariate_normal(np.zeros(k), corr[:k, :k], abseps=1e-7, releps=1e-7, maxpts=400_000, seed=3)
        stay = float(mvn.cdf(c[:k], lower_limit=-c[:k]))
        assert 1 - stay == pytest.approx(b.spent[k - 1], abs=2e-6)
    assert b.spent[-1] == ALPHA


def test_early_looks_of_many_spend_next_to_nothing_and_cannot_decide() -> None:
    b = boundaries(np.arange(1, 21) / 20, ALPHA, "obrien_fleming")
    # alpha*(1/20) = 4 (1 - Phi(z_{alpha/4} sqrt(20))) ~ 2e-23: a finite boundary (as gsDesign
    # gives it), whose nominal level 1 - 2e-23 rounds to 1: the look cannot decide
    assert b.z[0] == pytest.approx(st.norm.isf(float(spent("obrien_fleming", 0.05, ALPHA)) / 2), abs=1e-6)
    assert 9.9 < b.z[0] < 10.1 and 1 - b.nominal_alpha[0] == 1.0
    assert 1.9 < b.z[-1] < 2.3


def test_a_look_with_nothing_to_spend_has_no_boundary() -> None:
    b = boundaries([0.001, 1.0], ALPHA, "obrien_fleming")  # alpha*(0.001) underflows to 0
    assert b.z[0] == math.inf and b.nominal_alpha[0] == 0.0
    assert b.z[1] == pytest.approx(st.norm.ppf(0.975), abs=1e-6)


def test_bad_fractions_are_refused() -> None:
    for bad in ([0.5, 0.4, 1.0], [0.0, 1.0], [0.5, 0.9], []):
        with pytest.raises(ValueError):
            boundaries(bad, ALPHA, "pocock")


def test_look_sizes() -> None:
    assert look_sizes(40, 10) == [10, 20, 30, 40]
    assert look_sizes(45, 10) == [10, 20, 30, 40, 45]
    assert look_sizes(8, 10) == [8]
    assert look_sizes(100, 10, max_looks=3) == [10, 20, 100]
    assert look_sizes(100, 10, max_looks=1) == [100]


# -- acceptance 2: seeded simulations -----------------------------------------------------------

def _wilson_bounds(k: np.ndarray, n: int, z: float) -> tuple[np.ndarray, np.ndarray]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def _simulate_proportion(p: float, bound: float, planned: int, every: int, spending: str | None,
                         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(decided?, stimuli at the stop) per run for `max: bound` on a proportion whose true
    value is p, judged with Wilson intervals at each look's nominal level (None: the
    plain 95% interval at every look, no spending)."""
    sizes = look_sizes(planned, every)
    x = rng.random((RUNS, planned)) < p
    cum = np.cumsum(x, axis=1)
    nominal = boundaries([s / planned for s in sizes], ALPHA, spending).nominal_alpha if spending \
        else (ALPHA,) * len(sizes)  # type: ignore[arg-type]
    decided = np.zeros(RUNS, bool)
    stop = np.full(RUNS, planned)
    for size, a in zip(sizes, nominal, strict=True):
        if a <= 0:
            continue
        lo, hi = _wilson_bounds(cum[:, size - 1], size, float(st.norm.isf(a / 2)))
        now = ~decided & ((hi <= bound) | (lo > bound))  # PASS or FAIL, as verdicts.thresholds.judge
        stop[now] = size
        decided |= now
    return decided, stop


def _simulate_mean(mu: float, bound: float, planned: int, every: int, spending: str | None,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """As above for a mean of per-stimulus scores (sd 1) with t intervals."""
    sizes = look_sizes(planned, every)
    x = rng.normal(mu, 1.0, (RUNS, planned))
    cs, cs2 = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)
    nominal = boundaries([s / planned for s in sizes], ALPHA, spending).nominal_alpha if spending \
        else (ALPHA,) * len(sizes)  # type: ignore[arg-type]
    decided = np.zeros(RUNS, bool)
    stop = np.full(RUNS, planned)
    for size, a in zip(sizes, nominal, strict=True):
        if a <= 0:
            continue
        m = cs[:, size - 1] / size
        sd = np.sqrt((cs2[:, size - 1] - size * m * m) / (size - 1))
        half = st.t.ppf(1 - a / 2, size - 1) * sd / np.sqrt(size)
        now = ~decided & ((m + half <= bound) | (m - half > bound))
        stop[now] = size
        decided |= now
    return decided, stop


def test_simulated_intervals_are_the_engines() -> None:
    """The vectorised intervals above are the ones the verdicts use at a look's level."""
    level = 1 - boundaries([0.25, 0.5, 1.0], ALPHA, "pocock").nominal_alpha[0]
    lo, hi = _wilson_bounds(np.array([13]), 20, float(st.norm.isf((1 - level) / 2)))
    w = at_level(wilson(13, 20), level, (0.0, 1.0))
    assert (lo[0], hi[0]) == (pytest.approx(w.ci_low), pytest.approx(w.ci_high))
    est = Estimate(value=0.3, ci_low=0.3 - 2.093 * 0.2, ci_high=0.3 + 2.093 * 0.2, n=20, method="t")
    t_est = at_level(est, level)
    assert t_est.ci_high - 0.3 == pytest.approx(st.t.ppf(1 - (1 - level) / 2, 19) * 0.2, rel=1e-3)


@pytest.mark.parametrize("spending", ["obrien_fleming", "pocock"])
def test_type_one_error_holds_under_the_null(spending: str) -> None:
    """True value exactly at the bound: any PASS or FAIL is an error. 2,000 runs of 200
    stimuli, a look every 20 (10 looks)."""
    rng = np.random.default_rng(20261126)
    decided, _ = _simulate_mean(0.0, 0.0, 200, 20, spending, rng)
    assert decided.mean() <= ALPHA + 0.01
    assert decided.mean() >= ALPHA - 0.02  # the boundaries spend the error rate, not far less
    decided, _ = _simulate_proportion(0.5, 0.5, 200, 20, spending, rng)
    assert decided.mean() <= ALPHA + 0.01


def test_unadjusted_repeated_looks_inflate_the_error() -> None:
    """What the spending prevents: the plain 95% interval at each of 10 looks decides a
    null threshold far more often than 5% (the check above can fail)."""
    rng = np.random.default_rng(20261126)
    decided, _ = _simulate_mean(0.0, 0.0, 200, 20, None, rng)
    assert decided.mean() > 0.12


@pytest.mark.parametrize("spending", ["obrien_fleming", "pocock"])
def test_planted_effect_stops_earlier_than_the_fixed_design(spending: str) -> None:
    """True mean 0.25 sd above the bound, 200 planned stimuli (fixed-design power about
    0.94): the sequential run stops earlier on average and decides about as often."""
    rng = np.random.default_rng(7)
    fixed, _ = _simulate_mean(0.25, 0.0, 200, 200, "obrien_fleming", rng)  # one look: the fixed design
    decided, stop = _simulate_mean(0.25, 0.0, 200, 20, spending, np.random.default_rng(7))
    saving = 1 - stop.mean() / 200
    assert 0.85 < fixed.mean() < 0.99
    assert saving > 0.25  # observed: O'Brien-Fleming ~0.37, Pocock ~0.45 of the stimuli saved
    assert decided.mean() >= fixed.mean() - (0.03 if spending == "obrien_fleming" else 0.08)
