"""Inter-rater agreement: Cohen's kappa (sklearn), Fleiss' kappa (statsmodels),
Krippendorff's alpha for nominal data with missing labels (written here)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def cohen_kappa(a: Sequence[Any], b: Sequence[Any]) -> float | None:
    """Cohen's kappa of two raters. None when both raters use one single label (chance
    agreement is 1, so kappa is undefined)."""
    from sklearn.metrics import cohen_kappa_score

    if len(a) == 0 or len(a) != len(b):
        return None
    if len(set(a) | set(b)) < 2:
        return None
    return float(cohen_kappa_score(list(a), list(b)))


def fleiss_kappa(ratings: Sequence[Sequence[Any]]) -> float | None:
    """Fleiss' kappa; `ratings` is one row per item, one label per rater (same number of
    raters per item)."""
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as _fk

    if not ratings:
        return None
    labels = sorted({str(x) for row in ratings for x in row})
    if len(labels) < 2:
        return None
    codes = np.array([[labels.index(str(x)) for x in row] for row in ratings])
    table, _ = aggregate_raters(codes, n_cat=len(labels))
    return float(_fk(table, method="fleiss"))


def unit_coincidences(counts: np.ndarray) -> np.ndarray:
    """One unit's coincidences: each ordered pair of different raters' values, weighted 1/(m-1)
    (`counts`: the unit's count of values per category, as floats)."""
    m = counts.sum()
    out: np.ndarray = (np.outer(counts, counts) - np.diag(counts)) / (m - 1)
    return out


def coincidences(units: Sequence[Sequence[str]], cats: Sequence[str]) -> np.ndarray:
    """The coincidence matrix of units that each hold two or more labels, summed over units.

    Units are grouped by their label counts first (a million units have a handful of
    distinct ones), so the matrix costs one pass over the labels, not one outer product
    per unit. Where every unit's weight 1/(m-1) is a power of two (two, three, five raters
    ...) each unit's matrix is exact in binary, so count x matrix is exactly the sum the
    unit-by-unit loop gives; otherwise the loop runs, so the number is the same either way."""
    from collections import Counter

    index = {c: i for i, c in enumerate(cats)}
    patterns = Counter(tuple(sorted(Counter(index[v] for v in u).items())) for u in units)

    def counts_of(pattern: tuple[tuple[int, int], ...]) -> np.ndarray:
        counts = np.zeros(len(cats))
        for i, c in pattern:
            counts[i] = c
        return counts

    o = np.zeros((len(cats), len(cats)))
    exact = all(((m := sum(c for _, c in pat)) - 1) & (m - 2) == 0 for pat in patterns)
    if exact:
        for pat, times in patterns.items():
            o += times * unit_coincidences(counts_of(pat))
        return o
    for u in units:
        counts = np.zeros(len(cats))
        for v in u:
            counts[index[v]] += 1
        o += unit_coincidences(counts)
    return o


def krippendorff_alpha_nominal(units: Sequence[Sequence[Any]]) -> float | None:
    """Krippendorff's alpha for nominal labels. `units` holds, per unit, the labels the
    raters gave (None for a missing label). alpha = 1 - D_o / D_e from the coincidence
    matrix; units with fewer than two labels are not pairable and are left out.

    Written here because no kept library in our stack has it; tested against the
    worked example in Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability".
    """
    values: list[list[str]] = [[str(v) for v in u if v is not None] for u in units]
    values = [u for u in values if len(u) >= 2]
    if not values:
        return None
    cats = sorted({v for u in values for v in u})
    return alpha_of_coincidences(coincidences(values, cats))


def alpha_of_coincidences(o: np.ndarray) -> float | None:
    """Krippendorff's nominal alpha of a coincidence matrix (None: undefined: at most one
    pairable value, or one category only). The tail of `krippendorff_alpha_nominal`, for
    callers that sum the matrix from integer columns instead of one label list per unit."""
    n_c = o.sum(axis=1)
    n = n_c.sum()
    if n <= 1:
        return None
    d_o = (n - np.trace(o)) / n
    d_e = (n * n - np.sum(n_c**2)) / (n * (n - 1))
    if d_e == 0:
        return None
    return float(1 - d_o / d_e)


def _used(conf: np.ndarray) -> np.ndarray:
    """The labels a confusion matrix uses (a row or column with a count): the labels
    sklearn's `confusion_matrix` keeps (those in the data). Zero rows would not change a
    count but would change how float sums group, hence the same label set, in order."""
    return np.flatnonzero(conf.sum(axis=0) + conf.sum(axis=1))


def kappa_of_confusion(conf: np.ndarray) -> float | None:
    """Cohen's kappa of two raters from their confusion matrix (rows: the first rater's
    label, columns: the second's, labels in sorted order), as `cohen_kappa` gives it from
    the label lists: the same float operations as `sklearn.metrics.cohen_kappa_score`
    (1.x: 1 - sum of off-diagonal counts / sum of off-diagonal expected counts), so the
    same bits, without sklearn's per-row arrays (a million units, issue 42); the tests
    compare it with sklearn on random tables. None when fewer than two labels are used."""
    keep = _used(conf)
    if keep.size < 2:
        return None
    c = np.asarray(conf, dtype=np.float64)[np.ix_(keep, keep)]
    k = keep.size
    sum0 = np.sum(c, axis=0)
    sum1 = np.sum(c, axis=1)
    expected = np.outer(sum0, sum1) / np.sum(sum0)
    w_mat = np.ones((k, k), dtype=np.float64)
    np.fill_diagonal(w_mat, 0)
    denominator = np.sum(w_mat * expected)
    if denominator == 0:  # unreachable with two labels used (sklearn: nan)
        return None
    return float(1 - np.sum(w_mat * c) / denominator)


def fleiss_kappa_patterns(patterns: np.ndarray, of_row: np.ndarray) -> float | None:
    """Fleiss' kappa of rows given as distinct patterns: `patterns` (p, categories) holds
    each distinct row's count of raters per category, `of_row` each row's pattern (in the
    rows' order). The same float operations as statsmodels' `fleiss_kappa` on the full
    (rows, categories) table (`fleiss_kappa` here), so the same bits, from one float per
    row instead of a table and `aggregate_raters`' Python loop over rows (issue 42);
    the tests compare it with statsmodels. Categories no row uses are dropped first, as
    `fleiss_kappa` builds its table from the labels present."""
    if of_row.size == 0:
        return None
    table = np.asarray(patterns, dtype=np.float64)
    used_times = np.bincount(of_row, minlength=len(table)).astype(np.float64)
    keep = np.flatnonzero(used_times @ table)
    if keep.size < 2:
        return None
    table = table[:, keep]
    n_rat = table[used_times > 0].sum(1).max()
    # the column sums and the total of the full table: whole numbers, exact in any order
    col = used_times @ table
    p_cat = col / col.sum()
    p_rat = (np.sum(table * table, axis=1) - n_rat) / (n_rat * (n_rat - 1.0))
    p_mean = p_rat[of_row].mean()
    p_mean_exp = (p_cat * p_cat).sum()
    return float((p_mean - p_mean_exp) / (1 - p_mean_exp))
