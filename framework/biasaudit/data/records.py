"""The stimulus record every loader produces."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from biasaudit.records.json import JSONObject
from biasaudit.records.manifest import DataProvenance, DataSample


class Stimulus(BaseModel):
    model_config = ConfigDict(frozen=True)
    id: str
    """Stable id: the id column, or the 0-based row number in the source."""
    fields: JSONObject
    """Canonical fields (after the adapter's mapping), available to templates and metrics:
    the dataset's own columns, so open by nature, but JSON (checked when a record is made)."""


class StimulusSet(BaseModel):
    model_config = ConfigDict(frozen=True)
    stimuli: list[Stimulus]
    source: str | None
    """Absolute path of the data file (None for inline stimuli)."""
    sha256: str | None
    format: str
    n_total: int
    """Rows in the data, before `where` and `sample`."""
    selected: int | None = None
    """Rows left after `where`, before `sample` (None: built by hand, as `n_total`)."""
    sample: DataSample | None = None
    provenance: DataProvenance | None = None
    """The published data the file is, checked against its folder's provenance.json."""

    @property
    def field_names(self) -> set[str]:
        names: set[str] = set()
        for s in self.stimuli:
            names.update(s.fields)
        return names
