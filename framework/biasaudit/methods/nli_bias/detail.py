"""The NLI bias scores' own record in `MetricResult.detail`: what their report section
(`report.present`) shows beside the estimates. `metric.compute` builds it; JSON in the
result, parsed back here."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from biasaudit.stats.contrasts import ContrastFamily


class GroupSize(BaseModel):
    """One group of a `by` field and its scored triples (its M6 and M9 are the estimates
    `M6.<field>.<group>` and `M9.<field>.<group>`)."""

    model_config = ConfigDict(frozen=True)
    group: str
    triples: int


class FieldGroups(BaseModel):
    """The groups of one `by` field, in report order, and (when asked) their pairwise
    contrasts per score (`M6`, `M9`)."""

    model_config = ConfigDict(frozen=True)
    field: str
    groups: list[GroupSize]
    contrasts: list[tuple[str, ContrastFamily]] = []


class MeanEntailment(BaseModel):
    """Mean entailment probability of the stereotypical and the counter-stereotypical premises."""

    model_config = ConfigDict(frozen=True)
    stereo: float
    counter: float


class Unscorable(BaseModel):
    """A triple left out of every M, and why."""

    model_config = ConfigDict(frozen=True)
    stimulus: str
    reason: str


class NLIBiasDetail(BaseModel):
    """What the report shows beside the estimates (`MetricResult.detail`)."""

    model_config = ConfigDict(frozen=True)
    breakdowns: list[FieldGroups]
    """One per `by` field, in report order."""
    mean_entailment: MeanEntailment
    unscorable: list[Unscorable]
