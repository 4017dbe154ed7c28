"""Prediction-powered inference (PPI, PPI++) for a label rate: a machine coder labels every
unit, humans label a random sample; the machine's rate is corrected by its error on that
sample, with the judge's weight tuned to the data.

Angelopoulos, Bates, Fannjiang, Jordan & Zrnic (2023), "Prediction-powered inference",
Science 382(6671):669-674, section "Mean estimation", and its power-tuned form PPI++
(Angelopoulos, Duchi & Zrnic 2023, "PPI++: Efficient prediction-powered inference",
arXiv:2311.01453). With `f` the judge's value (1 when the judge gives the label, else 0),
`y` the human's, n labelled units and N units humans did not label (disjoint):

    theta  = lambda mean(f over the N unlabelled) + mean(y - lambda f over the n labelled)
    var    = var(lambda f over the unlabelled) / N + var(y - lambda f over the labelled) / n
    lambda = cov(y, f) / ((1 + n / N) var(f)), clipped to [0, 1]   (PPI++'s power tuning)

the variances and the covariance over n or N (ddof 0) and var(f) in lambda over all n + N
units with ddof 1, exactly as the authors' package `ppi_py` (`ppi_mean_ci`,
`_calc_lam_glm`) computes them (tests/conformance/test_ppi.py). lambda = 1 is the original
PPI, lambda = 0 the humans-only mean; the tuned lambda is the variance-minimising weight,
so asymptotically PPI++ is never wider than the humans-only interval.

Small labelled sets and rare labels (issue 38). The CLT interval of PPI undercovers with
few human labels of a kind (the original estimator was undefined in 21-53% of audits at
p = 0.05, n = 20-50, and covered 99%+ when defined), so:

- the interval is the Wilson score interval on the estimate's effective sample size,
  n_eff = theta (1 - theta) / var (the design-effect Wilson every pooled share in the
  report uses), which stays inside [0, 1] and is skewed away from 0 and 1 as a binomial
  rate's interval is (seeded simulation: 93-96% coverage where the CLT interval gave
  90-92%);
- PPI is not used, and the humans-only interval is given in its place with the reason,
  when it cannot help: fewer than `MIN_EACH` (5) human labels of the label or of the rest
  (the usual condition for a normal approximation to a binomial count; the correction term
  is estimated from those few), or a correlation between the judge's and the humans'
  labels on the sample at or below 1 / sqrt(n - 2), below which PPI++ does worse than the
  humans' own sample (Mani, Xu, Lipton & Oberst 2025, "No free lunch: non-asymptotic
  analysis of prediction-powered inference", arXiv:2505.20178), or a tuned weight of 0.

The humans-only rate is the Wilson interval of the humans' share (for a stratified sample:
on the stratified estimate's effective n), never a Wald interval (which covered 64% at
p = 0.05, n = 20: at 0 of 20 it has zero width).

Stratified sampling (`annotate export --stratify`): each stratum h is estimated as above
(its own lambda) and combined with its share of the units, W_h = N_h / N: theta = sum W_h
theta_h, var = sum W_h^2 var_h (the standard stratified estimator; Cochran 1977, ch. 5).

Units are treated as independent draws (the paper's assumption); several units of one
stimulus (prompt conditions, samples) are correlated, which this interval ignores.

Written here rather than calling `ppi_py`: the package pulls numba and gdown into the
runtime and has no stratified estimator, no effective-n interval and no fallback; it is a
dev dependency the conformance tests compare against.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from biasaudit.records.estimate import Estimate
from biasaudit.stats.proportions import wilson, wilson_score

PPI = "ppi++-wilson"
"""The power-tuned estimate with the Wilson interval on its effective n."""
PPI_FIXED = "ppi-wilson"
"""The same with a fixed weight (`lam=1`: the original PPI)."""
CLASSICAL = "wilson"
CLASSICAL_STRATIFIED = "wilson-stratified"
MIN_EACH = 5
"""Human labels of the label, and of the rest, below which PPI is not used."""

Values = Sequence[float] | np.ndarray
Flags = Sequence[bool] | np.ndarray
Labels = Sequence[float | None] | np.ndarray
Strata = Sequence[str] | np.ndarray | None


@dataclass(frozen=True)
class PPIFit:
    """The prediction-powered point estimate and its CLT standard error."""

    theta: float
    se: float
    lams: dict[str, float]
    """The judge's weight in each stratum."""
    n: int
    total: int


def _undefined(method: str, why: str) -> Estimate:
    return Estimate.no_data(method, f"undefined: {why}")


def _arrays(f: Values, labelled: Flags, y: Labels, strata: Strata
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
    from scipy.stats import norm
    return float(norm.ppf(1 - (1 - level) / 2))


def tuned_lambda(y: np.ndarray, f: np.ndarray, f_unlabelled: np.ndarray) -> float:
    """PPI++'s weight for a mean: cov(y, f) / ((1 + n / N) var(f)), clipped to [0, 1]
    (`ppi_py._calc_lam_glm` with an identity Hessian); 0 when f does not vary."""
    n, big_n = len(y), len(f_unlabelled)
    var_f = float(np.var(np.concatenate([f, f_unlabelled]), ddof=1)) if n + big_n > 1 else 0.0
    if var_f <= 0.0 or big_n == 0:
        return 0.0
    cov = float(np.mean((y - y.mean()) * (f - f.mean())))
    return min(max(cov / ((1 + n / big_n) * var_f), 0.0), 1.0)


def ppi_fit(f: Values, labelled: Flags, y: Labels, strata: Strata = None, *,
            lam: float | None = None) -> PPIFit | str:
    """The prediction-powered estimate and its standard error (see the module text), with
    the weight `lam` (None: tuned per stratum, PPI++; 1: the original PPI); or why it is
    undefined."""
    fa, lab, ya, st = _arrays(f, labelled, y, strata)
    if len(fa) == 0 or not lab.any():
        return "no unit has both a human label and a judge label"
    total = len(fa)
    theta, var = 0.0, 0.0
    lams: dict[str, float] = {}
    for h in np.unique(st).tolist():
        in_h = st == h
        n_h = int((in_h & lab).sum())
        if n_h < 2:
            return (f"stratum {h!r} has {n_h} human-labelled unit(s); the interval needs at least 2 per "
                    "stratum")
        yl, fl, fu = ya[in_h & lab], fa[in_h & lab], fa[in_h & ~lab]
        lam_h = tuned_lambda(yl, fl, fu) if lam is None else float(lam)
        rect = yl - lam_h * fl
        # every unit of the stratum labelled: the judge term drops out (the humans' mean)
        theta_h = (lam_h * float(fu.mean()) if fu.size else 0.0) + float(rect.mean())
        var_h = (float(np.var(lam_h * fu)) / fu.size if fu.size else 0.0) + float(np.var(rect)) / n_h
        w = int(in_h.sum()) / total
        theta += w * theta_h
        var += w * w * var_h
        lams[h] = lam_h
    return PPIFit(theta=theta, se=math.sqrt(var), lams=lams, n=int(lab.sum()), total=total)


def _wilson_effective(theta: float, se: float, n_labelled: int, n_max: int, level: float
                      ) -> tuple[float, float, float]:
    """(low, high, n_eff) of the Wilson score interval on the effective n theta (1 - theta) / se^2
    (at most `n_max`, every unit); where that is undefined (theta at 0 or 1, or no spread)
    the labelled units count once each, as in the humans' own sample."""
    t = min(max(theta, 0.0), 1.0)
    n_eff = float(n_labelled) if se <= 0.0 or t in (0.0, 1.0) else min(t * (1 - t) / se**2, float(n_max))
    centre, half = wilson_score(t, n_eff, level)
    return min(max(0.0, centre - half), t), max(min(1.0, centre + half), t), n_eff


def _binary(y: np.ndarray) -> bool:
    return bool(np.all((y == 0.0) | (y == 1.0)))


def _cannot_help(fa: np.ndarray, lab: np.ndarray, ya: np.ndarray, fit: PPIFit) -> str | None:
    """Why PPI cannot help on this sample (see the module text), or None."""
    yl, fl = ya[lab], fa[lab]
    n = int(lab.sum())
    k = int(yl.sum())
    if min(k, n - k) < MIN_EACH:
        return (f"{k} of the {n} human labels give the label and {n - k} do not; with fewer than {MIN_EACH} of "
                "either the correction PPI adds is estimated from too few labels for its normal approximation")
    if yl.std() == 0 or fl.std() == 0:
        return "the judge gives the same label to every human-labelled unit, so it says nothing about their errors"
    r = float(np.corrcoef(yl, fl)[0, 1])
    floor = 1 / math.sqrt(n - 2)
    if not r > floor:
        return (f"the judge's and the humans' labels correlate at r = {r:.3g} on the sample, not above "
                f"1/sqrt(n - 2) = {floor:.3g}, below which PPI++ does worse than the humans' own labels "
                "(Mani et al. 2025)")
    if all(v == 0.0 for v in fit.lams.values()):
        return "the power-tuned weight of the judge is 0 in every stratum: PPI++ is the humans-only estimate"
    if fit.se <= 0.0:
        return ("the prediction-powered variance estimate is 0 (the judge's labels on the unlabelled units and its "
                "errors on the labelled ones are each constant); label more units")
    return None


def ppi_mean(f: Values, labelled: Flags, y: Labels, strata: Strata = None, *, level: float = 0.95,
             bounds: tuple[float, float] | None = None, lam: float | None = None) -> Estimate:
    """PPI++ estimate of the humans' rate of a label over all units (0/1 `f` and `y`), with
    the Wilson interval on its effective n; the humans-only interval instead, its note
    saying why, when PPI cannot help (see the module text).

    `f` is the judge's value for every unit; `labelled` marks the units humans labelled
    and `y` holds their value there (anything elsewhere); `strata` the sampling stratum of
    every unit (None: one simple random sample); `lam` a fixed weight instead of the tuned
    one (1: the original PPI). `bounds` is accepted for callers that cut the interval to a
    rate's range: the Wilson interval never leaves [0, 1]. Undefined, with the reason,
    when nothing is labelled or a stratum has fewer than two labelled units. Values other
    than 0/1 get the CLT interval (the papers' own)."""
    fa, lab, ya, st = _arrays(f, labelled, y, strata)
    method = PPI if lam is None else PPI_FIXED
    fit = ppi_fit(fa, lab, ya, st, lam=lam)
    if isinstance(fit, str):
        return _undefined(method, fit)
    design = _design(st)
    weights = ", ".join(f"{v:.3g}" for v in fit.lams.values())
    if not (_binary(ya[lab]) and _binary(fa)):
        half = _z(level) * fit.se
        lo, hi = fit.theta - half, fit.theta + half
        if bounds is not None:
            lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
        return Estimate(value=fit.theta, ci_low=lo, ci_high=hi, n=fit.n, rows=fit.total, method="ppi-clt",
                        level=level, note=f"prediction-powered, judge weight {weights}; {design}; CLT interval")
    why = _cannot_help(fa, lab, ya, fit)
    if why is not None:
        human = stratified_mean(lab, ya, st, level=level)
        return human.model_copy(update={"note": f"PPI not used: {why}. Shown: the humans-only rate. "
                                                f"{human.note}"})
    lo, hi, n_eff = _wilson_effective(fit.theta, fit.se, fit.n, fit.total, level)
    tuned = "power-tuned (PPI++, Angelopoulos, Duchi & Zrnic 2023)" if lam is None else "fixed"
    # a rate: the estimate cut to [0, 1] like its interval (the correction can overshoot)
    value = min(max(fit.theta, 0.0), 1.0)
    return Estimate(value=value, ci_low=lo, ci_high=hi, n=fit.n, rows=fit.total, method=method, level=level,
                    note=f"prediction-powered (Angelopoulos et al. 2023): the judge on {fit.total - fit.n} unlabelled "
                         f"units, corrected by its error on {fit.n} human-labelled ones, judge weight {weights} "
                         f"({tuned}); Wilson interval on the effective n {n_eff:.1f}; {design}; units treated "
                         "as independent")


def stratified_mean(labelled: Flags, y: Labels, strata: Strata = None, *, level: float = 0.95,
                    bounds: tuple[float, float] | None = None) -> Estimate:
    """The humans-only rate: the Wilson interval of the humans' share of the label (a
    stratified sample: the stratified mean, strata weighted by their share of all units as
    in `ppi_mean`, with the Wilson interval on its effective n). `bounds` is accepted for
    callers that cut the interval to a rate's range (Wilson never leaves [0, 1])."""
    _, lab, ya, st = _arrays([0.0] * len(labelled), labelled, y, strata)
    if not lab.any():
        return _undefined(CLASSICAL, "no unit has a human label")
    n = int(lab.sum())
    if len(np.unique(st)) == 1:
        k = int(round(float(ya[lab].sum())))
        e = wilson(k, n, level)
        return e.model_copy(update={"rows": len(lab), "note": f"human labels only: {k} of {n}; Wilson interval"})
    total = len(lab)
    theta, var = 0.0, 0.0
    for h in np.unique(st).tolist():
        in_h = st == h
        n_h = int((in_h & lab).sum())
        if n_h < 2:
            return _undefined(CLASSICAL_STRATIFIED, f"stratum {h!r} has {n_h} human-labelled unit(s); the "
                                                    "interval needs at least 2 per stratum")
        w = int(in_h.sum()) / total
        theta += w * float(ya[in_h & lab].mean())
        var += w * w * float(np.var(ya[in_h & lab], ddof=1)) / n_h
    lo, hi, n_eff = _wilson_effective(theta, math.sqrt(var), n, total, level)
    return Estimate(value=theta, ci_low=lo, ci_high=hi, n=n, rows=total, method=CLASSICAL_STRATIFIED, level=level,
                    note=f"human labels only, {n} units; {_design(st)}; Wilson interval on the effective n "
                         f"{n_eff:.1f}")


__all__ = ["CLASSICAL", "CLASSICAL_STRATIFIED", "MIN_EACH", "PPI", "PPI_FIXED", "PPIFit", "ppi_fit", "ppi_mean",
           "stratified_mean", "tuned_lambda"]
