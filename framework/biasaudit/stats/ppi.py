"""Prediction-powered inference (PPI) for a mean: a machine coder labels every unit, humans
label a random sample; the machine's mean is corrected by its error on that sample.

Angelopoulos, Bates, Fannjiang, Jordan & Zrnic (2023), "Prediction-powered inference",
Science 382(6671):669-674, section "Mean estimation". With `f` the judge's value (here 1
when the judge gives the label, else 0), `y` the human's, `n` labelled units and `N_u`
units humans did not label (the two sets disjoint, as in the paper):

    theta_PP = mean(f over the N_u unlabelled) + mean(y - f over the n labelled)
    var      = var(f) / N_u + var(y - f) / n          (sample variances, ddof = 1)
    interval = theta_PP -/+ z_{1-alpha/2} * sqrt(var)   (the paper's CLT interval)

`var(f)` is estimated over all the stratum's units (the judge labels every one of them,
and the labelled ones are drawn from the same units at random, so they estimate the
same variance with more data). The estimate is unbiased for the humans' rate whatever
the judge's errors; the interval is narrower than the humans-only one when the judge is
good and never biased when it is not.

Stratified sampling (`annotate export --stratify`): each stratum h is estimated as above
and combined with its share of the units, W_h = N_h / N: theta = sum W_h theta_h,
var = sum W_h^2 var_h (the standard stratified estimator; Cochran 1977, ch. 5). Without
strata, the labelled units are a simple random sample of all units.

Units are treated as independent draws (the paper's assumption); several units of one
stimulus (prompt conditions, samples) are correlated, which this interval ignores.

No kept library has it: `ppi_py` (the authors' package) is not in our dependencies and
pulls in more than this estimator needs, so it is written here from the formulas above;
tests check it against a hand computation and by simulated coverage.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
from scipy.stats import norm

from biasaudit.records.estimate import Estimate

PPI = "ppi-clt"
CLASSICAL = "stratified-mean-clt"


def _undefined(method: str, why: str) -> Estimate:
    return Estimate.no_data(method, f"undefined: {why}")


def _stratified(f: np.ndarray, lab: np.ndarray, y: np.ndarray, st: np.ndarray
                ) -> tuple[float, float, float] | str:
    """(theta, its variance, the summed variance of y - f) or why it is undefined."""
    total = len(f)
    theta, var, rect_var = 0.0, 0.0, 0.0
    for h in np.unique(st).tolist():
        in_h = st == h
        n_h = int((in_h & lab).sum())
        if n_h < 2:
            return (f"stratum {h!r} has {n_h} human-labelled unit(s); the interval needs at least 2 per "
                    "stratum")
        rect = y[in_h & lab] - f[in_h & lab]
        unl = f[in_h & ~lab]
        w = int(in_h.sum()) / total
        # every unit of the stratum labelled: the judge term drops out (the humans' mean)
        theta_h = (float(unl.mean()) if unl.size else 0.0) + float(rect.mean())
        var_f = float(np.var(f[in_h], ddof=1)) / unl.size if unl.size else 0.0
        theta += w * theta_h
        var += w * w * (var_f + float(np.var(rect, ddof=1)) / n_h)
        rect_var += float(np.var(rect, ddof=1))
    return theta, var, rect_var


def _arrays(f: Sequence[float], labelled: Sequence[bool], y: Sequence[float | None], strata: Sequence[str] | None
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    fa = np.asarray(f, dtype=float)
    lab = np.asarray(labelled, dtype=bool)
    # None (no human label) reads as 0: only labelled units' values are used
    ya = y.astype(float) if isinstance(y, np.ndarray) else np.asarray([0.0 if v is None else v for v in y], dtype=float)
    st = np.full(len(fa), "all") if strata is None else np.asarray(strata).astype(str)
    if not (len(fa) == len(lab) == len(ya) == len(st)):
        raise ValueError("f, labelled, y and strata must have one entry per unit")
    return fa, lab, ya, st


def _design(st: np.ndarray) -> str:
    return ("stratified, strata weighted by their share of the units" if len(np.unique(st)) > 1
            else "simple random sample")


@functools.lru_cache(maxsize=8)
def _z(level: float) -> float:
    return float(norm.ppf(1 - (1 - level) / 2))


def _interval(theta: float, var: float, level: float, bounds: tuple[float, float] | None
              ) -> tuple[float, float]:
    """The CLT interval; with `bounds` (a rate: (0, 1)) cut to them, which only drops
    values the quantity cannot take."""
    half = _z(level) * float(np.sqrt(var))
    lo, hi = theta - half, theta + half
    if bounds is not None:
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    return lo, hi


def ppi_mean(f: Sequence[float], labelled: Sequence[bool], y: Sequence[float | None],
             strata: Sequence[str] | None = None, *, level: float = 0.95,
             bounds: tuple[float, float] | None = None) -> Estimate:
    """PPI estimate of the humans' mean of `y` over all units, with its CLT interval.

    `f` is the judge's value for every unit; `labelled` marks the units humans labelled
    and `y` holds their value there (anything elsewhere); `strata` the sampling stratum
    of every unit (None: one simple random sample); `bounds` cuts the interval to the
    values the mean can take (a rate: (0, 1)). Undefined, with the reason in the
    note, when nothing is labelled, when a stratum has fewer than two labelled units, or
    when a variance estimate is zero: the judge agrees with every human label (the
    correction's variance would be 0, and the interval would ignore the judge's errors).
    """
    fa, lab, ya, st = _arrays(f, labelled, y, strata)
    if len(fa) == 0 or not lab.any():
        return _undefined(PPI, "no unit has both a human label and a judge label")
    got = _stratified(fa, lab, ya, st)
    if isinstance(got, str):
        return _undefined(PPI, got)
    theta, var, rect_var = got
    n, total = int(lab.sum()), len(fa)
    if rect_var <= 0.0 or var <= 0.0:
        return _undefined(PPI, f"the judge agrees with every one of the {n} human labels, so the correction's "
                               "variance estimate is 0 and an interval would ignore the judge's errors; label "
                               "more units")
    lo, hi = _interval(theta, var, level, bounds)
    return Estimate(value=theta, ci_low=lo, ci_high=hi, n=n, rows=total, method=PPI, level=level,
                    note=f"prediction-powered (Angelopoulos et al. 2023): the judge on {total - n} unlabelled "
                         f"units, corrected by its error on {n} human-labelled ones; {_design(st)}; units "
                         "treated as independent")


def stratified_mean(labelled: Sequence[bool], y: Sequence[float | None], strata: Sequence[str] | None = None, *,
                    level: float = 0.95, bounds: tuple[float, float] | None = None) -> Estimate:
    """The humans-only estimate: the stratified sample mean of `y` (PPI with f = 0) with
    its CLT interval, the strata weighted by their share of all units as in `ppi_mean`."""
    _, lab, ya, st = _arrays([0.0] * len(labelled), labelled, y, strata)
    if not lab.any():
        return _undefined(CLASSICAL, "no unit has a human label")
    got = _stratified(np.zeros(len(lab)), lab, ya, st)
    if isinstance(got, str):
        return _undefined(CLASSICAL, got)
    theta, var, _ = got
    n = int(lab.sum())
    if var <= 0.0:
        return _undefined(CLASSICAL, f"all {n} human labels give the same value: the variance estimate is 0")
    lo, hi = _interval(theta, var, level, bounds)
    return Estimate(value=theta, ci_low=lo, ci_high=hi, n=n, rows=len(lab), method=CLASSICAL, level=level,
                    note=f"human labels only, {n} units; {_design(st)}; units treated as independent")


__all__ = ["CLASSICAL", "PPI", "ppi_mean", "stratified_mean"]
