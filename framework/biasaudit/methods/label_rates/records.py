"""The label rates' own intermediate values, kept in `MetricResult.detail` for their report
sections: the counts of each label per prompt condition and the pairwise comparisons of
groups (`label_rate`); each categorisation's impact-ratio family (`impact_ratio`). The
rates themselves are in the estimates and the per-cell estimates."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from biasaudit.stats.contrasts import ContrastFamily
from biasaudit.stats.impact import ImpactFamily


class CellLabels(BaseModel):
    """The units the layer coded in one prompt condition, and how often it gave each label."""

    model_config = ConfigDict(frozen=True)
    coded: int
    labels: dict[str, int] = Field(default_factory=dict)


class BreakdownDetail(BaseModel):
    """The rate by one stimulus field: its groups (their rates are `rate.<field>.<group>`)
    and every pair of groups compared."""

    model_config = ConfigDict(frozen=True)
    field: str
    groups: list[str]
    contrasts: ContrastFamily | None = None


class LabelRateDetail(BaseModel):
    """`MetricResult.detail` of `label_rate`."""

    model_config = ConfigDict(frozen=True)
    cells: dict[str, CellLabels] = Field(default_factory=dict)
    """The cells with coded units, in plan order."""
    breakdowns: list[BreakdownDetail] = Field(default_factory=list)
    """One per `by` field."""


class ImpactDetail(BaseModel):
    """`MetricResult.detail` of `impact_ratio`."""

    model_config = ConfigDict(frozen=True)
    families: list[ImpactFamily] = Field(default_factory=list)
    """Each categorisation (each field, then their intersection)."""
    uncategorised: dict[str, int] = Field(default_factory=dict)
    """Categorisation key -> coded units without a value for it."""


__all__ = ["BreakdownDetail", "CellLabels", "ImpactDetail", "LabelRateDetail"]
