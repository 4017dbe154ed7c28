"""The count-based draw of a per-response bootstrap (issue 42; `stats.bootstrap.COUNT_DRAW_ABOVE`):
above the threshold, a resample of n rows taking three distinct values is drawn as the
counts of each value (one multinomial draw) instead of n row indices. The two are the
same distribution; this checks both against the exact bootstrap distribution of the
mean, computed outside the project by enumerating every count vector with its
probability from scipy.stats.multinomial."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import multinomial

from biasaudit.stats import cluster_bootstrap

CONFORMANCE = [
    {"check": "percentile bootstrap interval of the mean of a 3-valued per-response difference (90 rows), "
              "count-based draw and row-index draw: each interval end equals the exact bootstrap quantile "
              "at levels 0.5 to 0.95 in most seeds, and their mean over 60 seeds is within 1/n of it",
     "source": "exact bootstrap distribution by enumeration of Multinomial(n, counts / n) "
               "(scipy.stats.multinomial.pmf); Efron and Tibshirani (1993), ch. 13, percentile interval",
     "tolerance": "one lattice step 1/n (mean over seeds); per seed, 80% exact"},
]

PLUS, ZERO, MINUS = 36, 30, 24
N = PLUS + ZERO + MINUS  # 90 rows: above the 64 distinct rows resampled as counts of rows
VALUES = np.array([1.0] * PLUS + [0.0] * ZERO + [-1.0] * MINUS)
SEEDS = range(60)


def exact_distribution() -> tuple[np.ndarray, np.ndarray]:
    """Every possible resample mean (k+ - k-) / n and its probability, ascending."""
    k = np.array([(a, N - a - b, b) for a in range(N + 1) for b in range(N + 1 - a)])
    pmf = multinomial.pmf(k, N, [PLUS / N, ZERO / N, MINUS / N])
    means = (k[:, 0] - k[:, 2]) / N
    xs = np.unique(means)
    probs = np.array([pmf[means == x].sum() for x in xs])
    return xs, probs


def exact_quantile(xs: np.ndarray, probs: np.ndarray, q: float) -> float:
    return float(xs[np.searchsorted(np.cumsum(probs), q)])


def test_exact_distribution_is_a_distribution_with_the_sample_mean() -> None:
    xs, probs = exact_distribution()
    assert probs.sum() == pytest.approx(1.0, abs=1e-12)
    assert float(xs @ probs) == pytest.approx(VALUES.mean(), abs=1e-12)  # the bootstrap mean is unbiased


@pytest.mark.parametrize("level", [0.5, 0.7, 0.75, 0.85, 0.95])
@pytest.mark.parametrize("draw", ["counts", "row indices"])
def test_interval_ends_are_the_exact_bootstrap_quantiles(level: float, draw: str) -> None:
    xs, probs = exact_distribution()
    alpha = (1 - level) / 2
    want = (exact_quantile(xs, probs, alpha), exact_quantile(xs, probs, 1 - alpha))
    # (the empirical quantile of 10,000 resamples lands on the exact lattice point unless
    # the exact CDF is within sampling error of the level: not so at these levels,
    # whose exact CDF is at least 0.0025 from alpha, about 1.6 standard errors)
    cdf = np.cumsum(probs)
    assert np.min(np.abs(cdf - alpha)) > 0.0025 and np.min(np.abs(cdf - (1 - alpha))) > 0.0025
    above = 64 if draw == "counts" else None
    ends = []
    for seed in SEEDS:
        est = cluster_bootstrap(VALUES, list(range(N)), seed=seed, level=level, count_draw_above=above)
        assert est.note.endswith("(multinomial, above 64)") == (draw == "counts")
        ends.append((est.ci_low, est.ci_high))
    got = np.array(ends)
    assert np.mean(got[:, 0] == want[0]) >= 0.8 and np.mean(got[:, 1] == want[1]) >= 0.8
    assert abs(got[:, 0].mean() - want[0]) < 1 / N and abs(got[:, 1].mean() - want[1]) < 1 / N


def test_count_draw_is_the_default_above_the_threshold_and_says_so() -> None:
    from biasaudit.stats.bootstrap import COUNT_DRAW_ABOVE

    n = COUNT_DRAW_ABOVE + 1
    values = np.resize(VALUES, n)
    est = cluster_bootstrap(values, list(range(n)), seed=0)
    assert est.note == f"{n} clusters, 10000 resamples, seed 0; drawn as counts of the 3 distinct clusters " \
                       f"(multinomial, above {COUNT_DRAW_ABOVE})"
    # at the threshold: the row-index draw, as before
    at = cluster_bootstrap(values[:-1], list(range(n - 1)), seed=0)
    assert at.note == f"{n - 1} clusters, 10000 resamples, seed 0"


def test_one_distinct_value_needs_no_word_on_the_draw() -> None:
    # every resample of a constant is the constant: the note says that, as the row-index draw's does
    est = cluster_bootstrap(np.ones(3_000), list(range(3_000)), seed=0)
    assert (est.value, est.ci_low, est.ci_high, est.note) == (1.0, 1.0, 1.0, "every resample gives the same value")
