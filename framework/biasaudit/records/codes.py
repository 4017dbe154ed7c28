"""What a coding layer reads and says: the unit (one answered plan item) and its code. Data only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ABSTAIN = "Abstain"
"""The label shown for a unit a layer could not code."""


CodeStatus = Literal["coded", "abstain", "not_applicable", "failed"]
"""`coded`: a label or value; `abstain`: the coder ran and could not decide (no rule
fired, no judge majority); `not_applicable`: the layer does not apply to this unit (a
task without a selection layer, an answer too short to compare); `failed`: the subject's
response or a coding request failed."""


@dataclass(frozen=True)
class Unit:
    """One answered plan item: what a layer codes."""

    id: str
    cell: str
    stimulus: str
    slot: str
    variant: int
    sample: int
    key: str
    """The subject request's key (its response is `responses[key]`)."""
    levels: Mapping[str, str]
    """Factor -> level of the unit's cell."""
    fields: Mapping[str, Any]
    """The stimulus's fields."""
    vars: Mapping[str, Any]
    """Variables the cell's levels set."""

    def context(self, **extra: Any) -> dict[str, Any]:
        """Template variables for rubrics and prompts: stimulus fields, level vars, levels."""
        return {**self.fields, **self.vars, "levels": dict(self.levels), "stimulus_id": self.stimulus, **extra}


class Code(BaseModel):
    """What a layer says about one unit."""

    model_config = ConfigDict(frozen=True)
    unit: str
    status: CodeStatus
    label: str | None = None
    """A label of the layer's label set (status `coded`, label layers)."""
    value: float | None = None
    """A number (status `coded`, value layers such as similarities or mean ratings)."""
    text: str | None = None
    """The text the layer read after its own preprocessing (masking), when later layers
    take this layer as their input."""
    source: str = ""
    """Which coder gave the code (`rules`, `fallback:<layer>`...)."""
    detail: dict[str, Any] = Field(default_factory=dict)
    """Coder-specific evidence: the matched span, each judge's vote, the checked claims."""

    @property
    def coded(self) -> bool:
        return self.status == "coded"
