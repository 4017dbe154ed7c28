"""What a method package registers besides its metrics: the method itself (its report
text, its detailed documentation and cross-run analyses), and formats of recorded
responses it can replay."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from biasaudit.records.json import DumpedJSONObject
from biasaudit.records.metric_result import PlotSpec, Table
from biasaudit.registry import METHODS, METRICS

if TYPE_CHECKING:
    from biasaudit.records.summary import RunSummary


@dataclass(frozen=True)
class MethodText:
    """What a method measures, in the words a reviewer needs (the report's method section).
    The full account (inputs, formulas, deviations from the paper, the tests that check
    it) is the package's `method.md`: `MethodDef.details()`."""

    name: str
    source: str
    computes: str
    reading: str


DETAILS_FILE = "method.md"
"""The detailed documentation of a method, a Markdown file in its package: sections
headed `## `, with no title and nothing the `MethodText` already says (docs/methods/<name>.md
shows both, the `MethodText` first)."""


def method_details(name: str, package: str | None = None) -> str:
    """The text of method `name`'s `method.md` (in `package`, by default the shipped
    package biasaudit.methods.<name>), stripped; "" when the package has none."""
    try:
        found = resources.files(package or f"biasaudit.methods.{name}").joinpath(DETAILS_FILE)
    except ModuleNotFoundError:
        return ""
    if not found.is_file():
        return ""
    return found.read_text(encoding="utf-8").strip()


class CrossRunSection(BaseModel):
    """A method's own analysis across runs (`biasaudit compare`), drawn generically."""

    model_config = ConfigDict(frozen=True)
    title: str
    note: str = ""
    tables: list[Table] = Field(default_factory=list)
    plots: list[PlotSpec] = Field(default_factory=list)
    data: DumpedJSONObject = Field(default_factory=dict)
    """The analysis's numbers, for compare.json (`records.json.json_object` turns a
    method's own typed numbers into this)."""


Runs = Sequence[tuple[Path, "RunSummary"]]


@dataclass(frozen=True)
class MethodDef:
    name: str
    text: MethodText
    metrics: tuple[str, ...] = ()
    cross_run: Callable[[Runs], CrossRunSection | None] | None = None
    """An analysis over several runs (e.g. token probability against NLI across models)."""
    package: str | None = None
    """The package holding the method's `method.md`; by default biasaudit.methods.<name>
    (a plugin method names its own)."""

    def details(self) -> str:
        """The method's detailed documentation (its `method.md`, Markdown), "" if none."""
        return method_details(self.name, self.package)


@dataclass(frozen=True)
class RecordingFormat:
    """A published file of recorded answers the `replay` backend can read."""

    matches: Callable[[Path, Any], bool]
    """Whether a parsed JSON document is in this format."""
    prompts: Callable[[Any], dict[str, list[str]]]
    """User prompt -> the recorded answers (samples) to it."""


def method_text(metric_name: str) -> MethodText:
    """The report text of the method a metric belongs to."""
    mdef = METRICS.get(metric_name)
    if mdef.method and mdef.method in METHODS:
        return METHODS.get(mdef.method).text
    return MethodText(name=mdef.title or metric_name, source="", computes="", reading="")


__all__ = ["DETAILS_FILE", "CrossRunSection", "MethodDef", "MethodText", "RecordingFormat", "Runs", "method_details",
           "method_text"]
