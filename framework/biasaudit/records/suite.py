"""The typed suite summary: what a suite's `summary.json` holds (runner/suite.py builds it),
read by the suite report, the CLI's end-of-suite table and exit code, and the API's
`SuiteResult` through fields rather than string keys.

Dumped with `model_dump(mode="json")`, it gives the keys and values the file has always
had, in the same order. The suite report's template still receives that dump.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from biasaudit.records.estimate import Estimate
from biasaudit.records.upgrade import validated
from biasaudit.records.upgrade.suite import CURRENT


class _Record(BaseModel):
    # an unknown key is a file this version did not write (or an edited one): refused;
    # older layouts are read through records/upgrade/suite.py
    model_config = ConfigDict(extra="forbid", frozen=True)


class SuiteInfo(_Record):
    """The suite file's name and text, and the auditor's sign-off (`report.sections.signoff`)."""

    name: str
    title: str = ""
    description: str = ""
    file: str = ""
    """The suite file, relative to the working directory when inside it."""
    scope: str = ""
    limitations: str = ""
    auditor: str = ""
    signoff_date: str = ""


class SuiteMemberInfo(_Record):
    id: str
    """The member's label (or its spec file's stem)."""
    method: str = ""


class SuiteVerdict(_Record):
    """One threshold's verdict of a member run."""

    metric: str
    over: str
    verdict: str
    estimate: Estimate


class SuiteRow(_Record):
    """One run of the suite: a member on a subject, with its headline estimate."""

    member: str
    subject: str
    audit: str = ""
    method: str = ""
    model: str = ""
    overall: str = ""
    measured: bool = True
    unmeasured_reason: str | None = None
    estimate_name: str = ""
    """`<metric id>.<estimate name>` of the headline that ranks the subjects."""
    estimate: Estimate
    reference: float | None = None
    """The metric's no-bias reference (None: it declares none)."""
    magnitude: float | None = None
    """Distance of the headline from the reference, or the value itself (`runner.suite.magnitude`)."""
    verdicts: list[SuiteVerdict] = Field(default_factory=list)
    report: str = ""
    """The run's report.html, relative to the suite folder."""
    requests: int = 0
    calls: int = 0
    failures: int = 0


class SanityCheck(_Record):
    """A sanity member's verdict on one subject: about the model's fitness for a method."""

    member: str
    subject: str
    model: str = ""
    verdict: str = ""
    text: str = ""


class TauPair(_Record):
    """Kendall tau-b between two members' rankings of the subjects they share."""

    a: str
    b: str
    tau_b: float | None = None
    p_value: float | None = None
    n: int = 0


class SeparatedCount(_Record):
    """How many pairs of subjects have non-overlapping 95% intervals, of how many."""

    separated: int = 0
    pairs: int = 0


class Triangulation(_Record):
    """Rank agreement between the (non-sanity) members across subjects."""

    labels: list[str] = Field(default_factory=list)
    matrix: list[list[float | None]] = Field(default_factory=list)
    """Kendall tau-b of every two members, rows and columns over `labels`."""
    pairs: list[TauPair] = Field(default_factory=list)
    rankings: dict[str, list[str]] = Field(default_factory=dict)
    """Member -> subjects, most biased first."""
    ranking_text: dict[str, str] = Field(default_factory=dict)
    """Member -> 'a > b = c' (equal magnitudes are ties)."""
    separated: dict[str, SeparatedCount] = Field(default_factory=dict)
    note: str = ""
    n_subjects: int = 0


class SuiteTotals(_Record):
    members: int = 0
    subjects: int = 0
    runs: int = 0
    requests: int = 0
    calls: int = 0
    failures: int = 0
    unmeasured: int = 0


class SuiteSummary(_Record):
    format_version: int = Field(default=CURRENT, ge=1)
    """The file's layout (records/upgrade/suite.py); absent in files written before it: 1."""
    suite: SuiteInfo
    generated: str = ""
    command: str = ""
    members: list[SuiteMemberInfo] = Field(default_factory=list)
    subjects: list[str] = Field(default_factory=list)
    rows: list[SuiteRow] = Field(default_factory=list)
    verdict_matrix: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Member -> subject -> the run's overall verdict."""
    overall: str = ""
    """The suite's verdict over its non-sanity runs: FAIL, INCONCLUSIVE or PASS."""
    sanity: list[SanityCheck] = Field(default_factory=list)
    notices: list[str] = Field(default_factory=list)
    """Model licence notices of the member runs, each once."""
    triangulation: Triangulation = Field(default_factory=Triangulation)
    totals: SuiteTotals = Field(default_factory=SuiteTotals)

    def to_json(self) -> str:
        """The summary as `summary.json` holds it."""
        return json.dumps(self.model_dump(mode="json"), indent=2, allow_nan=False, default=str)

    @classmethod
    def read(cls, path: Path) -> SuiteSummary:
        return cls.read_raw(json.loads(path.read_text(encoding="utf-8")), file=str(path))

    @classmethod
    def read_raw(cls, raw: Any, *, file: str, **kw: Any) -> SuiteSummary:
        """A suite's summary.json as read, any earlier version upgraded (`records.upgrade`)."""
        return validated("suite", cls, raw, file=file, name="summary.json", **kw)[0]


__all__ = ["SanityCheck", "SeparatedCount", "SuiteInfo", "SuiteMemberInfo", "SuiteRow", "SuiteSummary",
           "SuiteTotals", "SuiteVerdict", "Triangulation", "TauPair"]
