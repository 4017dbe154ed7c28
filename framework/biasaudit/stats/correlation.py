"""Correlation and concordance with bootstrap intervals, and the linear fit used to
compare metrics across models (scipy)."""

from __future__ import annotations

import types
import warnings
from collections.abc import Callable

import numpy as np
from pydantic import BaseModel, ConfigDict

from biasaudit.records.estimate import Estimate
from biasaudit.stats.bootstrap import interval_from_distribution


def _scipy_stats() -> types.ModuleType:
    # scipy.stats is imported on first use: it costs seconds, and most commands never correlate
    from scipy import stats

    module: types.ModuleType = stats
    return module


_FUNCS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "pearson": lambda a, b: _scipy_stats().pearsonr(a, b)[0],
    "spearman": lambda a, b: _scipy_stats().spearmanr(a, b)[0],
    # scipy's default variant is tau-b, which averages ranks over ties
    "kendall": lambda a, b: _scipy_stats().kendalltau(a, b, variant="b")[0],
}


def correlation(
    x: np.ndarray | list[float], y: np.ndarray | list[float], *, kind: str = "spearman",
    n_resamples: int = 2_000, seed: int = 0, level: float = 0.95,
) -> Estimate:
    """Pearson r, Spearman rho or Kendall tau-b, with a percentile bootstrap interval
    over pairs. A constant input leaves the coefficient undefined: value None, with a
    note, never NaN."""
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError("x and y differ in length")
    method = f"{kind}+bootstrap-percentile"
    n = int(a.size)
    if n < 3:
        return Estimate(value=None, ci_low=None, ci_high=None, n=n, method=method, note="fewer than 3 pairs")
    if np.all(a == a[0]) or np.all(b == b[0]):
        return Estimate(value=None, ci_low=None, ci_high=None, n=n, method=method,
                        note="constant input: correlation undefined")
    f = _FUNCS[kind]
    value = float(f(a, b))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_resamples, n))
    boot = np.empty(n_resamples)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant resamples give NaN, dropped below
        for i in range(n_resamples):
            boot[i] = f(a[idx[i]], b[idx[i]])
    lo, hi, note = interval_from_distribution(value, boot, level, "percentile")
    return Estimate(value=value, ci_low=lo, ci_high=hi, n=n, method=method, level=level,
                    note=note or f"{n_resamples} resamples, seed {seed}")


class LinearFit(BaseModel):
    model_config = ConfigDict(frozen=True)
    slope: float | None
    intercept: float | None
    r: float | None
    r_squared: float | None
    p_value: float | None
    """Two-sided Wald t-test of slope = 0 (scipy.stats.linregress)."""
    stderr: float | None
    n: int
    note: str = ""


def linear_fit(x: np.ndarray | list[float], y: np.ndarray | list[float]) -> LinearFit:
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    n = int(a.size)
    if n < 3:
        return LinearFit(slope=None, intercept=None, r=None, r_squared=None, p_value=None, stderr=None, n=n,
                         note="fewer than 3 points")
    if np.all(a == a[0]):
        return LinearFit(slope=None, intercept=None, r=None, r_squared=None, p_value=None, stderr=None, n=n,
                         note="x is constant: no fit")
    from scipy import stats as st

    res = st.linregress(a, b)
    if np.all(b == b[0]):
        return LinearFit(slope=0.0, intercept=float(b[0]), r=None, r_squared=None, p_value=None, stderr=0.0, n=n,
                         note="y is constant: slope 0, r undefined")
    return LinearFit(slope=float(res.slope), intercept=float(res.intercept), r=float(res.rvalue),
                     r_squared=float(res.rvalue**2), p_value=float(res.pvalue), stderr=float(res.stderr), n=n)
