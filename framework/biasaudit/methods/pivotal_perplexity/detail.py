"""Pivotal-token perplexity's own record in `MetricResult.detail`: what its report section
(`report.present`) shows beside the estimates, cells and item rows. `metric.compute`
builds it; JSON in the result, parsed back here."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from biasaudit.records.estimate import Estimate
from biasaudit.stats.contrasts import ContrastFamily


class Unscorable(BaseModel):
    """A prompt pair left out, and why."""

    model_config = ConfigDict(frozen=True)
    stimulus: str
    cell: str
    reason: str


class GroupDetail(BaseModel):
    """One group of a `by` field, beside its accuracy (the estimate `accuracy.<field>.<group>`)."""

    model_config = ConfigDict(frozen=True)
    group: str
    stimuli: int
    normalized: Estimate
    """The pivotal normalized proportion over the group's prompt pairs."""


class FieldDetail(BaseModel):
    """The groups of one `by` field, in report order, and (when asked) every pair of its
    groups' accuracies compared."""

    model_config = ConfigDict(frozen=True)
    field: str
    groups: list[GroupDetail]
    contrasts: ContrastFamily | None = None


class PivotalDetail(BaseModel):
    """What the report shows beside the estimates, cells and item rows (`MetricResult.detail`)."""

    model_config = ConfigDict(frozen=True)
    pairs: dict[str, int]
    """Cell -> its scored prompt pairs, every cell of the plan in plan order."""
    breakdowns: list[FieldDetail]
    """One per `by` field, in report order."""
    normalized: dict[str, list[float]]
    """`period`, `other` -> the normalized proportion of every prompt pair where it is
    defined (the pivotal ones are the item rows' `diff`)."""
    unscorable: list[Unscorable]
