"""The run manifest (`manifest.json`): what ran, on what, with which software. Written
when a run starts, completed when it finishes, read back by `biasaudit report` to
re-render a run without a model."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from biasaudit.records.budget import BudgetRecord
from biasaudit.records.execution import ExecutionStats
from biasaudit.records.json import DumpedJSONObject, JSONObject
from biasaudit.records.upgrade import validated
from biasaudit.records.upgrade.manifest import CURRENT

FORMAT_VERSION: int = CURRENT
"""The layout of manifest.json this biasaudit writes (records/upgrade/manifest.py). Files
written before the field existed (the golden files of tests/fixtures/format_v1) have no
`format_version`: version 1, read through the upgrade steps like every earlier version."""


class _Part(BaseModel):
    # an unknown key is a file this version did not write (or an edited one): refused;
    # older layouts are read through records/upgrade/manifest.py
    model_config = ConfigDict(extra="forbid")


class DataProvenance(BaseModel):
    """Where a stimulus file was published, from its folder's provenance.json, after the
    loader checked the file's digest against it (data/provenance.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    benchmark: str
    """The benchmark's id (`crows_pairs`)."""
    title: str = ""
    """Its name as cited (CrowS-Pairs); the id when the provenance gives none."""
    licence: str = ""
    licence_url: str = ""
    source_repo: str = ""
    """owner/name of the repository that published it."""
    commit: str = ""
    source_path: str = ""
    """The file's path in that repository at `commit`."""
    path: str = ""
    """The file's path in its provenance folder."""
    sha256: str = ""
    """SHA-256 of the file as read (of the gzip for a compressed file)."""
    records: int | None = None
    """Records in the published file, as its provenance says."""
    citation: str = ""
    checked: str = "sha256"
    """What the file was checked against: `sha256`, `git_blob_sha1` (the source tree's
    blob id, where no SHA-256 is recorded) or `none`."""


class DataSample(BaseModel):
    """`stimuli.sample`: the seeded sample asked for, and what it drew."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    n: int
    """Stimuli asked for."""
    of: int
    """Stimuli it was drawn from (after `where`)."""
    seed: int
    drawn: bool
    """False when the data holds no more than `n` stimuli (all of them are used)."""


class DataRef(_Part):
    source: str | None = None
    """The stimulus file (None: stimuli given inline in the spec)."""
    sha256: str | None = None
    format: str | None = None
    rows: int = 0
    used: int = 0
    selected: int | None = None
    """Stimuli left after `where` (before `sample`); None in manifests before this field."""
    sample: DataSample | None = None
    provenance: DataProvenance | None = None
    """The published data the file is, when a provenance.json lists it."""


class ModelRef(_Part):
    name: str = ""
    backend: str = ""
    identity: JSONObject = Field(default_factory=dict)
    """What the cache keys responses on: weights' digest, settings that change answers
    (each backend its own keys)."""


class RunManifest(_Part):
    format_version: int = Field(ge=FORMAT_VERSION, le=FORMAT_VERSION)
    """The file's layout (`FORMAT_VERSION`): the record holds only the current one; an
    earlier file (absent: version 1) is read through records/upgrade/manifest.py."""
    run_id: str
    audit: str = ""
    method: str = ""
    command: list[str] = Field(default_factory=list)
    coding_layers: dict[str, str] = Field(default_factory=dict)
    overrides: list[str] = Field(default_factory=list)
    choices: dict[str, str] = Field(default_factory=dict)
    spec_file: str
    spec_sha256: str = ""
    data: DataRef
    model: ModelRef = Field(default_factory=ModelRef)
    seed: int = 0
    cache: str
    versions: dict[str, str] = Field(default_factory=dict)
    config: DumpedJSONObject
    """The composed configuration as run: open JSON here, validated again as the spec's
    `AuditConfig` by whatever reads it (a re-render, an evidence pack, the viewer), so a
    manifest written by another version still loads and its config is judged by today's
    rules where it is used."""
    run_dir: str | None = None
    started: str | None = None
    finished: str | None = None
    run_stage_s: float | None = None
    execution: ExecutionStats | None = None
    stopped: str | None = None
    """Why the run ended before its plan did: `budget` (`runtime.budget`; resumable)."""
    budget: BudgetRecord | None = None
    """With `runtime.budget`: the spend against the limits, and what a stop left unrun."""

    @classmethod
    def read_raw(cls, raw: Any, *, file: str, **kw: Any) -> RunManifest:
        """A manifest.json as read (any earlier version, upgraded: records/upgrade/manifest.py);
        one error naming the file and key for anything else (`records.upgrade.validated`)."""
        return validated("manifest", cls, raw, file=file, name="manifest.json", **kw)[0]

    def as_json(self) -> JSONObject:
        """The manifest as written: the fields not known yet (a run still going) are left out."""
        out = self.model_dump(mode="json")
        for k in ("run_dir", "started", "finished", "run_stage_s", "execution", "stopped", "budget"):
            if out.get(k) is None:
                out.pop(k, None)
        data = out.get("data")
        if isinstance(data, dict):  # what a run did not have (inline stimuli: no selection, sample, provenance)
            for k in ("selected", "sample", "provenance"):
                if data.get(k) is None:
                    data.pop(k, None)
        return out
