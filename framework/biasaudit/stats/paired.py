"""Paired comparisons of two runs on the same units (stimulus x prompt condition):
McNemar's test for 0/1 outcomes, a paired bootstrap of the mean difference and the
Wilcoxon signed-rank test for continuous scores. statsmodels and scipy do the tests."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from biasaudit.records.estimate import Estimate
from biasaudit.stats.bootstrap import cluster_bootstrap
from biasaudit.stats.significance import TestResult, wilcoxon_signed_rank

EXACT_BELOW = 25
"""Discordant pairs below which McNemar's test is the exact binomial one (the chi-square
approximation is poor for small counts; 25 is the usual rule, e.g. statsmodels' docs)."""


def mcnemar(a: Sequence[float], b: Sequence[float]) -> TestResult:
    """McNemar's test on paired 0/1 outcomes: exact (binomial) when fewer than
    `EXACT_BELOW` pairs disagree, else chi-square with continuity correction. The
    statistic is the exact test's smaller discordant count, or the chi-square value."""
    from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
    x, y = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if x.shape != y.shape:
        raise ValueError("paired outcomes must have the same length")
    n10, n01 = int(np.sum(x & ~y)), int(np.sum(~x & y))
    table = [[int(np.sum(x & y)), n10], [n01, int(np.sum(~x & ~y))]]
    if n10 + n01 == 0:
        return TestResult(statistic=0.0, p_value=1.0, method="mcnemar-exact", n=int(x.size),
                          note="no discordant pairs")
    exact = n10 + n01 < EXACT_BELOW
    res = sm_mcnemar(table, exact=exact, correction=True)
    return TestResult(statistic=float(res.statistic), p_value=float(res.pvalue),
                      method="mcnemar-exact" if exact else "mcnemar-chi2", n=int(x.size),
                      note=f"discordant: {n10} (first only), {n01} (second only)")


def paired_difference(a: Sequence[float], b: Sequence[float], clusters: Sequence[object] | None = None, *,
                      n_resamples: int = 10_000, seed: int = 0, level: float = 0.95) -> Estimate:
    """Mean of a - b over paired units with a percentile bootstrap interval that resamples
    the pairs (or the stimuli, with `clusters`, keeping a stimulus's conditions together)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if d.size == 0:
        return Estimate.no_data("paired-bootstrap")
    groups: list[object] = list(range(d.size)) if clusters is None else list(clusters)
    e = cluster_bootstrap(d, groups, n_resamples=n_resamples, seed=seed, level=level)
    return e.model_copy(update={"method": "paired-bootstrap", "n": len(set(map(str, groups))),
                                "rows": int(d.size) if clusters is not None else None})


def paired_wilcoxon(a: Sequence[float], b: Sequence[float], clusters: Sequence[object] | None = None) -> TestResult:
    """Wilcoxon signed-rank test of a - b; with `clusters`, on each stimulus's mean
    difference (the rows of one stimulus are not independent)."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if clusters is not None:
        _, inverse = np.unique(np.asarray(clusters, dtype=object).astype(str), return_inverse=True)
        per = np.bincount(inverse, weights=x - y) / np.bincount(inverse)
        return wilcoxon_signed_rank(per, np.zeros_like(per))
    return wilcoxon_signed_rank(x, y)


__all__ = ["EXACT_BELOW", "mcnemar", "paired_difference", "paired_wilcoxon"]
