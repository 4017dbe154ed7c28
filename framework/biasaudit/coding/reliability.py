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
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from biasaudit.coding.layers import CodingPlan, Layer, ReliabilityPair
from biasaudit.records.codes import Code, Unit
from biasaudit.records.coding import Agreement, PairReport, PanelReport, PositionReport
from biasaudit.records.estimate import Estimate
from biasaudit.stats import cohen_kappa, fleiss_kappa, krippendorff_alpha_nominal
from biasaudit.stats.agreement import coincidences
from biasaudit.stats.bootstrap import resample_weights
from biasaudit.stats.disaggregate import Obs, pooled_columns, proportion

RESAMPLES = 2000
LEVEL = 0.95


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


def _weights(groups: int, seed: int) -> np.ndarray:
    return resample_weights(np.ones(groups), RESAMPLES, np.random.default_rng(seed))


def kappa_alpha(a: Sequence[str], b: Sequence[str], clusters: Sequence[str], seed: int = 0
                ) -> tuple[Estimate, Estimate]:
    """Cohen's kappa and Krippendorff's alpha of two raters (no missing labels), with
    cluster-bootstrap percentile intervals."""
    n = len(a)
    if n == 0:
        return Estimate.no_data("cluster-bootstrap-percentile"), Estimate.no_data("cluster-bootstrap-percentile")
    cats = sorted(set(a) | set(b))
    k = len(cats)
    idx = {c: i for i, c in enumerate(cats)}
    groups = sorted(set(clusters))
    gi = {g: i for i, g in enumerate(groups)}
    conf = np.zeros((len(groups), k, k))
    for x, y, c in zip(a, b, clusters, strict=True):
        conf[gi[c], idx[x], idx[y]] += 1
    w = _weights(len(groups), seed)
    mats = np.einsum("rg,gij->rij", w, conf)
    tot = mats.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        po = np.trace(mats, axis1=1, axis2=2) / tot
        pe = np.sum(mats.sum(axis=2) * mats.sum(axis=1), axis=1) / tot**2
        kappas = (po - pe) / (1 - pe)
        coinc = mats + np.transpose(mats, (0, 2, 1))
        big_n = 2 * tot
        nc = coinc.sum(axis=2)
        alphas = 1 - (big_n - 1) * (big_n - np.trace(coinc, axis1=1, axis2=2)) / (big_n**2 - np.sum(nc**2, axis=1))
    k_point = cohen_kappa(list(a), list(b))
    a_point = krippendorff_alpha_nominal([[x, y] for x, y in zip(a, b, strict=True)]) if len(cats) > 1 else None
    return (_stat_estimate(k_point, kappas, n, len(groups), "cluster-bootstrap-percentile"),
            _stat_estimate(a_point, alphas, n, len(groups), "cluster-bootstrap-percentile"))


def panel_alpha(units: Sequence[Sequence[str | None]], clusters: Sequence[str], seed: int = 0) -> Estimate:
    """Krippendorff's alpha of several raters with missing labels, with a cluster-bootstrap
    interval (each unit's coincidence matrix, weighted by its stimulus's resample count)."""
    values = [[v for v in u if v is not None] for u in units]
    keep = [i for i, u in enumerate(values) if len(u) >= 2]
    if not keep:
        return Estimate.no_data("cluster-bootstrap-percentile")
    cats = sorted({v for i in keep for v in values[i]})
    groups = sorted({clusters[i] for i in keep})
    gi = {g: j for j, g in enumerate(groups)}
    o = np.zeros((len(groups), len(cats), len(cats)))
    of_group: dict[str, list[list[str]]] = {g: [] for g in groups}
    for i in keep:
        of_group[clusters[i]].append(values[i])
    for g, us in of_group.items():  # each unit's coincidences, summed per stimulus
        o[gi[g]] = coincidences(us, cats)
    mats = np.einsum("rg,gij->rij", _weights(len(groups), seed), o)
    big_n = mats.sum(axis=(1, 2))
    nc = mats.sum(axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = 1 - (big_n - 1) * (big_n - np.trace(mats, axis1=1, axis2=2)) / (big_n**2 - np.sum(nc**2, axis=1))
    point = krippendorff_alpha_nominal([values[i] for i in keep])
    return _stat_estimate(point, boot, len(keep), len(groups), "cluster-bootstrap-percentile")


def _agreement(rows: list[tuple[Unit, str, str]], ends: list[tuple[Unit, float, float]], seed: int) -> Agreement:
    a = [x for _, x, _ in rows]
    b = [y for _, _, y in rows]
    clusters = [u.stimulus for u, _, _ in rows]
    kappa, alpha = kappa_alpha(a, b, clusters, seed)
    # the rows as columns (pooled_columns: the estimate `pooled` gives, without an Obs a row)
    cells = [u.cell for u, _, _ in rows]
    percent = pooled_columns([1.0 if x == y else 0.0 for _, x, y in rows], clusters, cells, proportion)
    ir = dni = None
    if ends:
        e_clusters, e_cells = [u.stimulus for u, _, _ in ends], [u.cell for u, _, _ in ends]
        ir = pooled_columns([abs(ea - eb) for _, ea, eb in ends], e_clusters, e_cells, proportion)
        dni = pooled_columns([ea - eb for _, ea, eb in ends], e_clusters, e_cells, _bootstrap_mean(seed))
    return Agreement(n=len(rows), percent=percent, kappa=kappa, alpha=alpha, ir=ir, dni=dni)


def _bootstrap_mean(seed: int) -> Any:
    from biasaudit.stats import cluster_bootstrap

    def est(rows: Sequence[Obs]) -> Estimate:
        # a difference of two rates: bootstrap the per-unit difference
        return cluster_bootstrap([o.value for o in rows], list(range(len(rows))), seed=seed)

    return est


def _pair_rows(pair: ReliabilityPair, layers: Mapping[str, Layer], units: Sequence[Unit],
               codes: Mapping[str, Mapping[str, Code]]
               ) -> tuple[list[tuple[Unit, str, str]], list[tuple[Unit, float, float]]]:
    """The units both layers coded, with their (mapped) labels, and the units with both
    layers' endorsement (0/1) where both layers define one."""
    la, lb = layers[pair.a], layers[pair.b]
    ca, cb = codes.get(pair.a, {}), codes.get(pair.b, {})
    rows: list[tuple[Unit, str, str]] = []
    ends: list[tuple[Unit, float, float]] = []
    for u in units:
        x, y = ca.get(u.id), cb.get(u.id)
        if x is None or y is None:
            continue
        if x.coded and y.coded and x.label is not None and y.label is not None:
            rows.append((u, pair.map_a.get(x.label, x.label), pair.map_b.get(y.label, y.label)))
        if la.endorse is not None and lb.endorse is not None and y.coded and (x.coded or x.status == "not_applicable"):
            ends.append((u, 1.0 if x.coded and x.label in la.endorse else 0.0, 1.0 if y.label in lb.endorse else 0.0))
    return rows, ends


def pair_report(pair: ReliabilityPair, layers: Mapping[str, Layer], units: Sequence[Unit],
                codes: Mapping[str, Mapping[str, Code]], seed: int = 0) -> PairReport:
    rows, ends = _pair_rows(pair, layers, units, codes)
    labels = sorted({x for _, x, _ in rows} | {y for _, _, y in rows})
    cells = {}
    # grouped in one pass (not one scan of every row per cell: grids have many cells)
    rows_of: dict[str, list[tuple[Unit, str, str]]] = {u.cell: [] for u in units}
    ends_of: dict[str, list[tuple[Unit, float, float]]] = {cell: [] for cell in rows_of}
    for r in rows:
        rows_of[r[0].cell].append(r)
    for e in ends:
        ends_of[e[0].cell].append(e)
    for cell in rows_of:
        sub, sub_e = rows_of[cell], ends_of[cell]
        if sub or sub_e:
            cells[cell] = _agreement(sub, sub_e, seed)
    return PairReport(a=pair.a, b=pair.b, labels=labels, pooled=_agreement(rows, ends, seed), cells=cells)


def panel_report(layer: str, units: Sequence[Unit], codes: Mapping[str, Code], seed: int = 0) -> PanelReport | None:
    """Inter-rater agreement of a layer whose codes pool several raters (a judge panel),
    from each unit's votes (`detail.rater_votes()`)."""
    # each unit's votes as its code holds them (equal votes share one evidence record):
    # no copy per unit (issue 42); only read here
    empty: Mapping[str, str | None] = {}
    votes = [(u, codes[u.id].detail.rater_votes() or empty) for u in units if u.id in codes]
    judges = list(dict.fromkeys(j for _, v in votes for j in v))
    if len(judges) < 2:
        return None
    full = [[v[j] for j in judges] for _, v in votes if all(v.get(j) is not None for j in judges)]
    pairwise: list[list[str | int | float | None]] = []
    for a, b in itertools.combinations(judges, 2):
        both = [(v[a], v[b]) for _, v in votes if v.get(a) is not None and v.get(b) is not None]
        agree = float(np.mean([x == y for x, y in both])) if both else None
        k = cohen_kappa([x for x, _ in both], [y for _, y in both]) if both else None
        pairwise.append([a, b, len(both), agree, k])
    alpha = panel_alpha([[v.get(j) for j in judges] for _, v in votes], [u.stimulus for u, _ in votes], seed)
    return PanelReport(layer=layer, judges=judges, n=len(full), fleiss=fleiss_kappa(full) if full else None,
                       alpha=alpha, pairwise=pairwise)


def reliability(plan: CodingPlan, units: Sequence[Unit], codes: Mapping[str, Mapping[str, Code]], seed: int = 0
                ) -> tuple[list[PairReport], list[PanelReport], list[PositionReport]]:
    pairs = [pair_report(p, plan.layers, units, codes, seed) for p in plan.pairs]
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


__all__ = ["Agreement", "PairReport", "PanelReport", "PositionReport", "kappa_alpha", "pair_report", "panel_alpha",
           "panel_report", "reliability"]
