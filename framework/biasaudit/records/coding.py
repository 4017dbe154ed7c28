"""What the coding stage reports: per layer, what coded it and the distribution of its
labels (or values) per prompt condition; the agreement of layer pairs, of the judges of a
panel, and the position effect of counterbalanced choice layers. Data only: made by
coding/summary.py and coding/reliability.py, held by `RunSummary.coding`, read by the
report."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from biasaudit.records.estimate import Estimate


class Agreement(BaseModel):
    model_config = ConfigDict(frozen=True)
    n: int
    """Units both layers coded."""
    percent: Estimate
    kappa: Estimate
    alpha: Estimate
    ir: Estimate | None = None
    dni: Estimate | None = None


class PairReport(BaseModel):
    model_config = ConfigDict(frozen=True)
    a: str
    b: str
    labels: list[str]
    """The shared label space."""
    pooled: Agreement
    cells: dict[str, Agreement] = Field(default_factory=dict)


class PanelReport(BaseModel):
    model_config = ConfigDict(frozen=True)
    layer: str
    judges: list[str]
    n: int
    """Units every judge labelled."""
    fleiss: float | None
    alpha: Estimate
    pairwise: list[list[Any]]
    """[judge a, judge b, units, percent agreement, Cohen's kappa]."""


class PositionReport(BaseModel):
    model_config = ConfigDict(frozen=True)
    layer: str
    order: str
    flips: Estimate | None = None
    """`both`: share of units whose answer changes with the option order."""
    first: Estimate | None = None
    """`both` and `rotate`: share of answers that pick the option listed first."""
    expected_first: float | None = None
    """That share without a position effect (mean of 1 / number of options)."""


class CellLabels(BaseModel):
    model_config = ConfigDict(frozen=True)
    cell: str
    levels: dict[str, str]
    n: int
    """Units the layer coded in this cell."""
    counts: dict[str, int]
    shares: dict[str, float]
    mean: Estimate | None = None
    """Value layers: the mean value in the cell."""


class LayerReport(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    coder: str
    title: str
    input: str
    labels: list[str] | None
    value_type: str
    fallback: str | None = None
    fallback_of: str | None = None
    handed: int | None = None
    """Fallback layers: units their primary handed over."""
    status: dict[str, int]
    """Units by status: coded, abstain, not_applicable, failed."""
    sources: dict[str, int]
    """Coded units by who coded them (the coder, or `fallback:<layer>`)."""
    cells: list[CellLabels]
    pooled: dict[str, Estimate] = Field(default_factory=dict)
    """Label -> its share over all coded units (value layers: `mean`)."""
    calls: dict[str, int] = Field(default_factory=dict)
    """Coding requests, calls made, cache hits and failures of this layer."""
    truncated: int = 0
    """Units whose input was longer than `runtime.limits.max_coding_chars` and was cut to
    that length for the coder (flagged `input_truncated` in the code's detail)."""


class CodingReport(BaseModel):
    model_config = ConfigDict(frozen=True)
    defaults: bool = False
    """The layers are the metrics' defaults (the spec declares none)."""
    layers: list[LayerReport] = Field(default_factory=list)
    pairs: list[PairReport] = Field(default_factory=list)
    panels: list[PanelReport] = Field(default_factory=list)
    positions: list[PositionReport] = Field(default_factory=list)


__all__ = ["Agreement", "CellLabels", "CodingReport", "LayerReport", "PairReport", "PanelReport", "PositionReport"]
