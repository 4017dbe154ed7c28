"""The typed run summary: what `summary.json` holds, read back by `compare`, suites and
the CLI through fields rather than string keys.

Sections that only the report templates read (cover, executive summary, method,
conditions, reliability, quality, reproducibility, trail) stay mappings: they are laid
out for the templates, and every number in them is also in the typed sections.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from biasaudit.records.estimate import Estimate
from biasaudit.records.execution import ExecutionStats
from biasaudit.records.metric_result import MetricResult
from biasaudit.records.sequential import SequentialRecord


class _Record(BaseModel):
    # summaries written by other versions may carry more keys: kept, not refused
    model_config = ConfigDict(extra="allow", frozen=True)


class AuditInfo(_Record):
    name: str
    method: str = ""
    description: str = ""
    title: str = ""


class ModelInfo(_Record):
    name: str
    backend: str = ""
    identity: dict[str, Any] = Field(default_factory=dict)


class DataInfo(_Record):
    source: str | None = None
    sha256: str | None = None
    format: str = ""
    rows: int = 0
    used: int = 0


class DesignInfo(_Record):
    cells: list[str] = Field(default_factory=list)
    n_cells: int = 0


class VerdictRow(_Record):
    metric: str
    over: str
    min: float | None = None
    max: float | None = None
    estimate: Estimate
    verdict: str
    cell: str | None = None
    refs: list[str] = Field(default_factory=list)
    reason: str = ""
    blocked: bool = False
    """A validity guard held the verdict back (INCONCLUSIVE; `reason` says why)."""
    would_be: str | None = None

    # `equivalence` and `tost` are written only for equivalence thresholds (kept as extra
    # keys, so the verdicts of other runs keep the keys they always had)
    @property
    def is_equivalence(self) -> bool:
        """An equivalence (TOST) threshold: `min`/`max` hold the band."""
        return bool((self.model_extra or {}).get("equivalence"))


class RunSummary(_Record):
    audit: AuditInfo
    run_id: str = ""
    model: ModelInfo
    spec_sha256: str = ""
    data: DataInfo = Field(default_factory=DataInfo)
    generated: str = ""
    cover: dict[str, Any] = Field(default_factory=dict)
    executive: dict[str, Any] = Field(default_factory=dict)
    method: dict[str, Any] = Field(default_factory=dict)
    design: DesignInfo = Field(default_factory=DesignInfo)
    execution: ExecutionStats = Field(default_factory=ExecutionStats)
    """Counts of the run (keys written by other versions are ignored)."""
    metrics: dict[str, MetricResult] = Field(default_factory=dict)
    coding: dict[str, Any] = Field(default_factory=dict)
    """Layers (label distributions per cell, status counts), reliability pairs, panels."""
    conditions: dict[str, Any] = Field(default_factory=dict)
    reliability: list[dict[str, Any]] = Field(default_factory=list)
    quality: dict[str, Any] = Field(default_factory=dict)
    verdicts: list[VerdictRow] = Field(default_factory=list)
    validity: list[dict[str, Any]] = Field(default_factory=list)
    """Every validity flag of the run's metrics, with the metric it is on (report's
    "Can these numbers decide?" section)."""
    overall: str = ""
    measured: bool = True
    """False: more than `validity.max_failed_share` of the run's model requests failed, so
    the run could not measure (every verdict INCONCLUSIVE; `biasaudit run` exits 4)."""
    unmeasured_reason: str | None = None
    """With `measured` False: how many requests failed, and the top reasons."""
    reproducibility: dict[str, Any] = Field(default_factory=dict)
    trail: dict[str, Any] = Field(default_factory=dict)
    answers: dict[str, Any] = Field(default_factory=dict)
    """The report's "What the model said": a few answers per group with their codes
    (`samples`) and the items that differ most with their texts (`largest`),
    report/answers.py; texts cut, counts bounded."""
    sequential: SequentialRecord | None = None
    """With `runtime.sequential`: the looks (stimuli seen, per-threshold estimate, repeated
    interval and decision), where the run stopped and why, and the stimuli not run."""

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, allow_nan=False, default=str)

    @classmethod
    def read(cls, path: Path) -> RunSummary:
        return cls.model_validate(json.loads(path.read_text(encoding="utf-8")))


__all__ = ["AuditInfo", "DataInfo", "DesignInfo", "ModelInfo", "RunSummary", "VerdictRow"]
