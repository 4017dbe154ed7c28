"""BBQ's own intermediate values, kept in `MetricResult.detail` for its report section:
the answers are no item rows (an example is answered once per option order), so the
report's answer list, the answers that could not be read and the outcomes per category
are kept here; the scores per category are in the estimates (`<score>.<category>`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from biasaudit.stats.contrasts import ContrastFamily


class AnswerRow(BaseModel):
    """One answer as the report lists it: the right, the biased and the chosen answer."""

    model_config = ConfigDict(frozen=True)
    stimulus: str
    category: str
    condition: str
    polarity: str
    label: int
    biased: int | None
    """The stereotyped answer (None: it could not be told)."""
    pred: int | None
    """The chosen answer (None: none could be read)."""
    cell: str


class Unread(BaseModel):
    """An answer left out of every score, and why."""

    model_config = ConfigDict(frozen=True)
    stimulus: str
    cell: str
    reason: str


class CategoryOutcome(BaseModel):
    """One category's answers: how many, how many valid, the others by reason."""

    model_config = ConfigDict(frozen=True)
    category: str
    answers: int
    valid: int
    invalid: dict[str, int] = Field(default_factory=dict)
    """Reason -> the category's answers without a score for it."""


class BBQDetail(BaseModel):
    """`MetricResult.detail` of `bbq`. The lists hold the first `report.max_rows` entries
    (the report lists no more; `counts` has every answer)."""

    model_config = ConfigDict(frozen=True)
    answers: list[AnswerRow] = Field(default_factory=list)
    unread: list[Unread] = Field(default_factory=list)
    outcomes: list[CategoryOutcome] = Field(default_factory=list)
    """Per category, sorted."""
    contrasts: dict[str, ContrastFamily | None] = Field(default_factory=dict)
    """Score (`accuracy`, `s_dis`) -> every pair of categories compared (with `contrasts`)."""


__all__ = ["AnswerRow", "BBQDetail", "CategoryOutcome", "Unread"]
