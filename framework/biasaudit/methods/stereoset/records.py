"""StereoSet's own intermediate values, kept in `MetricResult.detail` for its report
section: the three sentence scores of each scored item (the item rows keep only their
difference) and the items that could not be scored."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ItemScores(BaseModel):
    """One scored item's sentence scores (mean or summed token log-probabilities)."""

    model_config = ConfigDict(frozen=True)
    stimulus: str
    stereotype: float
    anti: float
    unrelated: float


class Unscored(BaseModel):
    """An item left out: a failed request, or a sentence missing from the scored text."""

    model_config = ConfigDict(frozen=True)
    stimulus: str
    cell: str
    reason: str


class StereoSetDetail(BaseModel):
    """`MetricResult.detail` of `stereoset`."""

    model_config = ConfigDict(frozen=True)
    scores: list[ItemScores] = Field(default_factory=list)
    """One per item row, in the same order."""
    unscored: list[Unscored] = Field(default_factory=list)
    """The first `report.max_rows` items that could not be scored (all of them are counted
    in `counts.unscorable`): the report lists no more."""


__all__ = ["ItemScores", "StereoSetDetail", "Unscored"]
