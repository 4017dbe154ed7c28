"""An estimate's interval at another confidence level, for multiplicity adjustment
(`thresholds[].adjust`: one interval per cell at level 1 - alpha/k).

Only the Estimate record reaches the threshold stage (the rows stay with the metric), so
the interval is rebuilt from what the record holds: exactly for Wilson and Clopper-Pearson
intervals (the success count is value x n on the declared range) and t intervals, plain or
cluster-robust (the standard error is the half-width over the t quantile); for the others (design-effect Wilson, bootstrap
percentiles) each side's distance from the value is stretched by the ratio of normal
quantiles, the large-sample relation between intervals at two levels. The note says which.
"""

from __future__ import annotations

import math

from biasaudit.records.estimate import Estimate
from biasaudit.stats.proportions import clopper_pearson, wilson

# Intervals the record alone lets us recompute at any level, from the count value x n
_COUNTED = {"wilson": wilson, "clopper-pearson": clopper_pearson}


def at_level(est: Estimate, level: float, rng: tuple[float, float] | None = None) -> Estimate:
    """`est` with its interval at `level` (kept inside `rng`, the estimate's range)."""
    from scipy import stats as st
    if est.value is None or est.ci_low is None or est.ci_high is None or level == est.level:
        return est
    exact = exact_at_level(est, level, rng) if est.method in _COUNTED else None
    if exact is not None:
        return exact
    df = t_df(est)
    if df is not None:
        ratio = float(st.t.ppf(1 - (1 - level) / 2, df) / st.t.ppf(1 - (1 - est.level) / 2, df))
        how = f"t interval at {level:.4g}"
    else:
        ratio = float(st.norm.ppf(1 - (1 - level) / 2) / st.norm.ppf(1 - (1 - est.level) / 2))
        how = f"stretched to {level:.4g} by the normal quantile ratio {ratio:.3f}"
    lo_, hi_ = est.value - (est.value - est.ci_low) * ratio, est.value + (est.ci_high - est.value) * ratio
    if rng is not None:
        lo_, hi_ = max(lo_, rng[0]), min(hi_, rng[1])
    return est.model_copy(update={"ci_low": lo_, "ci_high": hi_, "level": level, "note": _join(est.note, how),
                                  "tost_interval": None})


def exact_at_level(est: Estimate, level: float, rng: tuple[float, float] | None = None) -> Estimate | None:
    """`est` with its interval at `level` recomputed by its own method, or None where the
    record alone cannot give that (design-effect Wilson, bootstrap: only a stretch could).
    Exact for a Wilson interval (the count is value x n on the declared range `rng`) and a
    t interval (the standard error is the half-width over the t quantile)."""
    from scipy import stats as st
    if est.value is None or est.ci_low is None or est.ci_high is None:
        return None
    if est.method in _COUNTED and rng is not None and est.n > 0:
        lo, hi = rng
        scale = hi - lo
        k = int(round((est.value - lo) / scale * est.n))
        if 0 <= k <= est.n:
            w = _COUNTED[est.method](k, est.n, level)
            assert w.ci_low is not None and w.ci_high is not None
            name = "Wilson" if est.method == "wilson" else "Clopper-Pearson"
            return est.model_copy(update={"ci_low": lo + w.ci_low * scale, "ci_high": lo + w.ci_high * scale,
                                          "level": level, "note": _join(est.note, f"{name} at {level:.4g}"),
                                          "tost_interval": None})
    df = t_df(est)
    if df is not None:
        ratio = float(st.t.ppf(1 - (1 - level) / 2, df) / st.t.ppf(1 - (1 - est.level) / 2, df))
        lo_, hi_ = est.value - (est.value - est.ci_low) * ratio, est.value + (est.ci_high - est.value) * ratio
        if rng is not None:
            lo_, hi_ = max(lo_, rng[0]), min(hi_, rng[1])
        return est.model_copy(update={"ci_low": lo_, "ci_high": hi_, "level": level,
                                      "note": _join(est.note, f"t interval at {level:.4g}"), "tost_interval": None})
    return None


def exact_share(est: Estimate, rng: tuple[float, float] | None) -> Estimate:
    """A share counted once per unit (`method == "wilson"`: k of n on the declared range
    `rng`, possibly scaled, e.g. 0-100) with its exact binomial (Clopper-Pearson) interval
    at the same level instead, for `thresholds[].share_test: exact`; any other estimate
    (clustered shares, means, contrasts) unchanged."""
    if est.method != "wilson" or est.value is None or rng is None or est.n <= 0:
        return est
    lo, hi = rng
    scale = hi - lo
    k = int(round((est.value - lo) / scale * est.n))
    if not 0 <= k <= est.n:
        return est
    cp = clopper_pearson(k, est.n, est.level)
    assert cp.ci_low is not None and cp.ci_high is not None and cp.tost_interval is not None
    t_lo, t_hi = cp.tost_interval
    return est.model_copy(update={"ci_low": lo + cp.ci_low * scale, "ci_high": lo + cp.ci_high * scale,
                                  "method": "clopper-pearson", "note": _join(est.note, cp.note),
                                  "tost_interval": (lo + t_lo * scale, lo + t_hi * scale)})


def t_df(est: Estimate) -> int | None:
    """The degrees of freedom of a t interval (`t`: n - 1; the cluster-robust `cluster-t`:
    clusters - 1), None for any other method."""
    if est.method == "t" and est.n > 1:
        return est.n - 1
    if est.method == "cluster-t" and (est.clusters or est.n) > 1:
        return (est.clusters or est.n) - 1
    return None


def distance_outside(est: Estimate, lo: float | None, hi: float | None) -> float:
    """How far the interval lies outside [lo, hi]: positive when the whole interval is
    out (the gap), negative when it straddles or sits inside (minus the overlap with the
    allowed side), so a larger number is always a worse cell. No data ranks last."""
    if est.ci_low is None or est.ci_high is None:
        return -math.inf
    gaps = []
    if hi is not None:
        gaps.append(est.ci_low - hi)
    if lo is not None:
        gaps.append(lo - est.ci_high)
    return max(gaps) if gaps else -math.inf


def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a else b


__all__ = ["at_level", "distance_outside", "exact_at_level", "exact_share", "t_df"]
