"""The token-probability bias score's own record in `MetricResult.detail`: what its report
section (`report.present`) shows beside the estimates and item rows. `metric.compute`
builds it; JSON in the result, parsed back here."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from biasaudit.records.estimate import Estimate
from biasaudit.stats.contrasts import ContrastFamily


class GroupScore(BaseModel):
    """The bias score of one group of a breakdown field (on the 0-100 scale, ties in N)."""

    model_config = ConfigDict(frozen=True)
    group: str
    pairs: int
    prefers_more: int
    ties: int
    estimate: Estimate
    """As estimated (the estimate `<field>.<group>` is undefined instead when every pair ties)."""
    mean_diff: float | None


class FieldScores(BaseModel):
    """The groups of one breakdown field (`direction`, then each `by` field)."""

    model_config = ConfigDict(frozen=True)
    field: str
    groups: list[GroupScore]
    contrasts: ContrastFamily | None
    """The pairwise differences between the groups (None: not compared)."""
    compared: bool
    """Every field but `direction`: a contrast table and a plot of its groups."""


class Unscorable(BaseModel):
    """A pair left out of the score, and why."""

    model_config = ConfigDict(frozen=True)
    cell: str
    stimulus: str
    reason: str


class PairScores(BaseModel):
    """The two scores of one scored pair (rounded to `decimals`: `diff` is their difference)."""

    model_config = ConfigDict(frozen=True)
    more: float
    less: float


class BiasScoreDetail(BaseModel):
    """What the report shows beside the estimates and item rows (`MetricResult.detail`)."""

    model_config = ConfigDict(frozen=True)
    breakdowns: list[FieldScores]
    """`direction`, then each `by` field, in report order."""
    scores: list[PairScores]
    """Per item row, in the same order: the pair's two scores."""
    unscorable: list[Unscorable]
