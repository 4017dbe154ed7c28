"""Spread of a per-cell statistic across prompt conditions: the range of the cell means
with a cluster-bootstrap interval, and one-way eta^2 of the unit values on the cell.

Stimuli are resampled as clusters (a stimulus appears in every cell), so the interval
keeps the pairing of cells. The range of noisy cell means is biased upward with few
units per cell; the interval says how far it could be from that noise alone.
No library computes a cluster-bootstrap interval for a range of group means, so it is
written here on the same weight-matrix scheme as `bootstrap.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from biasaudit.records.estimate import Estimate, Spread
from biasaudit.stats.codes import Codes
from biasaudit.stats.effects import eta_squared


def cell_spread(cells: Sequence[str] | Codes, clusters: Sequence[str] | Codes, values: Sequence[float] | np.ndarray, *,
                n_resamples: int = 2_000, seed: int = 0, level: float = 0.95) -> Spread | None:
    """Spread over cells of the mean of `values`; one row per unit (cell, cluster, value).
    None when fewer than two cells have data. `Codes` for cells and clusters give the same
    result without a string per row (stats/codes.py)."""
    v = np.asarray(values, dtype=np.float64)
    keep = ~np.isnan(v)
    if isinstance(cells, Codes) and isinstance(clusters, Codes):
        return _cell_spread_codes(cells, clusters, v, keep, n_resamples, seed, level)
    cell_arr = np.asarray(cells, dtype=object)[keep]
    clu_arr = np.asarray(clusters, dtype=object)[keep]
    v = v[keep]
    cell_ids = sorted(set(cell_arr.tolist()))
    if len(cell_ids) < 2:
        return None
    clu_ids = sorted(set(clu_arr.tolist()))
    ci = {c: i for i, c in enumerate(cell_ids)}
    ki = {c: i for i, c in enumerate(clu_ids)}
    # (stimulus, cell) sums in one bincount: it adds the rows in order, as a loop would
    flat = np.fromiter((ki[k] * len(cell_ids) + ci[c] for c, k in zip(cell_arr, clu_arr, strict=True)),
                       dtype=np.int64, count=v.size)
    return _spread(flat, v, (len(clu_ids), len(cell_ids)), cell_ids, cell_arr.tolist(), n_resamples, seed, level)


def _cell_spread_codes(cells: Codes, clusters: Codes, v: np.ndarray, keep: np.ndarray, n_resamples: int, seed: int,
                       level: float) -> Spread | None:
    """`cell_spread` of coded rows: the cells and clusters present, in code order (their
    names' sorted order, as `sorted(set(...))` of the names gives them)."""
    cell_codes, clu_codes, v = cells.codes[keep], clusters.codes[keep], v[keep]
    present_cells = np.unique(cell_codes)
    if len(present_cells) < 2:
        return None
    present_clu = np.unique(clu_codes)
    flat = (np.searchsorted(present_clu, clu_codes).astype(np.int64) * len(present_cells)
            + np.searchsorted(present_cells, cell_codes))
    cell_ids = [cells.names[i] for i in present_cells.tolist()]
    groups = Codes(np.searchsorted(present_cells, cell_codes), cell_ids)
    return _spread(flat, v, (len(present_clu), len(present_cells)), cell_ids, groups, n_resamples, seed, level)


def _spread(flat: np.ndarray, v: np.ndarray, shape: tuple[int, int], cell_ids: list[str],
            groups: list[object] | Codes, n_resamples: int, seed: int, level: float) -> Spread:
    """The range of the cell means over (stimulus, cell) sums and its interval."""
    sums = np.bincount(flat, weights=v, minlength=shape[0] * shape[1]).reshape(shape)
    cnts = np.bincount(flat, minlength=shape[0] * shape[1]).reshape(shape).astype(np.float64)
    means = sums.sum(0) / cnts.sum(0)
    point = float(means.max() - means.min())
    rng = np.random.default_rng(seed)
    n = shape[0]
    w = rng.multinomial(n, np.full(n, 1.0 / n), size=n_resamples).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        bm = (w @ sums) / (w @ cnts)
    dist = np.nanmax(bm, axis=1) - np.nanmin(bm, axis=1)
    dist = dist[~np.isnan(dist)]
    alpha = (1 - level) / 2
    lo, hi = (float(np.quantile(dist, alpha)), float(np.quantile(dist, 1 - alpha))) if dist.size else (None, None)
    # the (1 - 2 alpha) interval from the same resamples, for equivalence thresholds
    t_alpha = 1 - level
    tost = (float(np.quantile(dist, t_alpha)), float(np.quantile(dist, 1 - t_alpha))) if dist.size else None
    est = Estimate(value=point, ci_low=lo, ci_high=hi, n=n, method="cluster-bootstrap-percentile", level=level,
                   note=f"max - min over {len(cell_ids)} cells; stimuli resampled as clusters", tost_interval=tost)
    return Spread(range=est, eta2=eta_squared(v, groups), n_cells=len(cell_ids),
                  min_cell=cell_ids[int(np.argmin(means))], max_cell=cell_ids[int(np.argmax(means))])
