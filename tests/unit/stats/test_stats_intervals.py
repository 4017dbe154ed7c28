"""Bootstrap intervals: against scipy.stats.bootstrap, reproducibility, edge cases."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as st

from biasaudit.stats import (
    bootstrap,
    bootstrap_difference,
    cluster_bootstrap,
    sample_size_for_half_width,
    wilson,
    wilson_half_width,
)

RNG = np.random.default_rng(20261122)
SKEWED = RNG.exponential(size=80)


@pytest.mark.parametrize("method, scipy_method", [("percentile", "percentile"), ("bca", "BCa")])
def test_bootstrap_matches_scipy(method: str, scipy_method: str) -> None:
    # Reference: scipy.stats.bootstrap. Different random streams, so compare within
    # Monte Carlo error (100k resamples each).
    ours = bootstrap(SKEWED, method=method, n_resamples=100_000, seed=1)
    ref = st.bootstrap((SKEWED,), np.mean, method=scipy_method, n_resamples=100_000,
                       rng=np.random.default_rng(2)).confidence_interval
    assert ours.value == pytest.approx(SKEWED.mean())
    assert ours.ci_low == pytest.approx(ref.low, abs=0.01)
    assert ours.ci_high == pytest.approx(ref.high, abs=0.01)


def test_bca_is_shifted_right_of_percentile_for_right_skew() -> None:
    p = bootstrap(SKEWED, method="percentile", seed=3)
    b = bootstrap(SKEWED, method="bca", seed=3)
    assert b.ci_high > p.ci_high and b.ci_low > p.ci_low


def test_seeded_bootstrap_is_bit_identical() -> None:
    x = RNG.random(500)
    assert bootstrap(x, seed=7) == bootstrap(x, seed=7)
    assert bootstrap(x, seed=7) != bootstrap(x, seed=8)
    tab = (RNG.random((10_000, 2)) < 0.3).astype(float)
    a = cluster_bootstrap(tab[:, 0], np.arange(10_000) // 5, seed=1)
    assert a == cluster_bootstrap(tab[:, 0], np.arange(10_000) // 5, seed=1)


def test_binary_bootstrap_agrees_with_wilson() -> None:
    # for a proportion of 3000/10000 the bootstrap and Wilson intervals nearly coincide
    x = np.zeros(10_000)
    x[:3000] = 1
    b = bootstrap(x, method="percentile", seed=0)
    w = wilson(3000, 10_000)
    assert b.ci_low == pytest.approx(w.ci_low, abs=0.002) and b.ci_high == pytest.approx(w.ci_high, abs=0.002)


def test_cluster_bootstrap_with_singleton_clusters_equals_plain_bootstrap() -> None:
    x = RNG.normal(size=200)
    c = cluster_bootstrap(x, np.arange(200), n_resamples=50_000, seed=4)
    p = bootstrap(x, method="percentile", n_resamples=50_000, seed=5)
    assert c.value == pytest.approx(p.value)
    assert c.ci_low == pytest.approx(p.ci_low, abs=0.01) and c.ci_high == pytest.approx(p.ci_high, abs=0.01)


def test_cluster_bootstrap_is_wider_for_correlated_clusters() -> None:
    # 40 statements x 10 responses, responses within a statement strongly correlated
    base = RNG.random(40) < 0.4
    rows = np.repeat(base, 10).astype(float)
    clusters = np.repeat(np.arange(40), 10)
    c = cluster_bootstrap(rows, clusters, seed=0)
    naive = bootstrap(rows, method="percentile", seed=0)
    assert (c.ci_high - c.ci_low) > 2 * (naive.ci_high - naive.ci_low)
    assert c.value == pytest.approx(rows.mean())


def test_cluster_bootstrap_by_hand_ratio_estimator() -> None:
    # clusters of unequal size: the point estimate is the pooled row mean
    vals = [1, 1, 1, 0, 0, 1]
    cl = ["a", "a", "a", "b", "c", "c"]
    e = cluster_bootstrap(vals, cl, seed=0)
    assert e.value == pytest.approx(4 / 6) and e.n == 6
    assert 0 <= e.ci_low <= e.value <= e.ci_high <= 1


def test_bootstrap_difference_covers_true_shift() -> None:
    x = RNG.normal(0, 1, 300)
    y = RNG.normal(0.5, 1, 300)
    d = bootstrap_difference(x, y, n_resamples=50_000, seed=0)
    assert d.value == pytest.approx(x.mean() - y.mean())
    # reference: scipy's independent two-sample percentile bootstrap (different stream: MC tolerance)
    ref = st.bootstrap((x, y), lambda a, b, axis: np.mean(a, axis=axis) - np.mean(b, axis=axis), vectorized=True,
                       method="percentile", n_resamples=50_000, rng=np.random.default_rng(1)).confidence_interval
    assert d.ci_low == pytest.approx(ref.low, abs=0.01) and d.ci_high == pytest.approx(ref.high, abs=0.01)
    pd_ = bootstrap_difference(x, x + 0.25, paired=True, seed=0)
    assert pd_.value == pytest.approx(-0.25) and pd_.ci_low == pytest.approx(-0.25) and pd_.ci_high == pytest.approx(-0.25)


@pytest.mark.parametrize("data", [[], [3.0], [2.0, 2.0, 2.0]])
def test_bootstrap_edge_cases_are_defined(data: list[float]) -> None:
    e = bootstrap(data, seed=0)
    if not data:
        assert e.value is None and e.n == 0 and e.note
    else:
        assert e.value == data[0] and e.ci_low == e.ci_high == data[0] and e.note


def test_cluster_bootstrap_one_cluster() -> None:
    e = cluster_bootstrap([1, 0, 1], ["s", "s", "s"])
    assert e.ci_low == e.ci_high == pytest.approx(2 / 3) and "one cluster" in e.note


def test_sample_size_planning_by_hand() -> None:
    # Wald approximation n = z^2 p(1-p)/h^2 = 1.96^2 * .25 / .05^2 ~ 384; Wilson needs about the same
    n = sample_size_for_half_width(0.05, p=0.5)
    assert 380 <= n <= 390
    assert wilson_half_width(n) <= 0.05 < wilson_half_width(n - 1)
    w = wilson(n // 2, n)
    assert (w.ci_high - w.ci_low) / 2 == pytest.approx(wilson_half_width(n, p=(n // 2) / n), abs=1e-9)
