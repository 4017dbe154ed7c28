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
from biasaudit.stats.disaggregate import Obs, by_cell, mean, pooled_columns, proportion

_Coded = tuple[Unit, str | None, float | None]
"""A coded unit with its code's label and value: what the summary reads of a code (not
the whole record: a run holds one per unit, issue 42)."""


def _cell_labels(lay: Layer, units: Sequence[Unit], coded: list[_Coded],
                 labels: list[str]) -> list[CellLabels]:
    """Per prompt condition: the label counts and shares (value layers: the mean value)."""
    cells = []
    means: dict[str, Estimate] = {}
    if lay.value_type == "number":
        rows = [Obs(cell=u.cell, cluster=u.stimulus, value=value) for u, _, value in coded if value is not None]
        means = by_cell(rows, mean)
    # grouped in one pass (not one scan of every unit per cell: grids have many cells)
    first: dict[str, Unit] = {}
    for u in units:
        first.setdefault(u.cell, u)
    counts_of: dict[str, Counter[str]] = {cell: Counter() for cell in first}
    n_of: dict[str, int] = dict.fromkeys(first, 0)
    for u, label, _ in coded:
        n_of[u.cell] += 1
        if label is not None:
            counts_of[u.cell][label] += 1
    for cell, unit in first.items():
        counts = counts_of[cell]
        n = n_of[cell]
        levels = dict(unit.levels)
        cells.append(CellLabels(cell=cell, levels=levels, n=n, counts={lab: counts.get(lab, 0) for lab in labels},
                                shares={lab: counts.get(lab, 0) / n for lab in labels} if n else {},
                                mean=means.get(cell)))
    return cells


def _pooled_labels(lay: Layer, coded: list[_Coded], labels: list[str], seed: int) -> dict[str, Estimate]:
    """Label -> its share over all coded units (value layers: `mean`). The rows are given
    to `pooled_columns` as columns built once per layer (the same estimate bit for bit as
    `pooled` over one `Obs` per row and label, which allocated a row object per unit and
    label: 13 labels x 100,250 units made the layer's summary super-linear, issue 42)."""
    overall: dict[str, Estimate] = {}
    if lay.value_type == "number":
        kept = [(u, value) for u, _, value in coded if value is not None]
        overall["mean"] = pooled_columns([v for _, v in kept], [u.stimulus for u, _ in kept],
                                         [u.cell for u, _ in kept], mean)
    else:
        clusters = [u.stimulus for u, _, _ in coded]
        cells = [u.cell for u, _, _ in coded]
        got = [label for _, label, _ in coded]
        for lab in labels:
            overall[lab] = pooled_columns([1.0 if label == lab else 0.0 for label in got], clusters, cells, proportion)
    return overall


def _calls_counts(calls: LayerCalls | None) -> dict[str, int]:
    return {"requests": calls.requests, "calls": calls.calls, "cache_hits": calls.cache_hits,
            "failures": calls.failures} if calls is not None else {"requests": 0, "calls": 0, "cache_hits": 0,
                                                                    "failures": 0}


def layer_report(lay: Layer, units: Sequence[Unit], codes: Mapping[str, Code], handed: int | None,
                 calls: LayerCalls | None, seed: int = 0) -> LayerReport:
    # one code at a time: only its label and value are kept (issue 42)
    status: Counter[str] = Counter()
    sources: Counter[str] = Counter()
    truncated = 0
    coded: list[_Coded] = []
    for u in units:
        c = codes.get(u.id)
        if c is None:
            continue
        status[c.status] += 1
        truncated += c.detail.input_truncated is not None
        if c.coded:
            sources[c.source] += 1
            coded.append((u, c.label, c.value))
    labels = list(lay.labels) if lay.labels is not None else sorted({lab for _, lab, _ in coded if lab is not None})
    cells = _cell_labels(lay, units, coded, labels)
    overall = _pooled_labels(lay, coded, labels, seed)
    return LayerReport(
        name=lay.name, coder=lay.coder_name, title=lay.coder_def.title, input=lay.spec.input, labels=list(lay.labels) if lay.labels is not None else None,
        value_type=lay.value_type, fallback=lay.spec.fallback, fallback_of=lay.fallback_of, handed=handed,
        status=dict(status), sources=dict(sources),
        cells=cells, pooled=overall, truncated=truncated,
        calls=_calls_counts(calls))


def coding_report(plan: CodingPlan, units: Sequence[Unit], codes: Mapping[str, Mapping[str, Code]],
                  handed: Mapping[str, int], calls: Mapping[str, LayerCalls], seed: int = 0) -> CodingReport:
    layers = [layer_report(lay, units, codes.get(name, {}), handed.get(name), calls.get(name), seed)
              for name, lay in plan.layers.items()]
    pairs, panels, positions = reliability(plan, units, codes, seed)
    return CodingReport(defaults=plan.defaults, layers=layers, pairs=pairs, panels=panels, positions=positions,
                        gold=gold_reports(plan, units, codes, seed))


__all__ = ["CellLabels", "CodingReport", "LayerReport", "coding_report", "layer_report"]
