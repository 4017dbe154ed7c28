"""Hypothesis tests with defined results on degenerate input, and multiplicity
corrections. scipy/statsmodels do the work; Siegel-Tukey is written here (not in scipy)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from pydantic import BaseModel, ConfigDict


class TestResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    __test__ = False  # not a pytest test class
    statistic: float
    p_value: float
    method: str
    df: float | None = None
    n: int = 0
    note: str = ""


def _arr(x: np.ndarray | list[float]) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def welch_t(x: np.ndarray | list[float], y: np.ndarray | list[float]) -> TestResult:
    """Welch's t (scipy ttest_ind, equal_var=False) with Welch-Satterthwaite df:
    t = (mean_x - mean_y) / sqrt(s_x^2/n_x + s_y^2/n_y)."""
    from scipy import stats as st
    a, b = _arr(x), _arr(y)
    n = int(a.size + b.size)
    if a.size < 2 or b.size < 2:
        return TestResult(statistic=0.0, p_value=1.0, method="welch-t", n=n, note="fewer than 2 values in a sample: no test")
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    if va + vb == 0:
        same = bool(a.mean() == b.mean())
        return TestResult(statistic=0.0 if same else float(np.sign(a.mean() - b.mean())) * np.inf,
                          p_value=1.0 if same else 0.0, method="welch-t", n=n,
                          note="both samples constant: " + ("equal means" if same else "means differ with zero variance"))
    res = st.ttest_ind(a, b, equal_var=False)
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    return TestResult(statistic=float(res.statistic), p_value=float(res.pvalue), df=float(df), method="welch-t", n=n)


def paired_t(x: np.ndarray | list[float], y: np.ndarray | list[float]) -> TestResult:
    from scipy import stats as st
    a, b = _arr(x), _arr(y)
    d = a - b
    if d.size < 2:
        return TestResult(statistic=0.0, p_value=1.0, method="paired-t", n=int(d.size), note="fewer than 2 pairs")
    if np.all(d == d[0]):
        return TestResult(statistic=0.0 if d[0] == 0 else float(np.sign(d[0])) * np.inf,
                          p_value=1.0 if d[0] == 0 else 0.0, df=float(d.size - 1), method="paired-t",
                          n=int(d.size), note="constant differences")
    res = st.ttest_rel(a, b)
    return TestResult(statistic=float(res.statistic), p_value=float(res.pvalue), df=float(d.size - 1),
                      method="paired-t", n=int(d.size))


def wilcoxon_signed_rank(x: np.ndarray | list[float], y: np.ndarray | list[float]) -> TestResult:
    from scipy import stats as st
    a, b = _arr(x), _arr(y)
    d = a - b
    if d.size == 0 or np.all(d == 0):
        return TestResult(statistic=0.0, p_value=1.0, method="wilcoxon", n=int(d.size), note="all differences are zero")
    res = st.wilcoxon(a, b)
    return TestResult(statistic=float(res.statistic), p_value=float(res.pvalue), method="wilcoxon", n=int(d.size))


def permutation_test(
    x: np.ndarray | list[float], y: np.ndarray | list[float], *,
    statistic: Callable[..., float] | None = None, n_resamples: int = 9_999, seed: int = 0,
) -> TestResult:
    """Two-sided permutation test of a difference (default: mean(x) - mean(y)), scipy."""
    from scipy import stats as st
    a, b = _arr(x), _arr(y)
    if a.size == 0 or b.size == 0:
        return TestResult(statistic=0.0, p_value=1.0, method="permutation", note="empty sample")

    def diff(u: np.ndarray, v: np.ndarray, axis: int = -1) -> np.ndarray:
        out: np.ndarray = np.mean(u, axis=axis) - np.mean(v, axis=axis)
        return out

    res = st.permutation_test((a, b), statistic or diff, vectorized=statistic is None, n_resamples=n_resamples,
                              alternative="two-sided", rng=np.random.default_rng(seed))
    return TestResult(statistic=float(res.statistic), p_value=float(res.pvalue), method="permutation",
                      n=int(a.size + b.size), note=f"{n_resamples} resamples, seed {seed}")


def siegel_tukey_ranks(values: np.ndarray | list[float]) -> np.ndarray:
    """Siegel-Tukey ranks of the pooled sample: sorted ascending, rank 1 to the smallest,
    2 and 3 to the two largest, 4 and 5 to the next two smallest, and so on alternating
    ends in pairs; tied values share the average of their ranks."""
    v = _arr(values)
    n = v.size
    order = np.argsort(v, kind="mergesort")
    pos_rank = np.empty(n)
    lo, hi, r = 0, n - 1, 1
    take_low, first = True, True
    while lo <= hi:
        count = 1 if first else 2
        first = False
        for _ in range(count):
            if lo > hi:
                break
            if take_low:
                pos_rank[lo] = r
                lo += 1
            else:
                pos_rank[hi] = r
                hi -= 1
            r += 1
        take_low = not take_low
    ranks = np.empty(n)
    ranks[order] = pos_rank
    for val in np.unique(v):
        mask = v == val
        if mask.sum() > 1:
            ranks[mask] = ranks[mask].mean()
    return ranks


def siegel_tukey(x: np.ndarray | list[float], y: np.ndarray | list[float], *, center: bool = False) -> TestResult:
    """Siegel-Tukey test of equal dispersion (normal approximation with tie correction).

    Rank-sum W of x on Siegel-Tukey ranks r; E[W] = n1 * mean(r) and
    Var[W] = n1 n2 / (N (N-1)) * sum((r - mean(r))^2), the exact permutation variance of
    a sum of n1 scores drawn without replacement. Without ties this is n1 n2 (N+1)/12;
    with ties it stays exact (averaged Siegel-Tukey ranks are not consecutive integers,
    so the usual sum(t^3 - t) correction does not apply). A low W means x holds the
    extreme values (more dispersed). `center=True` subtracts each sample's median first,
    as the test assumes equal locations.
    """
    from scipy import stats as st
    a, b = _arr(x), _arr(y)
    if center:
        a, b = a - np.median(a), b - np.median(b)
    n1, n2 = a.size, b.size
    N = n1 + n2
    if n1 == 0 or n2 == 0:
        return TestResult(statistic=0.0, p_value=1.0, method="siegel-tukey", n=int(N), note="empty sample")
    pooled = np.concatenate([a, b])
    ranks = siegel_tukey_ranks(pooled)
    w = float(ranks[:n1].sum())
    var = n1 * n2 / (N * (N - 1)) * float(np.sum((ranks - ranks.mean()) ** 2)) if N > 1 else 0.0
    if var <= 0:
        return TestResult(statistic=0.0, p_value=1.0, method="siegel-tukey", n=int(N), note="all values tied")
    z = (w - n1 * ranks.mean()) / np.sqrt(var)
    return TestResult(statistic=float(z), p_value=float(2 * st.norm.sf(abs(z))), method="siegel-tukey",
                      n=int(N), note=f"rank sum of x = {w:g}")


def holm(p_values: list[float] | np.ndarray, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """(reject, adjusted p) by Holm's step-down method (statsmodels)."""
    from statsmodels.stats.multitest import multipletests
    p = _arr(p_values)
    if p.size == 0:
        return np.zeros(0, dtype=bool), p
    reject, adj, _, _ = multipletests(p, alpha=alpha, method="holm")
    return reject, adj


def benjamini_hochberg(p_values: list[float] | np.ndarray, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """(reject, adjusted p) controlling the false discovery rate (statsmodels fdr_bh)."""
    from statsmodels.stats.multitest import multipletests
    p = _arr(p_values)
    if p.size == 0:
        return np.zeros(0, dtype=bool), p
    reject, adj, _, _ = multipletests(p, alpha=alpha, method="fdr_bh")
    return reject, adj
