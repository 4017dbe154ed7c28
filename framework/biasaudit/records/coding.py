"""What the coding stage reports: per layer, what coded it and the distribution of its
labels (or values) per prompt condition; the agreement of layer pairs, of the judges of a
panel, and the position effect of counterbalanced choice layers. Data only: made by
coding/summary.py and coding/reliability.py, held by `RunSummary.coding`, read by the
report."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from biasaudit.records.estimate import Estimate
from biasaudit.records.json import AS_JSON, NAN_AS_NULL


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
    pairwise: Annotated[list[list[str | int | float | None]], AS_JSON, NAN_AS_NULL]
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


class RaterGold(BaseModel):
    """One rater against the human labels."""

    model_config = ConfigDict(frozen=True)
    rater: str
    n: int
    """Units both the humans and this rater labelled."""
    accuracy: Estimate
    chance: float | None
    """The accuracy of always giving the most common human label."""
    kappa: Estimate
    labels: list[str]
    """Row and column order of `confusion`."""
    confusion: list[list[int]]
    """Rows: the human label; columns: the rater's label."""


class LabelRate(BaseModel):
    model_config = ConfigDict(frozen=True)
    label: str
    judge: Estimate
    """The machine layer's rate of the label over every unit it coded."""
    human: Estimate
    """The humans' rate over their sample (strata weighted)."""
    ppi: Estimate
    """The prediction-powered estimate of the humans' rate over every unit."""


class GoldReport(BaseModel):
    model_config = ConfigDict(frozen=True)
    human: str
    layer: str
    labels: list[str]
    """The shared label space (after the pair's `map`)."""
    sampled_layer: str | None = None
    """The layer whose units the sheet sampled."""
    stratify: str | None = None
    selection: str = "random"
    """`random` (drawn by `annotate export`) or `chosen` (picked by a reviewer in the
    viewer: a convenience sample; agreement only, no PPI and no humans-only rate)."""
    population: int
    """Units the machine layer coded."""
    sampled: int
    annotated: int
    blank: int
    """Sampled units left blank (not annotated)."""
    raters: list[RaterGold] = Field(default_factory=list)
    rates: list[LabelRate] = Field(default_factory=list)


class CodingReport(BaseModel):
    model_config = ConfigDict(frozen=True)
    defaults: bool = False
    """The layers are the metrics' defaults (the spec declares none)."""
    layers: list[LayerReport] = Field(default_factory=list)
    pairs: list[PairReport] = Field(default_factory=list)
    panels: list[PanelReport] = Field(default_factory=list)
    positions: list[PositionReport] = Field(default_factory=list)
    gold: list[GoldReport] = Field(default_factory=list)
    """Pairs with a `human` layer: each rater against the human labels, and the label
    rates with their prediction-powered intervals."""


__all__ = ["Agreement", "CellLabels", "CodingReport", "GoldReport", "LabelRate", "LayerReport", "PairReport", "PanelReport",
           "PositionReport", "RaterGold"]
