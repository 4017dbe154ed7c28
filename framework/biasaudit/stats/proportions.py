"""Intervals for proportions."""

from __future__ import annotations

from statsmodels.stats.proportion import proportion_confint

from .estimate import Estimate


def wilson(successes: int, n: int, level: float = 0.95) -> Estimate:
    """Wilson score interval (statsmodels). Stays non-degenerate at 0 and n successes."""
    if n == 0:
        return Estimate.no_data("wilson")
    if not 0 <= successes <= n:
        raise ValueError(f"successes={successes} outside [0, {n}]")
    lo, hi = proportion_confint(successes, n, alpha=1 - level, method="wilson")
    return Estimate(value=successes / n, ci_low=float(lo), ci_high=float(hi), n=n, method="wilson", level=level)


def wilson_half_width(n: int, p: float = 0.5, level: float = 0.95) -> float:
    """Half-width of the Wilson interval for a proportion p observed on n units."""
    from scipy.stats import norm

    if n <= 0:
        return float("inf")
    z = float(norm.ppf(1 - (1 - level) / 2))
    return float(z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n))


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
