"""FiSCo's own intermediate values, kept in `MetricResult.detail` for its report section:
every question's Welch test (the item rows hold the tested ones only), the question counts
of each group of a `by` field with its pairwise comparisons, and each baseline's agreement
with FiSCo's flags. The flagged shares are in the estimates."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from biasaudit.stats.contrasts import ContrastFamily


class QuestionRow(BaseModel):
    """One question's test: intra- against inter-group similarities, the worst group pair."""

    model_config = ConfigDict(frozen=True)
    stimulus: str
    pair: str
    """The groups compared (`a vs b`; empty: none could be)."""
    t: float | None
    """None: untested (too few scorable pairs, or no variance)."""
    df: float | None
    p: float | None
    """Holm-adjusted across the group pairs."""
    flagged: bool
    mean_inter: float | None
    mean_intra: float | None
    n_inter: int
    n_intra: int
    note: str = ""
    evidence: list[list[str]] = Field(default_factory=list)
    """Claims not entailed across groups: (claim's group, checked against, claim, label),
    at most `max_evidence`."""


class GroupCount(BaseModel):
    """A group's tested questions and how many were flagged (its share is
    `flagged_share.<field>.<group>`)."""

    model_config = ConfigDict(frozen=True)
    group: str
    flagged: int
    questions: int


class FieldDetail(BaseModel):
    """The groups of one `by` field, in report order, and (with `contrasts`) every pair compared."""

    model_config = ConfigDict(frozen=True)
    field: str
    groups: list[GroupCount]
    contrasts: ContrastFamily | None = None


class BaselineAgreement(BaseModel):
    """A baseline similarity's flags over the tested questions, against FiSCo's."""

    model_config = ConfigDict(frozen=True)
    baseline: str
    flagged: int
    questions: int
    agreement: float
    kappa: float | None


class FiscoDetail(BaseModel):
    """`MetricResult.detail` of `fisco`."""

    model_config = ConfigDict(frozen=True)
    questions: list[QuestionRow] = Field(default_factory=list)
    fields: list[FieldDetail] = Field(default_factory=list)
    agreements: list[BaselineAgreement] = Field(default_factory=list)


__all__ = ["BaselineAgreement", "FieldDetail", "FiscoDetail", "GroupCount", "QuestionRow"]
