"""Effect sizes: Cohen's d, variance ratio, eta^2 (one-way and two-way via statsmodels)."""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict

from biasaudit.stats.codes import Codes


def cohens_d(x: np.ndarray | list[float], y: np.ndarray | list[float]) -> float | None:
    """(mean_x - mean_y) / pooled SD (ddof=1). None when the pooled SD is zero or a
    sample has fewer than two values."""
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.size < 2 or b.size < 2:
        return None
    pooled = ((a.size - 1) * a.var(ddof=1) + (b.size - 1) * b.var(ddof=1)) / (a.size + b.size - 2)
    if pooled == 0:
        return None
    return float((a.mean() - b.mean()) / np.sqrt(pooled))


def variance_ratio(x: np.ndarray | list[float], y: np.ndarray | list[float]) -> float | None:
    """var(x) / var(y) with ddof=1; None when var(y) is zero."""
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.size < 2 or b.size < 2 or b.var(ddof=1) == 0:
        return None
    return float(a.var(ddof=1) / b.var(ddof=1))


def eta_squared(values: np.ndarray | list[float], groups: np.ndarray | list[object] | Codes) -> float | None:
    """One-way eta^2 = SS_between / SS_total. None when the outcome is constant."""
    v = np.asarray(values, dtype=np.float64)
    # `Codes`: the groups' integer codes, in the sorted order of their names (the same order)
    g = groups.codes if isinstance(groups, Codes) else np.asarray(groups, dtype=object).astype(str)
    if v.size == 0:
        return None
    ss_total = float(np.sum((v - v.mean()) ** 2))
    if ss_total == 0:
        return None
    ss_between = 0.0
    for level in np.unique(g):
        sub = v[g == level]
        ss_between += sub.size * (sub.mean() - v.mean()) ** 2
    return float(ss_between / ss_total)


class TwoWayEta(BaseModel):
    model_config = ConfigDict(frozen=True)
    a: str
    b: str
    eta2_a: float | None
    eta2_b: float | None
    eta2_interaction: float | None
    n: int
    note: str = ""


def eta_squared_two_way(values: np.ndarray | list[float], a: list[object], b: list[object],
                        names: tuple[str, str] = ("a", "b")) -> TwoWayEta:
    """Eta^2 of two factors and their interaction: SS_effect / SS_total from a type-II
    ANOVA of the full model (statsmodels ols + anova_lm)."""
    import pandas as pd  # on use, as statsmodels: commands that fit nothing skip the import
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    df = pd.DataFrame({"y": np.asarray(values, dtype=np.float64), "A": [str(x) for x in a],
                       "B": [str(x) for x in b]})
    n = len(df)
    if n == 0 or df["y"].var() == 0 or df["A"].nunique() < 2 or df["B"].nunique() < 2:
        return TwoWayEta(a=names[0], b=names[1], eta2_a=None, eta2_b=None, eta2_interaction=None, n=n,
                         note="constant outcome or a factor with one level")
    fit = smf.ols("y ~ C(A) * C(B)", data=df).fit()
    table = anova_lm(fit, typ=2)
    total = float(np.sum((df["y"] - df["y"].mean()) ** 2))
    ss = table["sum_sq"]
    return TwoWayEta(a=names[0], b=names[1], eta2_a=float(ss["C(A)"] / total), eta2_b=float(ss["C(B)"] / total),
                     eta2_interaction=float(ss["C(A):C(B)"] / total), n=n)
