"""Intervals for proportions."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from biasaudit.records.estimate import Estimate
from biasaudit.stats.codes import Codes, group_index


def wilson(successes: int, n: int, level: float = 0.95) -> Estimate:
    """Wilson score interval (statsmodels). Stays non-degenerate at 0 and n successes."""
    from statsmodels.stats.proportion import proportion_confint
    if n == 0:
        return Estimate.no_data("wilson")
    if not 0 <= successes <= n:
        raise ValueError(f"successes={successes} outside [0, {n}]")
    p = successes / n
    lo, hi = _holding(p, *proportion_confint(successes, n, alpha=1 - level, method="wilson"))
    # the (1 - 2 alpha) interval for equivalence thresholds, by the same method
    tost = _holding(p, *proportion_confint(successes, n, alpha=2 * (1 - level), method="wilson"))
    return Estimate(value=p, ci_low=lo, ci_high=hi, n=n, method="wilson", level=level, tost_interval=tost)


def clopper_pearson(successes: int, n: int, level: float = 0.95) -> Estimate:
    """Clopper-Pearson (exact binomial) interval (statsmodels' `method="beta"`). Each of its
    bounds is an exact one-sided binomial test at (1 - level) / 2, so a `max`/`min` verdict
    on it errs at most that often with the truth on the bound, whatever n; its 1 - 2 alpha
    interval (`tost_interval`) lying within a band is statsmodels' `binom_tost` rejecting
    at alpha. Conservative (coverage at least the level), where the Wilson interval's
    score test can exceed its nominal error rate at some n (docs/statistics.md)."""
    from statsmodels.stats.proportion import proportion_confint
    if n == 0:
        return Estimate.no_data("clopper-pearson")
    if not 0 <= successes <= n:
        raise ValueError(f"successes={successes} outside [0, {n}]")
    p = successes / n
    lo, hi = _holding(p, *proportion_confint(successes, n, alpha=1 - level, method="beta"))
    tost = _holding(p, *proportion_confint(successes, n, alpha=2 * (1 - level), method="beta"))
    return Estimate(value=p, ci_low=lo, ci_high=hi, n=n, method="clopper-pearson", level=level, tost_interval=tost,
                    note="exact binomial (Clopper-Pearson)")


def _holding(p: float, lo: float, hi: float) -> tuple[float, float]:
    # The Wilson interval always holds p. statsmodels' bounds at 0 or n successes carry
    # rounding (2.8e-17 above 0 when alpha is 1 - 0.95, 0.9999999999999999 below 1), which
    # would put the estimate just outside its own interval.
    return min(max(0.0, float(lo)), p), max(min(1.0, float(hi)), p)


def wilson_score(p: float, n: float, level: float = 0.95) -> tuple[float, float]:
    """(centre, half-width) of the Wilson score interval for a proportion p observed on n
    units, n possibly fractional (an effective sample size); unclipped. The one place the
    formula is written: the intervals (`wilson_clustered`, `_wilson_bounds`, Newcombe's in
    `stats.contrasts`), the sample sizes (`sample_size_for_half_width`) and power planning
    use it."""
    from scipy.stats import norm

    z = float(norm.ppf(1 - (1 - level) / 2))
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre, half


def wilson_half_width(n: int, p: float = 0.5, level: float = 0.95) -> float:
    """Half-width of the Wilson interval for a proportion p observed on n units."""
    if n <= 0:
        return float("inf")
    return wilson_score(p, n, level)[1]


def sample_size_for_half_width(h: float, p: float = 0.5, level: float = 0.95) -> int:
    """Smallest n whose Wilson interval around p has half-width <= h."""
    if not 0 < h < 0.5:
        raise ValueError("half-width must be in (0, 0.5)")
    lo, hi = 1, 1
    while wilson_half_width(hi, p, level) > h:
        hi *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        if wilson_half_width(mid, p, level) <= h:
            hi = mid
        else:
            lo = mid + 1
    return lo


def wilson_clustered(values: Sequence[float] | np.ndarray, clusters: Sequence[object] | Codes, level: float = 0.95) -> Estimate:
    """Wilson interval for a proportion whose 0/1 rows come in clusters (a stimulus asked
    under several prompt conditions), with the effective sample size of the design:
    n_eff = n / deff, deff = Var_cluster(p) / (p (1 - p) / n), where Var_cluster is the
    cluster-robust (sandwich) variance of the ratio estimator,
    k / (k - 1) * sum_g (S_g - p N_g)^2 / n^2 (Kish's design effect, as Korn and Graubard
    use it for clustered proportions). n_eff is kept within [k, n] (k clusters: at worst
    every stimulus counts once); at p = 0 or 1 the design effect is undefined and
    n_eff = k, the conservative choice. The interval stays inside [0, 1] and is never of
    zero width, unlike a percentile bootstrap of an all-0 or all-1 sample.

    Written here because statsmodels' proportion intervals take no clusters.
    """
    x = np.asarray(values, dtype=np.float64)
    n = int(x.size)
    if n == 0:
        return Estimate.no_data("wilson-design-effect")
    p = float(x.sum() / n)
    n_eff, k, deff = _design(x, clusters)
    lo, hi = _wilson_bounds(p, n_eff, level)
    tost = _wilson_bounds(p, n_eff, 2 * level - 1)  # same n_eff, for equivalence thresholds
    note = (f"{k} clusters, design effect {deff:.3f}, effective n {n_eff:.1f}" if np.isfinite(deff)
            else f"{k} clusters; design effect undefined at p = {p:g}: effective n = {k}")
    return Estimate(value=p, ci_low=lo, ci_high=hi, n=n, method="wilson-design-effect", level=level, note=note,
                    clusters=k, tost_interval=tost)


def effective_n(values: Sequence[float] | np.ndarray, clusters: Sequence[object] | Codes) -> tuple[float, int]:
    """(effective sample size, clusters) of clustered 0/1 rows, as `wilson_clustered` uses them."""
    n_eff, k, _ = _design(np.asarray(values, dtype=np.float64), clusters)
    return n_eff, k


def _design(x: np.ndarray, clusters: Sequence[object] | Codes) -> tuple[float, int, float]:
    """(n_eff, clusters, design effect) of the rows `x` (see `wilson_clustered`)."""
    n = int(x.size)
    k, inverse = group_index(clusters)
    sums = np.bincount(inverse, weights=x)
    sizes = np.bincount(inverse).astype(np.float64)
    p = float(x.sum() / n)
    binomial = p * (1 - p) / n
    if k > 1 and binomial > 0:
        robust = k / (k - 1) * float(np.sum((sums - p * sizes) ** 2)) / n**2
        deff = robust / binomial
        n_eff = min(max(n / deff, float(k)), float(n)) if deff > 0 else float(n)
    else:
        deff = float("nan")
        n_eff = float(k)
    return n_eff, k, deff


def _wilson_bounds(p: float, n: float, level: float) -> tuple[float, float]:
    """The Wilson score interval for an observed proportion p on a (possibly fractional) n."""
    centre, half = wilson_score(p, n, level)
    # The Wilson interval always holds p; at p = 0 or 1 the subtraction leaves rounding
    # (5.6e-17 above 0), which would put the estimate outside its own interval.
    return min(max(0.0, centre - half), p), max(min(1.0, centre + half), p)
