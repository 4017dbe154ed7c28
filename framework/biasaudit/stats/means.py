"""Intervals for means."""

from __future__ import annotations

import numpy as np
from scipy import stats as st

from biasaudit.records.estimate import Estimate


def mean_t(values: np.ndarray | list[float], level: float = 0.95) -> Estimate:
    """Mean with a Student-t interval (scipy). One value or a constant sample gives a
    zero-width interval with a note, never NaN."""
    x = np.asarray(values, dtype=np.float64)
    n = int(x.size)
    if n == 0:
        return Estimate.no_data("t")
    m = float(x.mean())
    if n == 1:
        return Estimate(value=m, ci_low=m, ci_high=m, n=1, method="t", level=level, note="one value: no interval")
    sd = float(x.std(ddof=1))
    if sd == 0.0:
        return Estimate(value=m, ci_low=m, ci_high=m, n=n, method="t", level=level, note="constant sample")
    lo, hi = st.t.interval(level, df=n - 1, loc=m, scale=sd / np.sqrt(n))
    tlo, thi = st.t.interval(2 * level - 1, df=n - 1, loc=m, scale=sd / np.sqrt(n))  # for equivalence thresholds
    return Estimate(value=m, ci_low=float(lo), ci_high=float(hi), n=n, method="t", level=level, note=f"sd={sd:.4g}",
                    tost_interval=(float(tlo), float(thi)))
