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
