"""The one verdict record: built by `verdicts.thresholds`, held by `RunSummary.verdicts`
and written to (and read back from) summary.json as it is. There is no stored twin: the
report, JUnit, the notebook and the API read these typed fields."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from biasaudit.records.estimate import Estimate

Verdict = Literal["PASS", "FAIL", "INCONCLUSIVE"]

VERDICT_VIEW_KEYS = ("over_text", "clauses")
"""The report's wording of a verdict row (report/sections.verdict_rows), written beside the
record's fields into summary.json and left out when it is read back."""


class VerdictRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    metric: str
    over: str
    min: float | None = None
    max: float | None = None
    estimate: Estimate
    verdict: Verdict
    cell: str | None = None
    adjust: str = "none"
    """Multiplicity adjustment of a worst-cell interval (`ThresholdSpec.adjust`)."""
    refs: list[str] = Field(default_factory=list)
    reason: str = ""
    blocked: bool = False
    """A validity guard made the verdict INCONCLUSIVE (`reason` says which)."""
    would_be: Verdict | None = None
    """With `blocked`: what the interval alone would have said."""
    sanity: bool = False
    """From a sanity threshold (`ThresholdSpec.sanity`): about the model's fitness for the method."""
    note: str = ""
    equivalence: bool = False
    """An equivalence threshold (TOST): `min`/`max` hold the band, PASS means equivalence
    shown within it (not only no deviation shown beyond a bound)."""
    tost: Estimate | None = None
    """With `equivalence`: the estimate with its 1 - 2 alpha interval, the one PASS rests on."""

    @model_validator(mode="before")
    @classmethod
    def _without_views(cls, data: Any) -> Any:
        # summary.json's rows carry the report's wording too (not data): left out on reading
        if isinstance(data, dict) and any(k in data for k in VERDICT_VIEW_KEYS):
            return {k: v for k, v in data.items() if k not in VERDICT_VIEW_KEYS}
        return data

    @model_serializer(mode="wrap")
    def _drop_unused(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        # the equivalence keys only where they say something, so the summary.json of a run
        # without equivalence thresholds keeps the keys it always had
        out: dict[str, object] = handler(self)
        if not self.equivalence:
            out.pop("equivalence", None)
            out.pop("tost", None)
        return out


__all__ = ["VERDICT_VIEW_KEYS", "Verdict", "VerdictRecord"]
