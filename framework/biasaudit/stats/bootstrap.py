"""Bootstrap intervals: percentile and BCa, plain and cluster, and differences.

Resampling is done with *row weights*: a resample is a vector of counts over the rows
(multinomial, summing to n), so a statistic is computed for all resamples at once as a
matrix product. Identical rows are collapsed first, which makes resampling a binary
table a multinomial draw over at most 2^k distinct rows: 10,000 resamples of 10,000
rows take milliseconds. This is the same distribution as resampling row indices.

scipy.stats.bootstrap has no cluster bootstrap and no weight-based fast path, so the
core is written here and checked against scipy's percentile/BCa intervals in the tests.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from biasaudit.records.estimate import Estimate
from biasaudit.stats.codes import Codes, group_index

# stat(values, weights) -> one statistic per weight row. `values` is (u, k) distinct
# rows, `weights` is (r, u) resample counts of those rows.
WeightedStat = Callable[[np.ndarray, np.ndarray], np.ndarray]

DEFAULT_RESAMPLES = 10_000
COUNT_DRAW_ABOVE = 2_000
"""Clusters above which `cluster_bootstrap` draws a resample as the counts of each distinct
cluster (a multinomial over the distinct (sum, size) pairs) when there are few of them,
as it does for few clusters. A per-response bootstrap of a 0/1 or -1/0/1 value (the
per-cell DNI of BiAxisAudit) has three distinct clusters: the counts cost R x 3 numbers
where the row-index draw costs R x n. The distribution is the same (the counts of the
distinct rows in n draws with replacement are multinomial); the random numbers are
not, so the digits of such an interval differ from the row-index draw's. At or below
this size the row-index draw is kept (every golden summary, up to the 20,050-request
grid's 1,000-row cells, keeps its digits); the estimate's note says which draw was used."""
_FEW = 64
"""Most distinct rows resampled as multinomial counts (above it, row indices are drawn)."""
_BATCH = 1_000
_CHUNK = 1 << 21
"""Most row indices drawn at once (16 MiB of them): a batch of resamples of many rows is
drawn in slices of whole resamples under this, so memory stays bounded whatever the
number of rows. The generator's stream does not depend on how a draw is sliced, and the
statistic is one value per resample, so the numbers are those of one whole batch."""


def weighted_mean(col: int = 0) -> WeightedStat:
    def stat(values: np.ndarray, w: np.ndarray) -> np.ndarray:
        out: np.ndarray = (w @ values[:, col]) / w.sum(axis=1)
        return out

    return stat


def collapse(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows and their counts."""
    x = np.asarray(data, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    values, counts = np.unique(x, axis=0, return_counts=True)
    return values, counts.astype(np.float64)


def resample_weights(counts: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(n_resamples, u) counts of each distinct row in a resample of all n rows."""
    n = int(counts.sum())
    u = len(counts)
    if u <= _FEW:
        # few distinct rows (binary tables): one multinomial draw per resample
        return rng.multinomial(n, counts / counts.sum(), size=n_resamples).astype(np.float64)
    # many distinct rows: draw row indices, count them with one flat bincount
    idx = rng.integers(0, n, size=(n_resamples, n))
    if n != u:  # rows standing for several (with one row each, the index is the row)
        idx = np.repeat(np.arange(u), counts.astype(np.int64))[idx]
    idx += (np.arange(n_resamples) * u)[:, None]
    return np.bincount(idx.ravel(), minlength=n_resamples * u).reshape(n_resamples, u).astype(np.float64)


def resampled(stat: WeightedStat, values: np.ndarray, counts: np.ndarray, n_resamples: int,
              rng: np.random.Generator) -> np.ndarray:
    """`stat` of `n_resamples` resamples, as `stat(values, resample_weights(...))` gives it,
    drawn in slices of at most `_CHUNK` row indices (a per-response bootstrap of a
    million rows would otherwise hold gigabytes of indices and counts at once)."""
    size = max(int(counts.sum()), len(counts))
    step = max(1, _CHUNK // size)
    if len(counts) <= _FEW or step >= n_resamples:
        return stat(values, resample_weights(counts, n_resamples, rng))
    return np.concatenate([stat(values, resample_weights(counts, min(step, n_resamples - i), rng))
                           for i in range(0, n_resamples, step)])


def _slices(rows: int, n_resamples: int) -> list[int]:
    """The resamples of each draw of `rows` row indices, in the order `bootstrap` and
    `resampled` draw them (batches of `_BATCH`, each in slices under `_CHUNK`)."""
    out: list[int] = []
    for i in range(0, n_resamples, _BATCH):
        m = min(_BATCH, n_resamples - i)
        step = max(1, _CHUNK // rows)
        out.extend([m] if step >= m else [min(step, m - j) for j in range(0, m, step)])
    return out


def _integral(table: np.ndarray) -> bool:
    """Every entry a whole number and every sum of a resample's rows exact in float64."""
    return bool(np.all(np.floor(table) == table)) and float(np.abs(table).max(initial=0.0)) * len(table) < 2.0**53


def _index_ratio(cl: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """sum(S) / sum(N) over each resample of the rows of `cl` (whole numbers: `_integral`),
    from the very row indices `resample_weights` draws, summed by lookup instead of
    counted into a (resamples x rows) weight matrix and multiplied: the sums are whole
    numbers, exact in any order, so every value is bit for bit the weighted one, at a
    fraction of the time (no bincount, no float matrix product)."""
    g = len(cl)
    small = float(np.abs(cl).max(initial=0.0)) <= 127
    sums = cl[:, 0].astype(np.int8 if small else np.int64)
    sizes = cl[:, 1].astype(np.int8 if small else np.int64)
    singletons = bool(np.all(cl[:, 1] == 1))  # one row per cluster: every resample has g rows
    out = []
    for m in _slices(g, n_resamples):
        idx = rng.integers(0, g, size=(m, g))
        num = sums[idx].sum(axis=1, dtype=np.int64).astype(np.float64)
        den = np.full(m, float(g)) if singletons else sizes[idx].sum(axis=1, dtype=np.int64).astype(np.float64)
        out.append(num / den)
    return np.concatenate(out)


def _jackknife(values: np.ndarray, counts: np.ndarray, stat: WeightedStat) -> tuple[np.ndarray, np.ndarray]:
    """Leave-one-out statistics, one per distinct row, and how many rows each stands for."""
    keep = counts > 0
    w = np.tile(counts, (len(counts), 1)) - np.eye(len(counts))
    w = w[keep]
    ok = w.sum(axis=1) > 0
    return stat(values, w[ok]), counts[keep][ok]


def interval_from_distribution(
    theta: float, boot: np.ndarray, level: float, method: str,
    jack: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[float, float, str]:
    from scipy.special import ndtr, ndtri
    alpha = (1 - level) / 2
    boot = boot[np.isfinite(boot)]
    if boot.size == 0:
        return float("nan"), float("nan"), "no finite resamples"
    if np.all(boot == boot[0]):
        return float(boot[0]), float(boot[0]), "every resample gives the same value"
    if method == "percentile" or jack is None:
        lo, hi = np.quantile(boot, [alpha, 1 - alpha])
        return float(lo), float(hi), ""
    # BCa (Efron 1987): bias correction z0 and acceleration a from the jackknife.
    prop = (np.sum(boot < theta) + 0.5 * np.sum(boot == theta)) / boot.size
    prop = min(max(prop, 1 / (2 * boot.size)), 1 - 1 / (2 * boot.size))
    z0 = ndtri(prop)
    jv, jc = jack
    mean_j = np.sum(jc * jv) / np.sum(jc)
    d = mean_j - jv
    den = 6.0 * np.sum(jc * d**2) ** 1.5
    a = float(np.sum(jc * d**3) / den) if den > 0 else 0.0
    za = ndtri(np.array([alpha, 1 - alpha]))
    adj = ndtr(z0 + (z0 + za) / (1 - a * (z0 + za)))
    lo, hi = np.quantile(boot, adj)
    return float(lo), float(hi), ""


def tost_interval(theta: float, boot: np.ndarray, level: float, method: str,
                  jack: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[float, float] | None:
    """The (1 - 2 alpha) interval from the same resamples (and the same BCa correction),
    for equivalence thresholds; None when the distribution gives no finite interval."""
    lo, hi, _ = interval_from_distribution(theta, boot, 2 * level - 1, method, jack)
    return None if not (np.isfinite(lo) and np.isfinite(hi)) else (lo, hi)


def bootstrap(
    data: np.ndarray | list[float],
    stat: WeightedStat | None = None,
    *,
    method: str = "bca",
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> Estimate:
    """Bootstrap interval for `stat` (default: the mean of the first column)."""
    stat = stat or weighted_mean(0)
    x = np.asarray(data, dtype=np.float64)
    n = int(x.shape[0]) if x.size else 0
    if n == 0:
        return Estimate.no_data(f"bootstrap-{method}")
    values, counts = collapse(x)
    theta = float(stat(values, counts[None, :])[0])
    if n == 1:
        return Estimate(value=theta, ci_low=theta, ci_high=theta, n=1, method=f"bootstrap-{method}",
                        level=level, note="one row: no interval")
    rng = np.random.default_rng(seed)
    boot = np.concatenate([
        resampled(stat, values, counts, min(_BATCH, n_resamples - i), rng)
        for i in range(0, n_resamples, _BATCH)
    ])
    jack = _jackknife(values, counts, stat) if method == "bca" else None
    lo, hi, note = interval_from_distribution(theta, boot, level, method, jack)
    return Estimate(value=theta, ci_low=lo, ci_high=hi, n=n, method=f"bootstrap-{method}", level=level,
                    note=note or f"{n_resamples} resamples, seed {seed}",
                    tost_interval=tost_interval(theta, boot, level, method, jack))


def cluster_bootstrap(
    values: np.ndarray | list[float],
    clusters: np.ndarray | list[object] | Codes,
    *,
    method: str = "percentile",
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
    count_draw_above: int | None = COUNT_DRAW_ABOVE,
) -> Estimate:
    """Interval for the pooled mean of `values` when rows come in clusters (e.g. all the
    responses to one statement): resample clusters with replacement, keep all their
    rows. The pooled mean of a resample is sum(w_c * S_c) / sum(w_c * N_c). Above
    `count_draw_above` clusters (None: never) with few distinct (S_c, N_c), a resample
    is drawn as the counts of each distinct cluster (`COUNT_DRAW_ABOVE`)."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return Estimate.no_data(f"cluster-bootstrap-{method}")
    g, inverse = group_index(clusters)
    sums = np.bincount(inverse, weights=v)
    sizes = np.bincount(inverse).astype(np.float64)
    cl = np.column_stack([sums, sizes])
    theta = float(sums.sum() / sizes.sum())
    if g == 1:
        return Estimate(value=theta, ci_low=theta, ci_high=theta, n=int(v.size), method=f"cluster-bootstrap-{method}",
                        level=level, note="one cluster: no interval")

    def ratio(c: np.ndarray, w: np.ndarray) -> np.ndarray:
        out: np.ndarray = (w @ c[:, 0]) / (w @ c[:, 1])
        return out

    rng = np.random.default_rng(seed)
    ones = np.ones(g)
    kinds, per_kind = collapse(cl) if count_draw_above is not None and g > count_draw_above else (cl, ones)
    drawn = ""
    if len(kinds) < g and len(kinds) <= _FEW:
        # few distinct clusters among many: the counts of each (see COUNT_DRAW_ABOVE)
        boot = ratio(kinds, resample_weights(per_kind, n_resamples, rng))
        jack = _jackknife(kinds, per_kind, ratio) if method == "bca" else None
        if len(kinds) > 1:  # (one kind: every resample is the same, however drawn)
            drawn = f"; drawn as counts of the {len(kinds)} distinct clusters (multinomial, above {count_draw_above})"
    else:
        if g > _FEW and _integral(cl):
            boot = _index_ratio(cl, n_resamples, rng)  # the same draws and values, summed by lookup
        else:
            boot = np.concatenate([
                resampled(ratio, cl, ones, min(_BATCH, n_resamples - i), rng)
                for i in range(0, n_resamples, _BATCH)
            ])
        jack = _jackknife(cl, ones, ratio) if method == "bca" else None
    lo, hi, note = interval_from_distribution(theta, boot, level, method, jack)
    return Estimate(value=theta, ci_low=lo, ci_high=hi, n=int(v.size), method=f"cluster-bootstrap-{method}",
                    level=level, note=(note or f"{g} clusters, {n_resamples} resamples, seed {seed}") + drawn,
                    tost_interval=tost_interval(theta, boot, level, method, jack))


def bootstrap_difference(
    x: np.ndarray | list[float],
    y: np.ndarray | list[float],
    *,
    paired: bool = False,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> Estimate:
    """Percentile interval for mean(x) - mean(y). Independent samples are resampled
    separately; paired samples (same units) are resampled together."""
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.size == 0 or b.size == 0:
        return Estimate.no_data("bootstrap-difference")
    if paired:
        if a.shape != b.shape:
            raise ValueError("paired samples must have the same length")
        est = bootstrap(a - b, method="percentile", n_resamples=n_resamples, seed=seed, level=level)
        return est.model_copy(update={"method": "bootstrap-difference-paired"})
    rng = np.random.default_rng(seed)
    va, ca = collapse(a)
    vb, cb = collapse(b)
    stat = weighted_mean(0)
    boot = np.concatenate([
        stat(va, resample_weights(ca, m, rng)) - stat(vb, resample_weights(cb, m, rng))
        for m in (min(_BATCH, n_resamples - i) for i in range(0, n_resamples, _BATCH))
    ])
    theta = float(a.mean() - b.mean())
    lo, hi, note = interval_from_distribution(theta, boot, level, "percentile")
    return Estimate(value=theta, ci_low=lo, ci_high=hi, n=int(a.size + b.size), method="bootstrap-difference",
                    level=level, note=note or f"n_x={a.size}, n_y={b.size}, {n_resamples} resamples, seed {seed}",
                    tost_interval=tost_interval(theta, boot, level, "percentile"))
