"""The coding stage, summarised for the report: per layer, what coded it and the
distribution of its labels (or values) per prompt condition; the reliability pairs,
the judge panels' agreement, the choice layers' position effects and, for pairs with a
human layer, the agreement with the human labels and the PPI label rates."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from biasaudit.coding.base import LayerCalls
from biasaudit.coding.human_review import gold_reports
from biasaudit.coding.layers import CodingPlan, Layer
from biasaudit.coding.reliability import UnitColumns, Vocab, reliability
from biasaudit.records.codes import Code, Unit
from biasaudit.records.coding import CellLabels, CodingReport, LayerReport
from biasaudit.records.estimate import Estimate
from biasaudit.stats.codes import Codes
from biasaudit.stats.disaggregate import mean, pooled_columns, proportion
from biasaudit.stats.means import mean_t


class _Coded:
    """A layer's coded units as columns: each one's position among the units, its label
    (an id in `labels`, -1: none) and its value (`has_value`: 0 for none). What the
    summary reads of a code, at 17 bytes a unit where a (Unit, label, value) tuple per
    unit took about 100 (issue 42)."""

    __slots__ = ("at", "has_value", "label", "labels", "sources", "status", "truncated", "value")

    def __init__(self, units: Sequence[Unit], codes: Mapping[str, Code]) -> None:
        self.labels = Vocab()
        at, label, value, has = array("i"), array("i"), array("d"), bytearray()
        self.status: Counter[str] = Counter()
        self.sources: Counter[str] = Counter()
        self.truncated = 0
        for i, u in enumerate(units):
            c = codes.get(u.id)
            if c is None:
                continue
            self.status[c.status] += 1
            self.truncated += c.detail.input_truncated is not None
            if c.coded:
                self.sources[c.source] += 1
                at.append(i)
                label.append(-1 if c.label is None else self.labels(c.label))
                v = c.value
                has.append(v is not None)
                value.append(0.0 if v is None else v)
        self.at = np.frombuffer(at, dtype=np.int32) if len(at) else np.zeros(0, dtype=np.int32)
        self.label = np.frombuffer(label, dtype=np.int32) if len(label) else np.zeros(0, dtype=np.int32)
        self.value = np.frombuffer(value, dtype=np.float64) if len(value) else np.zeros(0)
        self.has_value = np.frombuffer(has, dtype=np.bool_) if has else np.zeros(0, dtype=np.bool_)

    def label_id(self, name: str) -> int | None:
        return self.labels.ids.get(name)


def _sub(codes: Codes, at: np.ndarray) -> Codes:
    return Codes(codes.codes[at], codes.names)


def _cell_labels(lay: Layer, units: Sequence[Unit], cols: UnitColumns, coded: _Coded,
                 labels: list[str]) -> list[CellLabels]:
    """Per prompt condition: the label counts and shares (value layers: the mean value)."""
    cells = []
    n_cells = len(cols.cells.names)
    cell_of = cols.cells.codes[coded.at]
    means: dict[int, Estimate] = {}
    if lay.value_type == "number":
        # each cell's values in the units' order (what `by_cell(rows, mean)` gave)
        with_value = np.flatnonzero(coded.has_value)
        values, their_cells = coded.value[with_value], cell_of[with_value]
        order = np.argsort(their_cells, kind="stable")
        for part in np.split(order, np.flatnonzero(np.diff(their_cells[order])) + 1):
            if part.size:
                means[int(their_cells[part[0]])] = mean_t(values[part])
    # counted in one pass (bincount), not one scan of every unit per cell
    n_of = np.bincount(cell_of, minlength=n_cells)
    labelled = coded.label >= 0
    width = max(len(coded.labels), 1)
    counts = np.bincount(cell_of[labelled].astype(np.int64) * width + coded.label[labelled],
                         minlength=n_cells * width).reshape(n_cells, width)
    ids = [coded.label_id(lab) for lab in labels]
    for cell, first in zip(cols.cell_order, cols.first, strict=True):
        n = int(n_of[cell])
        got = {lab: 0 if i is None else int(counts[cell, i]) for lab, i in zip(labels, ids, strict=True)}
        cells.append(CellLabels(cell=cols.cells.names[cell], levels=dict(units[first].levels), n=n, counts=got,
                                shares={lab: got[lab] / n for lab in labels} if n else {},
                                mean=means.get(cell)))
    return cells


def _pooled_labels(lay: Layer, cols: UnitColumns, coded: _Coded, labels: list[str]) -> dict[str, Estimate]:
    """Label -> its share over all coded units (value layers: `mean`), from the columns:
    one 0/1 column at a time, the stimuli and cells as integer `Codes` (the same estimate
    bit for bit as `pooled` over one `Obs` per row and label, which allocated a row object
    per unit and label: 13 labels x 100,250 units made the layer's summary super-linear,
    issue 42)."""
    overall: dict[str, Estimate] = {}
    if lay.value_type == "number":
        kept = coded.at[coded.has_value]
        overall["mean"] = pooled_columns(coded.value[coded.has_value], _sub(cols.clusters, kept),
                                         _sub(cols.cells, kept), mean)
    else:
        clusters, cells = _sub(cols.clusters, coded.at), _sub(cols.cells, coded.at)
        for lab in labels:
            i = coded.label_id(lab)
            values = np.zeros(coded.at.size) if i is None else (coded.label == i).astype(np.float64)
            overall[lab] = pooled_columns(values, clusters, cells, proportion)
    return overall


def _calls_counts(calls: LayerCalls | None) -> dict[str, int]:
    return {"requests": calls.requests, "calls": calls.calls, "cache_hits": calls.cache_hits,
            "failures": calls.failures} if calls is not None else {"requests": 0, "calls": 0, "cache_hits": 0,
                                                                    "failures": 0}


def layer_report(lay: Layer, units: Sequence[Unit], codes: Mapping[str, Code], handed: int | None,
                 calls: LayerCalls | None, seed: int = 0, cols: UnitColumns | None = None) -> LayerReport:
    # one code at a time: only its label and value are kept, as columns (issue 42)
    cols = cols if cols is not None else UnitColumns(units)
    coded = _Coded(units, codes)
    labels = list(lay.labels) if lay.labels is not None else sorted(coded.labels.names)
    cells = _cell_labels(lay, units, cols, coded, labels)
    overall = _pooled_labels(lay, cols, coded, labels)
    return LayerReport(
        name=lay.name, coder=lay.coder_name, title=lay.coder_def.title, input=lay.spec.input, labels=list(lay.labels) if lay.labels is not None else None,
        value_type=lay.value_type, fallback=lay.spec.fallback, fallback_of=lay.fallback_of, handed=handed,
        status=dict(coded.status), sources=dict(coded.sources),
        cells=cells, pooled=overall, truncated=coded.truncated,
        calls=_calls_counts(calls))


def coding_report(plan: CodingPlan, units: Sequence[Unit], codes: Mapping[str, Mapping[str, Code]],
                  handed: Mapping[str, int], calls: Mapping[str, LayerCalls], seed: int = 0) -> CodingReport:
    cols = UnitColumns(units)  # the units' cells and stimuli as integer columns, read by every layer and pair
    layers = [layer_report(lay, units, codes.get(name, {}), handed.get(name), calls.get(name), seed, cols)
              for name, lay in plan.layers.items()]
    pairs, panels, positions = reliability(plan, units, codes, seed, cols)
    return CodingReport(defaults=plan.defaults, layers=layers, pairs=pairs, panels=panels, positions=positions,
                        gold=gold_reports(plan, units, codes, seed))


__all__ = ["CellLabels", "CodingReport", "LayerReport", "coding_report", "layer_report"]
