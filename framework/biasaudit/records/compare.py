"""The typed comparison of runs (`biasaudit compare`): what `comparison.runs.compare`
computes and `compare.json` holds, passed to the renderer, the command's printed table and
the API's `Comparison` through fields rather than string keys.

Dumped with `model_dump(mode="json")`, it gives the keys and values compare.json has
always had, in the same order (a paired group's `note` only when it has one). The
comparison's template and CSV files still receive that dump.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from biasaudit.records.json import DumpedJSONObject
from biasaudit.records.metric_result import PlotSpec, Table
from biasaudit.records.upgrade.compare import CURRENT


class _Record(BaseModel):
    # an unknown key is a file this version did not write: refused (records/upgrade/compare.py)
    model_config = ConfigDict(frozen=True, extra="forbid")


class CompareRun(_Record):
    """One compared run: its folder, its label and the overrides that set it apart."""

    path: str
    label: str
    """`<model> (<run folder name>)`: how the paired tests name the run."""
    model: str
    setting: str
    """The run's overrides that differ between the compared runs (the swept settings), as text."""
    overrides: list[str] = Field(default_factory=list)


class SideBySideRow(_Record):
    """A run's headline estimate of one metric (a row of compare.csv)."""

    audit: str
    model: str
    setting: str
    metric: str
    estimate: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    stimuli: int
    cells: int | None
    method: str
    reference: float | None
    overall: str
    run: str


class SideBySide(_Record):
    columns: list[str]
    rows: list[SideBySideRow] = Field(default_factory=list)


class RankingRow(_Record):
    """A run's place among the runs of one metric (a row of rankings.csv)."""

    audit: str
    metric: str
    rank: int | None
    """1 = least biased; equal distances share a rank; None: no value to rank."""
    run: str
    model: str
    setting: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    reference: float | None
    distance: float | None
    """Distance of the value from the reference (the value itself without one)."""


class RankingGroup(_Record):
    """The runs of one audit and metric, ranked by bias magnitude."""

    audit: str
    metric: str
    reference: float | None
    columns: list[str]
    rows: list[RankingRow] = Field(default_factory=list)
    order: str
    """What the ranking orders by, in words."""


class PairedRow(_Record):
    """Two runs of one metric compared: paired on their shared units, or not paired with
    the reason (a row of paired.csv; every column present, None where it does not apply)."""

    audit: str
    metric: str
    run_a: str
    run_b: str
    setting_a: str
    setting_b: str
    units: int | None = None
    stimuli: int | None = None
    test: str | None = None
    """`mcnemar-exact`, `mcnemar`, `wilcoxon`, `unpaired` or `refused`."""
    statistic: float | None = None
    p_value: float | None = None
    p_holm: float | None = None
    differs: bool | None = None
    difference: float | None = None
    diff_low: float | None = None
    diff_high: float | None = None
    scale: str | None = None
    note: str | None = None
    units_a: int | None = None
    units_b: int | None = None
    pairing: str | None = None


class PairedGroup(_Record):
    """The pairs of runs of one audit and metric (no rows, and a `note`, when it has more
    runs than `compare --max-paired-runs`)."""

    audit: str
    metric: str
    columns: list[str]
    rows: list[PairedRow] = Field(default_factory=list)
    note: str | None = None
    """Why there are no paired tests; left out of the dump when None."""

    @model_serializer(mode="wrap")
    def _note_only_when_given(self, handler: SerializerFunctionWrapHandler) -> Any:
        out = handler(self)
        if isinstance(out, dict) and out.get("note") is None:
            out.pop("note", None)
        return out


class StabilityRow(_Record):
    """The ranking of the subjects under one metric-parameter setting."""

    setting: str
    ranking: list[str]
    """Subjects, highest headline first."""
    values: dict[str, float]
    """Subject -> headline value."""
    tau_b: float | None
    """Kendall tau-b against the setting closest to the metric's defaults."""
    p_value: float | None
    default: bool
    top3_kept: bool


class SweepStability(_Record):
    """An audit's metric swept over its parameters: how stable the ranking of subjects is."""

    audit: str
    metric: str
    varying: list[str]
    rows: list[StabilityRow] = Field(default_factory=list)
    subjects: list[str] = Field(default_factory=list)


class CrossRunAnalysis(BaseModel):
    """A method's own analysis across runs (`methods.base.CrossRunSection`, as compared)."""

    # the fields every method's section has (comparison.runs keeps only these): a key
    # beyond them is refused, as in every record of the file
    model_config = ConfigDict(extra="forbid", frozen=True)
    title: str
    note: str = ""
    tables: list[Table] = Field(default_factory=list)
    plots: list[PlotSpec] = Field(default_factory=list)
    data: DumpedJSONObject = Field(default_factory=dict)
    """The analysis's numbers, laid out by the method (open JSON: each method its own)."""


class CompareResult(_Record):
    format_version: int = Field(default=CURRENT, ge=1)
    """The file's layout (records/upgrade/compare.py); absent in files written before it: 1."""
    runs: list[CompareRun] = Field(default_factory=list)
    side_by_side: SideBySide
    rankings: list[RankingGroup] = Field(default_factory=list)
    paired: list[PairedGroup] = Field(default_factory=list)
    sweep_stability: list[SweepStability] = Field(default_factory=list)
    analyses: dict[str, CrossRunAnalysis] = Field(default_factory=dict)
    """Method name -> its cross-run analysis, for the methods whose analysis applies."""


__all__ = ["CompareResult", "CompareRun", "CrossRunAnalysis", "PairedGroup", "PairedRow", "RankingGroup", "RankingRow",
           "SideBySide", "SideBySideRow", "StabilityRow", "SweepStability"]
