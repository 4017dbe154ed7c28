"""How far coding layers can be trusted: agreement of layer pairs, of the judges inside
a panel, and the position effect of counterbalanced multiple-choice layers.

For a pair of layers over one label space (after each layer's `map`), on the units both
coded: percent agreement, Cohen's kappa and Krippendorff's alpha (nominal), each with a
95% interval, pooled and per prompt condition; with both layers' `endorse` labels, the
inconsistency rate IR (the layers disagree on endorsement) and the net imbalance DNI
(first layer's endorsement rate minus the second's), on the units both coded or the first
does not apply to (which then counts as not endorsing, as BiAxisAudit reads a task
without a selection layer).

Intervals resample stimuli (a stimulus's units under every condition stay together):
kappa and alpha are functions of the (weighted) confusion or coincidence matrix, so one
matrix per stimulus and a multinomial weight per resample give every resample's value
at once. No kept library bootstraps these clustered (krippendorff and sklearn give only
the point values, which the tests compare against), hence the code here.
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from biasaudit.coding.layers import CodingPlan, Layer, ReliabilityPair
from biasaudit.records.codes import Code, Unit
from biasaudit.records.coding import Agreement, PairReport, PanelReport, PositionReport
from biasaudit.records.estimate import Estimate
from biasaudit.stats.agreement import (
    alpha_of_coincidences,
    fleiss_kappa_patterns,
    kappa_of_confusion,
    unit_coincidences,
)
from biasaudit.stats.bootstrap import resampled
from biasaudit.stats.codes import Codes
from biasaudit.stats.disaggregate import Obs, pooled_columns, proportion

RESAMPLES = 2000
LEVEL = 0.95
_METHOD = "cluster-bootstrap-percentile"


class Vocab:
    """Texts (labels, stimuli, cells) as small ints in the order first seen: a column of
    a million units holds 4 bytes a unit, not a reference to a string (issue 42).
    `codes` turns a column of them into `Codes` (names sorted), the order every
    estimator groups in, so the numbers are those of the texts."""

    __slots__ = ("ids", "names")

    def __init__(self) -> None:
        self.ids: dict[Hashable, int] = {}
        self.names: list[Any] = []

    def __call__(self, name: Hashable) -> int:
        at = self.ids.get(name)
        if at is None:
            at = self.ids[name] = len(self.names)
            self.names.append(name)
        return at

    def __len__(self) -> int:
        return len(self.names)

    def ranks(self) -> tuple[np.ndarray, list[Any]]:
        """(id -> its rank in sorted order, the names sorted)."""
        order = sorted(range(len(self.names)), key=self.names.__getitem__)
        rank = np.empty(len(order), dtype=np.int32)
        rank[order] = np.arange(len(order), dtype=np.int32)
        return rank, [self.names[i] for i in order]

    def codes(self, column: np.ndarray) -> Codes:
        rank, names = self.ranks()
        return Codes(rank[column] if column.size else np.zeros(0, dtype=np.int32), names)


def _int_column(values: array) -> np.ndarray:  # type: ignore[type-arg]
    return np.frombuffer(values, dtype=np.int32) if len(values) else np.zeros(0, dtype=np.int32)


class UnitColumns:
    """The units' prompt conditions and stimuli as integer columns (`Codes`, names
    sorted), built once for the coding summary and read by every layer and pair, and
    the conditions in the order the units first show them (the report's order)."""

    __slots__ = ("cell_order", "cells", "clusters", "first")

    def __init__(self, units: Sequence[Unit]) -> None:
        cells, stimuli = Vocab(), Vocab()
        cell_col, stim_col = array("i"), array("i")
        first: list[int] = []  # the first unit of each cell, by cell id
        for i, u in enumerate(units):
            c = cells(u.cell)
            if c == len(first):
                first.append(i)
            cell_col.append(c)
            stim_col.append(stimuli(u.stimulus))
        self.cells = cells.codes(_int_column(cell_col))
        self.clusters = stimuli.codes(_int_column(stim_col))
        rank, _ = cells.ranks()
        self.cell_order: list[int] = rank.tolist()
        """Cells (as their code) in the order first seen."""
        self.first: list[int] = first
        """Each cell's (in `cell_order`) first unit."""


def _sub(codes: Codes, at: np.ndarray) -> Codes:
    return Codes(codes.codes[at], codes.names)


def _interval(boot: np.ndarray, point: float | None) -> tuple[float | None, float | None]:
    boot = boot[np.isfinite(boot)]
    if point is None or boot.size == 0:
        return None, None
    lo, hi = np.quantile(boot, [(1 - LEVEL) / 2, 1 - (1 - LEVEL) / 2])
    return float(lo), float(hi)


def _stat_estimate(point: float | None, boot: np.ndarray, n: int, clusters: int, method: str) -> Estimate:
    if point is None:
        return Estimate.no_data(method, "undefined: one label only, or no units")
    lo, hi = _interval(boot, point)
    return Estimate(value=point, ci_low=lo, ci_high=hi, n=n, method=method, clusters=clusters,
                    note=f"stimuli resampled ({RESAMPLES} resamples)")


def _resampled(per_group: np.ndarray, stat: Callable[[np.ndarray], np.ndarray], seed: int) -> np.ndarray:
    """`stat` of each resample's summed matrix, stimuli resampled: one multinomial weight
    per stimulus and resample, drawn as `stats.bootstrap.resample_weights` draws them, in
    slices of resamples when there are many stimuli (`resampled`: the same draws, but a
    thousand stimuli no longer hold 2,000 x stimuli weights and row indices at once)."""

    def of(mats: np.ndarray, w: np.ndarray) -> np.ndarray:
        out: np.ndarray = stat(np.einsum("rg,gij->rij", w, mats))
        return out

    groups = per_group.shape[0]
    return resampled(of, per_group, np.ones(groups), RESAMPLES, np.random.default_rng(seed))


def _compact(a: np.ndarray, b: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """(labels used, a and b as indices among them): the labels of a subset in sorted
    order (ids are sorted ranks), as the old code's `sorted(set(a) | set(b))`."""
    used = np.unique(np.concatenate([a, b]))
    lut = np.zeros(int(used.max()) + 1 if used.size else 0, dtype=np.int64)
    lut[used] = np.arange(used.size)
    return int(used.size), lut[a], lut[b]


def kappa_alpha_codes(a: np.ndarray, b: np.ndarray, clusters: np.ndarray, seed: int = 0) -> tuple[Estimate, Estimate]:
    """Cohen's kappa and Krippendorff's alpha of two raters (no missing labels) from
    integer columns: `a`, `b` each unit's label as its rank in one sorted label set,
    `clusters` its stimulus as its rank in the sorted stimuli. One confusion matrix per
    stimulus (`np.bincount`); the point values from their sum (`kappa_of_confusion`, the
    coincidences `C + C^T` for alpha), the intervals from the weighted sums."""
    n = int(a.size)
    if n == 0:
        return Estimate.no_data(_METHOD), Estimate.no_data(_METHOD)
    k, ai, bi = _compact(a, b)
    _, g_of = np.unique(clusters, return_inverse=True)
    groups = int(g_of.max()) + 1
    conf = np.bincount((g_of.ravel().astype(np.int64) * k + ai) * k + bi,
                       minlength=groups * k * k).reshape(groups, k, k).astype(np.float64)

    def stat(mats: np.ndarray) -> np.ndarray:
        tot = mats.sum(axis=(1, 2))
        with np.errstate(invalid="ignore", divide="ignore"):
            po = np.trace(mats, axis1=1, axis2=2) / tot
            pe = np.sum(mats.sum(axis=2) * mats.sum(axis=1), axis=1) / tot**2
            kappas = (po - pe) / (1 - pe)
            coinc = mats + np.transpose(mats, (0, 2, 1))
            big_n = 2 * tot
            nc = coinc.sum(axis=2)
            alphas = 1 - (big_n - 1) * (big_n - np.trace(coinc, axis1=1, axis2=2)) / (big_n**2 - np.sum(nc**2, axis=1))
        out: np.ndarray = np.stack([kappas, alphas], axis=1)
        return out

    boot = _resampled(conf, stat, seed)
    total = conf.sum(axis=0)
    k_point = kappa_of_confusion(total)
    a_point = alpha_of_coincidences(total + total.T) if k > 1 else None
    return (_stat_estimate(k_point, boot[:, 0], n, groups, _METHOD),
            _stat_estimate(a_point, boot[:, 1], n, groups, _METHOD))


def kappa_alpha(a: Sequence[str], b: Sequence[str], clusters: Sequence[str], seed: int = 0
                ) -> tuple[Estimate, Estimate]:
    """Cohen's kappa and Krippendorff's alpha of two raters (no missing labels), with
    cluster-bootstrap percentile intervals (`kappa_alpha_codes` of the texts' ranks)."""
    labels, stimuli = Vocab(), Vocab()
    la = np.array([labels(x) for x in a], dtype=np.int32)
    lb = np.array([labels(y) for y in b], dtype=np.int32)
    cl = np.array([stimuli(c) for c in clusters], dtype=np.int32)
    if len(la) != len(lb) or len(la) != len(cl):
        raise ValueError("kappa_alpha: a, b and clusters must have the same length")
    rank, _ = labels.ranks()
    return kappa_alpha_codes(rank[la] if la.size else la, rank[lb] if lb.size else lb,
                             stimuli.codes(cl).codes, seed)


def _unit_matrices(patterns: np.ndarray) -> np.ndarray:
    """Each pattern's coincidence matrix (`stats.agreement.unit_coincidences` of its counts
    as floats, as `coincidences` builds them; zero for a pattern of fewer than two values,
    which is not pairable and never summed)."""
    k = patterns.shape[1]
    out = np.zeros((len(patterns), k, k))
    for p, c in enumerate(patterns.astype(np.float64)):
        if c.sum() >= 2:
            out[p] = unit_coincidences(c)
    return out


def _group_coincidences(patterns: np.ndarray, of_unit: np.ndarray, group: np.ndarray, groups: int) -> np.ndarray:
    """Per stimulus, the summed coincidence matrix of its units (each unit's labels given
    as a pattern: its count per category), as `stats.agreement.coincidences` sums them:
    by pattern counts where every unit's weight 1/(m-1) is exact in binary (the sum is
    exact in any order), else unit by unit in the units' order (the same float sums)."""
    k = patterns.shape[1]
    mats = _unit_matrices(patterns)
    m = patterns.sum(axis=1).astype(np.int64)
    exact_pattern = ((m - 1) & (m - 2)) == 0
    times = np.bincount(group.astype(np.int64) * len(patterns) + of_unit,
                        minlength=groups * len(patterns)).reshape(groups, len(patterns))
    o = np.zeros((groups, k, k))
    exact_group = ~((times > 0) & ~exact_pattern).any(axis=1)
    for g in np.flatnonzero(exact_group):
        for p in np.flatnonzero(times[g]):
            o[g] += times[g, p] * mats[p]
    for g in np.flatnonzero(~exact_group):
        for p in of_unit[group == g]:
            o[g] += mats[p]
    return o


def _total_coincidences(patterns: np.ndarray, of_unit: np.ndarray, per_group: np.ndarray) -> np.ndarray:
    """All units' coincidence matrix, as `coincidences` sums it over every unit at once."""
    m = patterns.sum(axis=1).astype(np.int64)
    if bool((((m - 1) & (m - 2)) == 0)[np.unique(of_unit)].all()):
        out: np.ndarray = per_group.sum(axis=0)  # exact sums: any order
        return out
    o = np.zeros(per_group.shape[1:])
    mats = _unit_matrices(patterns)
    for p in of_unit:
        o += mats[p]
    return o


def _alpha_of_patterns(patterns: np.ndarray, of_unit: np.ndarray, clusters: np.ndarray, seed: int) -> Estimate:
    """Krippendorff's alpha with a cluster-bootstrap interval of units given as label
    patterns (each unit's count per category; units with fewer than two labels left
    out), `clusters` each unit's stimulus rank."""
    keep = patterns.sum(axis=1)[of_unit] >= 2
    if not keep.any():
        return Estimate.no_data(_METHOD)
    of_unit, clusters = of_unit[keep], clusters[keep]
    used = np.flatnonzero(np.bincount(of_unit, minlength=len(patterns)) @ patterns)
    pats = patterns[:, used]
    _, g_of = np.unique(clusters, return_inverse=True)
    g_of = g_of.ravel()
    groups = int(g_of.max()) + 1
    o = _group_coincidences(pats, of_unit, g_of, groups)

    def stat(mats: np.ndarray) -> np.ndarray:
        big_n = mats.sum(axis=(1, 2))
        nc = mats.sum(axis=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            out: np.ndarray = 1 - (big_n - 1) * (big_n - np.trace(mats, axis1=1, axis2=2)) / (
                big_n**2 - np.sum(nc**2, axis=1))
        return out

    boot = _resampled(o, stat, seed)
    point = alpha_of_coincidences(_total_coincidences(pats, of_unit, o))
    return _stat_estimate(point, boot, int(of_unit.size), groups, _METHOD)


def panel_alpha(units: Sequence[Sequence[str | None]], clusters: Sequence[str], seed: int = 0) -> Estimate:
    """Krippendorff's alpha of several raters with missing labels, with a cluster-bootstrap
    interval (each unit's coincidence matrix, weighted by its stimulus's resample count)."""
    labels, stimuli, shapes = Vocab(), Vocab(), Vocab()
    rows = [sorted(labels(v) for v in u if v is not None) for u in units]
    rank, _ = labels.ranks()
    of_unit = np.array([shapes(tuple(int(rank[v]) for v in r)) for r in rows], dtype=np.int64)
    patterns = np.zeros((len(shapes), len(labels)), dtype=np.int64)
    for p, shape in enumerate(shapes.names):
        np.add.at(patterns[p], list(shape), 1)
    cl = stimuli.codes(np.array([stimuli(c) for c in clusters], dtype=np.int32)).codes
    return _alpha_of_patterns(patterns, of_unit, cl, seed)


def _agreement(a: np.ndarray, b: np.ndarray, clusters: Codes, cells: Codes, ea: np.ndarray, eb: np.ndarray,
               e_clusters: Codes, e_cells: Codes, seed: int) -> Agreement:
    """Agreement of the units both layers coded (`a`, `b`: label ranks) and, where both
    layers endorse, IR and DNI of the endorsement columns `ea`, `eb` (0/1)."""
    kappa, alpha = kappa_alpha_codes(a, b, clusters.codes, seed)
    # as columns (`pooled_columns`: the same estimates as `pooled` over one `Obs` per row,
    # without allocating one per unit: issue 42)
    percent = pooled_columns((a == b).astype(np.float64), clusters, cells, proportion)
    ir = dni = None
    if ea.size:
        diff = ea.astype(np.float64) - eb.astype(np.float64)
        ir = pooled_columns(np.abs(diff), e_clusters, e_cells, proportion)
        dni = pooled_columns(diff, e_clusters, e_cells, _bootstrap_mean(seed))
    return Agreement(n=int(a.size), percent=percent, kappa=kappa, alpha=alpha, ir=ir, dni=dni)


def _bootstrap_mean(seed: int) -> Any:
    from biasaudit.stats import cluster_bootstrap

    def est(rows: Sequence[Obs]) -> Estimate:
        # a difference of two rates: bootstrap the per-unit difference
        return cluster_bootstrap([o.value for o in rows], list(range(len(rows))), seed=seed)

    return est


class PairColumns:
    """What a reliability pair reads of its units, as columns: the units both layers
    coded (`rows`: their positions among the units, `a` and `b` their mapped labels as
    ranks in `labels`), and the units with both layers' endorsement (`ends`, `ea`, `eb`:
    0/1). About 20 bytes a unit, where (Unit, str, str) tuples and label lists took
    hundreds (issue 42)."""

    __slots__ = ("a", "b", "ea", "eb", "ends", "labels", "rows")

    def __init__(self, pair: ReliabilityPair, layers: Mapping[str, Layer], units: Sequence[Unit],
                 codes: Mapping[str, Mapping[str, Code]]) -> None:
        la, lb = layers[pair.a], layers[pair.b]
        ca, cb = codes.get(pair.a, {}), codes.get(pair.b, {})
        both_endorse = la.endorse is not None and lb.endorse is not None
        end_a, end_b = la.endorse or (), lb.endorse or ()
        labels = Vocab()
        rows, xa, xb, ends = array("i"), array("i"), array("i"), array("i")
        ea, eb = bytearray(), bytearray()
        for i, u in enumerate(units):
            x, y = ca.get(u.id), cb.get(u.id)
            if x is None or y is None:
                continue
            if x.coded and y.coded and x.label is not None and y.label is not None:
                rows.append(i)
                xa.append(labels(pair.map_a.get(x.label, x.label)))
                xb.append(labels(pair.map_b.get(y.label, y.label)))
            if both_endorse and y.coded and (x.coded or x.status == "not_applicable"):
                ends.append(i)
                ea.append(1 if x.coded and x.label in end_a else 0)
                eb.append(1 if y.label in end_b else 0)
        rank, self.labels = labels.ranks()
        self.rows = _int_column(rows)
        self.a = rank[_int_column(xa)] if len(xa) else _int_column(xa)
        self.b = rank[_int_column(xb)] if len(xb) else _int_column(xb)
        self.ends = _int_column(ends)
        self.ea = np.frombuffer(ea, dtype=np.uint8) if ea else np.zeros(0, dtype=np.uint8)
        self.eb = np.frombuffer(eb, dtype=np.uint8) if eb else np.zeros(0, dtype=np.uint8)


def _by_cell(cells: np.ndarray) -> dict[int, np.ndarray]:
    """Cell code -> the positions of its rows, in row order (one stable sort)."""
    order = np.argsort(cells, kind="stable")
    bounds = np.flatnonzero(np.diff(cells[order])) + 1
    return {int(cells[part[0]]): part for part in np.split(order, bounds) if part.size}


def pair_report(pair: ReliabilityPair, layers: Mapping[str, Layer], units: Sequence[Unit],
                codes: Mapping[str, Mapping[str, Code]], seed: int = 0, cols: UnitColumns | None = None) -> PairReport:
    cols = cols if cols is not None else UnitColumns(units)
    p = PairColumns(pair, layers, units, codes)
    cl, ce = _sub(cols.clusters, p.rows), _sub(cols.cells, p.rows)
    e_cl, e_ce = _sub(cols.clusters, p.ends), _sub(cols.cells, p.ends)
    pooled = _agreement(p.a, p.b, cl, ce, p.ea, p.eb, e_cl, e_ce, seed)
    # grouped in one pass (not one scan of every row per cell: grids have many cells)
    rows_of, ends_of = _by_cell(ce.codes), _by_cell(e_ce.codes)
    empty = np.zeros(0, dtype=np.int64)
    cells = {}
    for cell in cols.cell_order:
        r, e = rows_of.get(cell, empty), ends_of.get(cell, empty)
        if r.size or e.size:
            cells[cols.cells.names[cell]] = _agreement(p.a[r], p.b[r], _sub(cl, r), _sub(ce, r), p.ea[e], p.eb[e],
                                                       _sub(e_cl, e), _sub(e_ce, e), seed)
    return PairReport(a=pair.a, b=pair.b, labels=list(p.labels), pooled=pooled, cells=cells)


def panel_report(layer: str, units: Sequence[Unit], codes: Mapping[str, Code], seed: int = 0) -> PanelReport | None:
    """Inter-rater agreement of a layer whose codes pool several raters (a judge panel),
    from each unit's votes (`detail.rater_votes()`). Each unit is held as the index of its
    vote pattern (equal votes share one evidence record: a handful of patterns for a
    million units) and its stimulus: every statistic is a sum over patterns, or a float
    per unit where the library's own order of sums must be kept (issue 42)."""
    empty: Mapping[str, str | None] = {}
    shapes: list[Mapping[str, str | None]] = []  # each distinct pattern's first mapping
    alive: list[object] = []  # every mapping looked up by id, so no id is reused meanwhile
    seen: dict[int, int] = {}  # id of a votes mapping -> its pattern
    by_content: dict[tuple[tuple[str, str | None], ...], int] = {}  # (judges in its order)
    of_unit, stim_col = array("i"), array("i")
    stimuli = Vocab()
    for u in units:
        c = codes.get(u.id)
        if c is None:
            continue
        v = c.detail.rater_votes() or empty
        at = seen.get(id(v))
        if at is None:
            key = tuple(v.items())
            at = by_content.get(key)
            if at is None:
                at = by_content[key] = len(shapes)
                shapes.append(v)
            seen[id(v)] = at
            alive.append(v)
        of_unit.append(at)
        stim_col.append(stimuli(u.stimulus))
    judges = list(dict.fromkeys(j for v in shapes for j in v))
    if len(judges) < 2:
        return None
    labels = Vocab()
    for v in shapes:
        for j in judges:
            lab = v.get(j)
            if lab is not None:
                labels(lab)
    rank, _ = labels.ranks()
    k = len(labels)
    # pattern -> each judge's label rank (-1: no vote)
    votes = np.array([[rank[labels.ids[lab]] if (lab := v.get(j)) is not None else -1 for j in judges]
                      for v in shapes], dtype=np.int64).reshape(len(shapes), len(judges))
    units_of = _int_column(of_unit).astype(np.int64)
    times = np.bincount(units_of, minlength=len(shapes))
    full: np.ndarray = np.all(votes >= 0, axis=1)
    counts = np.zeros((len(shapes), k), dtype=np.int64)
    for col in votes.T:
        has = col >= 0
        np.add.at(counts, (np.flatnonzero(has), col[has]), 1)
    full_units = units_of[full[units_of]]
    pairwise: list[list[str | int | float | None]] = []
    for (ia, a), (ib, b) in itertools.combinations(enumerate(judges), 2):
        both = (votes[:, ia] >= 0) & (votes[:, ib] >= 0) & (times > 0)
        n_both = int(times[both].sum())
        if not n_both:
            pairwise.append([a, b, 0, None, None])
            continue
        conf = np.zeros((k, k), dtype=np.int64)
        np.add.at(conf, (votes[both, ia], votes[both, ib]), times[both])
        pairwise.append([a, b, n_both, int(np.trace(conf)) / n_both, kappa_of_confusion(conf)])
    alpha = _alpha_of_patterns(counts, units_of, stimuli.codes(_int_column(stim_col)).codes, seed)
    return PanelReport(layer=layer, judges=judges, n=int(full_units.size),
                       fleiss=fleiss_kappa_patterns(counts, full_units) if full_units.size else None,
                       alpha=alpha, pairwise=pairwise)


def reliability(plan: CodingPlan, units: Sequence[Unit], codes: Mapping[str, Mapping[str, Code]], seed: int = 0,
                cols: UnitColumns | None = None) -> tuple[list[PairReport], list[PanelReport], list[PositionReport]]:
    cols = cols if cols is not None or not plan.pairs else UnitColumns(units)
    pairs = [pair_report(p, plan.layers, units, codes, seed, cols) for p in plan.pairs]
    panels = []
    positions = []
    for name, lay in plan.layers.items():
        hook = lay.coder_def.reliability  # the coder's own reports (a panel's raters, a choice's order effect)
        if hook is None:
            continue
        layer_codes = codes.get(name, {})
        for rep in hook(name, lay.options, [u for u in units if u.id in layer_codes], layer_codes, seed):
            if isinstance(rep, PanelReport):
                panels.append(rep)
            else:
                positions.append(rep)
    return pairs, panels, positions


__all__ = ["Agreement", "PairColumns", "PairReport", "PanelReport", "PositionReport", "UnitColumns", "Vocab",
           "kappa_alpha", "kappa_alpha_codes", "pair_report", "panel_alpha", "panel_report", "reliability"]
