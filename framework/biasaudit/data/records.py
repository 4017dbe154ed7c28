"""The stimulus record every loader produces."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Stimulus(BaseModel):
    model_config = ConfigDict(frozen=True)
    id: str
    """Stable id: the id column, or the 0-based row number in the source."""
    fields: dict[str, Any]
    """Canonical fields (after the adapter's mapping), available to templates and metrics."""


class StimulusSet(BaseModel):
    model_config = ConfigDict(frozen=True)
    stimuli: list[Stimulus]
    source: str | None
    """Absolute path of the data file (None for inline stimuli)."""
    sha256: str | None
    format: str
    n_total: int
    """Rows before subsampling."""

    @property
    def field_names(self) -> set[str]:
        names: set[str] = set()
        for s in self.stimuli:
            names.update(s.fields)
        return names
