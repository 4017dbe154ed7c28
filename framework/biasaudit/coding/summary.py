"""The coding stage, summarised for the report: per layer, what coded it and the
distribution of its labels (or values) per prompt condition; the reliability pairs,
the judge panels' agreement, the choice layers' position effects and, for pairs with a
human layer, the agreement with the human labels and the PPI label rates."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from biasaudit.coding.base import LayerCalls
from biasaudit.coding.human_review import gold_reports
from biasaudit.coding.layers import CodingPlan, Layer
from biasaudit.coding.reliability import reliability
from biasaudit.records.codes import Code, Unit
from biasaudit.records.coding import CellLabels, CodingReport, LayerReport
from biasaudit.records.estimate import Estimate
from biasaudit.stats.disaggregate import Obs, by_cell, mean, pooled, proportion


def _cell_labels(lay: Layer, units: Sequence[Unit], coded: list[tuple[Unit, Code]],
                 labels: list[str]) -> list[CellLabels]:
    """Per prompt condition: the label counts and shares (value layers: the mean value)."""
    cells = []
    means: dict[str, Estimate] = {}
    if lay.value_type == "number":
        rows = [Obs(cell=u.cell, cluster=u.stimulus, value=c.value) for u, c in coded if c.value is not None]
        means = by_cell(rows, mean)
    # grouped in one pass (not one scan of every unit per cell: grids have many cells)
    first: dict[str, Unit] = {}
    for u in units:
        first.setdefault(u.cell, u)
    codes_of: dict[str, list[Code]] = {cell: [] for cell in first}
    for u, c in coded:
        codes_of[u.cell].append(c)
    for cell, unit in first.items():
        here = codes_of[cell]
        counts = Counter(c.label for c in here if c.label is not None)
        n = len(here)
        levels = dict(unit.levels)
        cells.append(CellLabels(cell=cell, levels=levels, n=n, counts={lab: counts.get(lab, 0) for lab in labels},
                                shares={lab: counts.get(lab, 0) / n for lab in labels} if n else {},
                                mean=means.get(cell)))
    return cells


def _pooled_labels(lay: Layer, coded: list[tuple[Unit, Code]], labels: list[str], seed: int) -> dict[str, Estimate]:
    """Label -> its share over all coded units (value layers: `mean`)."""
    overall: dict[str, Estimate] = {}
    if lay.value_type == "number":
        overall["mean"] = pooled([Obs(cell=u.cell, cluster=u.stimulus, value=c.value) for u, c in coded
                                  if c.value is not None], mean, seed=seed)
    else:
        for lab in labels:
            overall[lab] = pooled([Obs(cell=u.cell, cluster=u.stimulus, value=1.0 if c.label == lab else 0.0)
                                   for u, c in coded], proportion, seed=seed)
    return overall


def _calls_counts(calls: LayerCalls | None) -> dict[str, int]:
    return {"requests": calls.requests, "calls": calls.calls, "cache_hits": calls.cache_hits,
            "failures": calls.failures} if calls is not None else {"requests": 0, "calls": 0, "cache_hits": 0,
                                                                    "failures": 0}


def layer_report(lay: Layer, units: Sequence[Unit], codes: Mapping[str, Code], handed: int | None,
                 calls: LayerCalls | None, seed: int = 0) -> LayerReport:
    mine = [(u, codes[u.id]) for u in units if u.id in codes]
    coded = [(u, c) for u, c in mine if c.coded]
    labels = list(lay.labels) if lay.labels is not None else sorted({c.label for _, c in coded if c.label is not None})
    cells = _cell_labels(lay, units, coded, labels)
    overall = _pooled_labels(lay, coded, labels, seed)
    return LayerReport(
        name=lay.name, coder=lay.coder_name, title=lay.coder_def.title, input=lay.spec.input, labels=list(lay.labels) if lay.labels is not None else None,
        value_type=lay.value_type, fallback=lay.spec.fallback, fallback_of=lay.fallback_of, handed=handed,
        status=dict(Counter(c.status for _, c in mine)), sources=dict(Counter(c.source for _, c in coded)),
        cells=cells, pooled=overall, truncated=sum(c.detail.input_truncated is not None for _, c in mine),
        calls=_calls_counts(calls))


def coding_report(plan: CodingPlan, units: Sequence[Unit], codes: Mapping[str, Mapping[str, Code]],
                  handed: Mapping[str, int], calls: Mapping[str, LayerCalls], seed: int = 0) -> CodingReport:
    layers = [layer_report(lay, units, codes.get(name, {}), handed.get(name), calls.get(name), seed)
              for name, lay in plan.layers.items()]
    pairs, panels, positions = reliability(plan, units, codes, seed)
    return CodingReport(defaults=plan.defaults, layers=layers, pairs=pairs, panels=panels, positions=positions,
                        gold=gold_reports(plan, units, codes, seed))


__all__ = ["CellLabels", "CodingReport", "LayerReport", "coding_report", "layer_report"]
