"""The published layout of every file biasaudit writes for later reading: which record
describes it, its upgrade kind (records/upgrade/<kind>.py) and its JSON Schema
(draft 2020-12) at the current version, printed by `biasaudit schema <file kind>` and
committed under docs/schemas/<file kind>/v<N>.json.

The schemas are built from the records that read the files (pydantic's
`model_json_schema`), so they cannot drift from them; a test compares today's with the
committed file of the current version, so a layout change without a version bump fails.

A JSON-lines trail is described line by line: each line is one record, except the first,
the header (`TrailHeader`) written from version 2 on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

from biasaudit.records.annotation import SampleRecord
from biasaudit.records.codes import Code
from biasaudit.records.compare import CompareResult
from biasaudit.records.evidence import PackManifest
from biasaudit.records.jobs import JobOutcome
from biasaudit.records.json import JSONObject
from biasaudit.records.manifest import RunManifest
from biasaudit.records.responses import StoredOutput
from biasaudit.records.suite import SuiteSummary
from biasaudit.records.summary import VIEW_KEYS, RunSummary
from biasaudit.records.upgrade import current, kinds
from biasaudit.records.verdict import VERDICT_VIEW_KEYS, VerdictRecord

DIALECT = "https://json-schema.org/draft/2020-12/schema"


class TrailHeader(BaseModel):
    """The first line of a JSON-lines trail from version 2 on (`_util.trail.header`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    biasaudit_trail: str
    """The trail's kind: `responses`, `codes` or `jobs`."""
    format_version: int = Field(ge=2)
    """The trail's layout (a trail without a header is version 1)."""


class TrailLine(BaseModel):
    """One line of responses.jsonl: a plan item, its request and the model's answer
    (`runner.pipeline.write_trail`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    cell: str
    """The design cell (a combination of factor levels)."""
    levels: dict[str, str]
    """Factor -> level of the cell."""
    stimulus: str
    slot: str
    """The prompt slot of the stimulus (a method's roles: `stereo`, `question`...)."""
    variant: int
    """The prompt variant (a paraphrase of the template)."""
    sample: int
    """The sample index of a sampled generation (0 otherwise)."""
    key: str
    """The request's content hash (the cache's key)."""
    request: JSONObject
    """The request as planned (`plan.requests.Request`, without its key)."""
    status: Literal["ok", "failed"]
    error: str | None
    error_kind: str | None
    attempts: int
    output: StoredOutput
    """The backend's output as it gave it (a JSON object), or null when the request failed."""


class CodeLine(Code):
    """One line of codes.jsonl: what one coding layer said about one unit."""

    layer: str
    """The coding layer's name in the spec."""


@dataclass(frozen=True)
class FileFormat:
    kind: str
    """The upgrade kind (records/upgrade/<kind>.py)."""
    record: type[BaseModel]
    """The record of the file (of one line, for a trail)."""
    title: str
    trail: bool = False


FORMATS: dict[str, FileFormat] = {
    "run-summary": FileFormat("summary", RunSummary, "a run folder's summary.json"),
    "manifest": FileFormat("manifest", RunManifest, "a run folder's manifest.json"),
    "responses": FileFormat("responses", TrailLine, "a run folder's responses.jsonl (one line per plan item)",
                            trail=True),
    "codes": FileFormat("codes", CodeLine, "a run folder's codes.jsonl (one line per coding layer and unit)",
                        trail=True),
    "jobs": FileFormat("jobs", JobOutcome, "the job ledger of a sweep (one line per finished job)", trail=True),
    "suite-summary": FileFormat("suite", SuiteSummary, "a suite folder's summary.json"),
    "compare": FileFormat("compare", CompareResult, "compare.json (`biasaudit compare`)"),
    "pack": FileFormat("pack", PackManifest, "an evidence pack's MANIFEST.json"),
    "annotation-sample": FileFormat("annotation_sample", SampleRecord,
                                    "an annotation sheet's sampling record <sheet>.sample.json (`biasaudit annotate "
                                    "export`, the viewer's review)"),
}
"""`biasaudit schema <name>` -> the file it describes."""


def format_version(name: str) -> int:
    """The version of file `name` this biasaudit writes. summary.json's upgrade module is
    its record's owner's; until it exists, the record's own default says the version."""
    f = FORMATS[name]
    if f.kind in kinds():
        return current(f.kind)
    default = f.record.model_fields["format_version"].default
    assert isinstance(default, int)
    return default


def format_schema(name: str, evidence: Sequence[type[BaseModel]] = ()) -> dict[str, Any]:
    """The JSON Schema of file `name` at the version this biasaudit writes. `evidence`: the
    registered coders' evidence records (`CoderDef.evidence`), which a codes line's
    `detail` is one of (records/ does not import the registry: the caller passes them)."""
    f = FORMATS[name]
    version = format_version(name)
    body = f.record.model_json_schema(mode="validation")
    if name == "run-summary":  # the report's views, written beside the records and never read back
        view = {"description": "A report view (report/sections.py), built from the record when the file is "
                               "written; readers ignore it."}
        body["properties"].update((key, view) for key in sorted(VIEW_KEYS))
        verdict = body.get("$defs", {}).get(VerdictRecord.__name__)
        if verdict is not None:
            verdict["properties"].update((key, view) for key in VERDICT_VIEW_KEYS)
    if evidence and name == "codes":
        models = sorted({*evidence}, key=lambda m: m.__name__)
        _, extra = models_json_schema([(m, "validation") for m in models], ref_template="#/$defs/{model}")
        body.setdefault("$defs", {}).update(extra.get("$defs", {}))
        body["properties"]["detail"] = {
            "anyOf": [{"$ref": f"#/$defs/{m.__name__}"} for m in models],
            "description": "The evidence record of the coder that `source` names (one per registered coder)."}
    head: dict[str, Any] = {"$schema": DIALECT, "$id": f"urn:biasaudit:format:{name}:{version}",
                            "title": f"{f.title}: biasaudit file format {version}"}
    if not f.trail:
        body.pop("title", None)
        return {**head, **body}
    defs = body.pop("$defs", {})
    line = body.pop("title", f.record.__name__)
    defs[line] = body
    header = TrailHeader.model_json_schema(mode="validation")
    header["properties"]["biasaudit_trail"]["const"] = f.kind
    header["properties"]["format_version"]["const"] = version
    defs["TrailHeader"] = header
    return {**head, "description": f"JSON lines: line 1 is the header (`TrailHeader`), each other line a "
                                   f"`{line}`. A file without a header is format 1.",
            "anyOf": [{"$ref": f"#/$defs/{line}"}, {"$ref": "#/$defs/TrailHeader"}], "$defs": defs}


__all__ = ["CodeLine", "FORMATS", "FileFormat", "TrailHeader", "TrailLine", "format_schema", "format_version"]
