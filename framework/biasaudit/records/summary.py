"""The typed run summary: what a run found and how it was made, read by the report,
`compare`, suites, the API and the CLI through fields rather than string keys.

`RunSummary` holds data only. The report's views of it (executive summary, method,
prompt conditions, the reliability table, data quality, the validity flags, the verdict
rows' clause texts) are built from these records at render time (`report/sections.py`)
and written beside them into `summary.json`, in the layout it has always had; reading a
summary.json back leaves those views out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from biasaudit.records.budget import BudgetRecord
from biasaudit.records.coding import CodingReport
from biasaudit.records.execution import ExecutionStats
from biasaudit.records.json import JSONObject
from biasaudit.records.manifest import DataProvenance, DataSample
from biasaudit.records.metric_result import MetricResult
from biasaudit.records.sequential import SequentialRecord
from biasaudit.records.upgrade import upgrade
from biasaudit.records.upgrade.summary import CURRENT
from biasaudit.records.verdict import VerdictRecord


class _Record(BaseModel):
    # an unknown key is refused: an older layout is read through its upgrade
    # (records/upgrade/summary.py) into today's, never kept as untyped extras
    model_config = ConfigDict(extra="forbid", frozen=True)


class AuditInfo(_Record):
    name: str
    method: str = ""
    description: str = ""
    title: str = ""


class ModelInfo(_Record):
    name: str
    backend: str = ""
    identity: JSONObject = Field(default_factory=dict)


class DataInfo(_Record):
    source: str | None = None
    sha256: str | None = None
    format: str = ""
    rows: int = 0
    used: int = 0
    selected: int | None = None
    """Stimuli left after `where`, before `sample`."""
    sample: DataSample | None = None
    """`stimuli.sample` as asked and drawn ("n of N stimuli, seed s")."""
    provenance: DataProvenance | None = None
    """The published data the stimulus file is (benchmark, repository, commit, licence)."""


class DesignInfo(_Record):
    cells: list[str] = Field(default_factory=list)
    n_cells: int = 0
    levels: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Cell id -> factor -> level (empty for a summary written before this field)."""
    factors: dict[str, list[str]] = Field(default_factory=dict)
    """The spec's factors and their levels, in the spec's order."""
    probe: str = ""
    """The probe kind the plan asked the model (`generate`, `pair_logprob`...)."""
    kind: str = ""
    """The design kind (`DesignSpec.kind`)."""
    metric_names: dict[str, str] = Field(default_factory=dict)
    """Metric id -> registered metric name (whose method text the report shows)."""
    groups: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Factor -> level -> the group its cells are counted in, for the factors whose levels
    set a group variable (`runner.checks.level_groups`), shown in the method section."""


class TokenCost(_Record):
    """Tokens one model used in the run and, where the user stated its price, their cost
    (the report's cover)."""

    model: str
    input_tokens: int = 0
    """Reported by the provider, plus the plan's estimate for answers it reported none for."""
    output_tokens: int = 0
    estimated_answers: int = 0
    """Answers whose tokens are the plan's estimate (the provider reported no usage)."""
    answers: int = 0
    cost: float | None = None
    """At `model.price` (None: no price given)."""
    currency: str | None = None
    batch_answers: int = 0
    """Answers that came through the provider's batch API (`runtime.batch`), priced at
    `model.price.batch_discount` where given."""
    batch_ids: list[str] = Field(default_factory=list)
    """The batches they came from."""
    text: str = ""
    """The cover's line: the counts, whether any part is estimated and why, the cost."""


class Cover(_Record):
    """Who and what the run was: the model, the spec, the data, when, by which version,
    and the auditor's own scope, limitations and sign-off (as written: the report escapes
    them). The report's cover page."""

    notices: list[str] = Field(default_factory=list)
    """Licence notices of the models the run used, once each."""
    title: str = ""
    audit: str = ""
    method: str = ""
    description: str = ""
    model: str = ""
    backend: str = ""
    served_by: str = ""
    """A managed engine serving the model (`model.serve`): which, and which weights."""
    model_file: JsonValue = ""
    """From the backend's identity, as it gives it (a model through an NLI route gives the
    identity of that model, a mapping): the file, path or name of the weights."""
    model_sha256: JsonValue = ""
    model_revision: JsonValue = ""
    spec_file: str = ""
    spec_sha256: str = ""
    data_source: str = ""
    data_sha256: str = ""
    started: str = ""
    finished: str = ""
    generated: str = ""
    tool_version: str = ""
    run_id: str = ""
    scope: str = ""
    limitations: str = ""
    auditor: str = ""
    signoff_date: str = ""
    scoring: list[str] = Field(default_factory=list)
    """How scored texts' first words were conditioned over HTTP, as the backend recorded it."""
    tokens: list[TokenCost] = Field(default_factory=list)
    """Tokens (and cost, where a price is given) per model of the run."""
    budget: str = ""
    """With `runtime.budget`: the spend against it, and `stopped: budget ...` if it stopped the run."""


class Reproducibility(_Record):
    command: str = ""
    """The command line, shell-quoted."""
    overrides: list[str] = Field(default_factory=list)
    choices: dict[str, str] = Field(default_factory=dict)
    seed: int = 0
    cache: str = ""
    versions: dict[str, str] = Field(default_factory=dict)
    rerun: str = ""
    """`biasaudit run` with the run's overrides, shell-quoted."""


class Trail(_Record):
    """The audit trail beside the report: responses.jsonl (one line per plan item) and codes.jsonl."""

    file: str = "responses.jsonl"
    lines: int = 0
    requests: int = 0
    ok: int = 0
    failed: int = 0
    codes: str | None = None


class SampleCode(_Record):
    layer: str
    code: str | float | None = None
    """The layer's label or value, or its status (`abstain`, `failed`...) when it did not code."""


class SampleAnswer(_Record):
    stimulus: str
    cell: str
    prompt: str
    answer: str
    codes: list[SampleCode] = Field(default_factory=list)


class SampleGroup(_Record):
    """A few answers of one group of a breakdown (a metric's `by` field, or the cells)."""

    by: str
    group: str
    n: int
    shown: int
    groups: int
    answers: list[SampleAnswer] = Field(default_factory=list)


class Side(_Record):
    slot: str
    text: str
    answer: str


class LargestRow(_Record):
    stimulus: str
    cell: str
    diff: float
    sides: list[Side] = Field(default_factory=list)


class LargestItems(_Record):
    """A metric's items with the largest absolute per-item difference, with their texts."""

    metric: str
    title: str
    n_items: int
    shown: int
    rows: list[LargestRow] = Field(default_factory=list)


class Answers(_Record):
    """The report's "What the model said" (report/answers.py): texts cut, counts bounded."""

    samples: list[SampleGroup] = Field(default_factory=list)
    largest: list[LargestItems] = Field(default_factory=list)
    limits: dict[str, int] = Field(default_factory=dict)


VIEW_KEYS = frozenset({"executive", "method", "conditions", "reliability", "quality", "validity"})
"""summary.json's report views (report/sections.py), built at render time from the record."""


class RunSummary(_Record):
    format_version: int = Field(default=CURRENT, ge=CURRENT, le=CURRENT)
    """The file's layout (`records.upgrade.summary.CURRENT`): 2 since estimates carry their
    typed group. An earlier one (absent: 1) is read through its upgrade steps, so a record
    always holds the current layout; a later one is refused."""
    audit: AuditInfo
    run_id: str = ""
    model: ModelInfo
    spec_sha256: str = ""
    data: DataInfo = Field(default_factory=DataInfo)
    generated: str = ""
    cover: Cover = Field(default_factory=Cover)
    design: DesignInfo = Field(default_factory=DesignInfo)
    execution: ExecutionStats = Field(default_factory=ExecutionStats)
    """Counts of the run."""
    metrics: dict[str, MetricResult] = Field(default_factory=dict)
    coding: CodingReport = Field(default_factory=CodingReport)
    """Layers (label distributions per cell, status counts), reliability pairs, panels."""
    verdicts: list[VerdictRecord] = Field(default_factory=list)
    overall: str = ""
    measured: bool = True
    """False: more than `validity.max_failed_share` of the run's model requests failed, so
    the run could not measure (every verdict INCONCLUSIVE; `biasaudit run` exits 4)."""
    unmeasured_reason: str | None = None
    """With `measured` False: how many requests failed, and the top reasons."""
    reproducibility: Reproducibility = Field(default_factory=Reproducibility)
    trail: Trail = Field(default_factory=Trail)
    answers: Answers = Field(default_factory=Answers)
    """The report's "What the model said": a few answers per group with their codes
    (`samples`) and the items that differ most with their texts (`largest`),
    report/answers.py; texts cut, counts bounded."""
    sequential: SequentialRecord | None = None
    """With `runtime.sequential`: the looks (stimuli seen, per-threshold estimate, repeated
    interval and decision), where the run stopped and why, and the stimuli not run."""
    budget: BudgetRecord | None = None
    """With `runtime.budget`: the spend against the limits; `stopped` with the limit that
    stopped the run and the stimuli not run (its verdicts are then INCONCLUSIVE)."""

    @model_validator(mode="before")
    @classmethod
    def _without_views(cls, data: Any) -> Any:
        """summary.json as written: the report's views are left out (the record read back
        equals the one the run built). Only today's layout: a file is read through
        `upgraded` first."""
        if not isinstance(data, dict):
            return data
        return {k: v for k, v in data.items() if k not in VIEW_KEYS}

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, allow_nan=False, default=str)

    @classmethod
    def read_raw(cls, raw: object, *, file: str) -> RunSummary:
        """A summary.json as read (any earlier format, upgraded: records/upgrade/summary.py)."""
        return cls.model_validate(upgraded(raw, file=file))

    @classmethod
    def read(cls, path: Path) -> RunSummary:
        return cls.read_raw(json.loads(path.read_text(encoding="utf-8")), file=str(path))


def upgraded(raw: object, *, file: str) -> object:
    """summary.json as read, in today's layout (records/upgrade/summary.py; a newer format:
    `NewerFormatError`, one line). What is not a JSON object is left for the record to refuse."""
    return upgrade("summary", raw, file=file)[0] if isinstance(raw, dict) else raw


__all__ = ["CURRENT", "VIEW_KEYS", "upgraded", "Answers", "AuditInfo", "Cover", "DataInfo", "DesignInfo", "LargestItems",
           "LargestRow", "ModelInfo", "Reproducibility", "RunSummary", "SampleAnswer", "SampleCode", "SampleGroup",
           "Side", "TokenCost", "Trail", "VerdictRecord"]
