"""TFDP's own record in `MetricResult.detail`: what its report section (`report.present`)
shows beside the estimates and counts. `metric.compute` builds it; JSON in the result,
parsed back here."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, JsonValue

from biasaudit.records.estimate import Estimate
from biasaudit.stats.contrasts import ContrastFamily


class GroupScores(BaseModel):
    """One group of a breakdown field: its pairs, mean scores and their SDs."""

    model_config = ConfigDict(frozen=True)
    group: str
    pairs: int
    estimates: dict[str, Estimate]
    """`WFS`, `PS`, `PSD`, `abs_PS` -> mean (with its SD in the note)."""
    sd: dict[str, float]
    """`WFS`, `PS`, `PSD` -> sample SD over the group's pairs (0 under two pairs)."""


class FieldScores(BaseModel):
    """The groups of one breakdown field (the task field, then each `by` field) and (when
    asked) every pair of its groups compared, per score."""

    model_config = ConfigDict(frozen=True)
    field: str
    groups: list[GroupScores]
    contrasts: list[tuple[str, ContrastFamily]] = []


class Unscorable(BaseModel):
    """A pair left out, and why."""

    model_config = ConfigDict(frozen=True)
    stimulus: str
    reason: str


class Disparity(BaseModel):
    """One pair of the "largest disparities" table: its sentences, truths and top predictions
    (the stimulus's fields as they are), and its scores."""

    model_config = ConfigDict(frozen=True)
    stimulus: str
    task: JsonValue
    sentence: JsonValue
    counter: JsonValue
    truth: JsonValue
    counter_truth: JsonValue
    top: str
    top_counter: str
    ps: float
    psd: float
    wfs: float


class TFDPDetail(BaseModel):
    """What the report shows beside the estimates and counts (`MetricResult.detail`)."""

    model_config = ConfigDict(frozen=True)
    breakdowns: list[FieldScores]
    """The task field, then each `by` field: the groups' scores as measured (the estimates
    are undefined instead when the scores are fixed by the kernel)."""
    largest: list[Disparity]
    """The `max_rows` pairs with the largest |WFS|, largest first."""
    samples: int
    """Black-box: sampled one-token answers per sentence."""
    unscorable: list[Unscorable]
