"""Coverage of pooled intervals over prompt conditions when stimuli differ (a
stimulus-level random effect): the clustered interval keeps its 95%, the interval that
treats every (stimulus, condition) row as independent does not. Seeded simulations with
known truth."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from biasaudit.stats import wilson
from biasaudit.stats.disaggregate import Obs, pooled, proportion

K_STIMULI, CONDITIONS, REPS = 60, 3, 1000
MU, SIGMA = 0.4, 2.0  # logit scale: a stimulus's own tendency varies a lot around the mean


def _truth() -> float:
    """E[expit(MU + SIGMA Z)], Z standard normal: the population share, by Gauss-Hermite quadrature."""
    x, w = np.polynomial.hermite_e.hermegauss(80)
    return float(np.sum(w * expit(MU + SIGMA * x)) / np.sqrt(2 * np.pi))


def _replicate(rng: np.random.Generator) -> list[Obs]:
    p = expit(MU + SIGMA * rng.standard_normal(K_STIMULI))
    y = rng.random((K_STIMULI, CONDITIONS)) < p[:, None]
    return [Obs(cell=f"c{j}", cluster=f"s{i}", value=float(y[i, j])) for i in range(K_STIMULI)
            for j in range(CONDITIONS)]


def _coverage() -> tuple[float, float, list[int]]:
    truth = _truth()
    rng = np.random.default_rng(20261123)
    hits_clustered = hits_independent = 0
    ns = []
    for _ in range(REPS):
        rows = _replicate(rng)
        e = pooled(rows, proportion)
        ns.append(e.n)
        assert e.ci_low is not None and e.ci_high is not None
        hits_clustered += e.ci_low <= truth <= e.ci_high
        naive = wilson(int(sum(r.value for r in rows)), len(rows))
        assert naive.ci_low is not None and naive.ci_high is not None
        hits_independent += naive.ci_low <= truth <= naive.ci_high
    return hits_clustered / REPS, hits_independent / REPS, ns


def test_pooled_interval_keeps_its_coverage_under_a_stimulus_random_effect() -> None:
    clustered, independent, ns = _coverage()
    print(f"coverage over {REPS} replications: clustered {clustered:.3f}, independent cells {independent:.3f}")
    assert 0.93 <= clustered <= 0.97
    assert independent < 0.88  # the rows-as-independent interval is too narrow
    assert set(ns) == {K_STIMULI}  # n is the stimuli; rows and cells are reported apart


def test_pooled_counts_stimuli_rows_and_cells_apart() -> None:
    rows = _replicate(np.random.default_rng(1))
    e = pooled(rows, proportion)
    assert (e.n, e.rows, e.cells, e.clusters) == (K_STIMULI, K_STIMULI * CONDITIONS, CONDITIONS, K_STIMULI)
    assert e.method == "wilson-design-effect"


def test_pooled_mean_is_the_cluster_robust_t() -> None:
    from biasaudit.stats.disaggregate import mean

    rng = np.random.default_rng(2)
    rows = [Obs(cell=f"c{j}", cluster=f"s{i}", value=float(v)) for i, b in enumerate(rng.standard_normal(20))
            for j, v in enumerate(b + 0.3 * rng.standard_normal(CONDITIONS))]
    e = pooled(rows, mean)
    assert e.method == "cluster-t" and e.n == 20 and e.rows == 60
    assert e.value == pytest.approx(np.mean([r.value for r in rows]))
