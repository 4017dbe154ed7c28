"""What a metric returns: estimates, per-cell estimates and spreads, reliability figures, validity flags,
item rows, and the tables and plots its report section shows. Data only."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from biasaudit.records.estimate import Estimate, Spread


class ValidityFlag(BaseModel):
    """Why (part of) a metric cannot be decided, or a warning worth showing beside it."""

    model_config = ConfigDict(frozen=True)
    kind: str
    """`valid_share`, `undefined`, `failed_requests`, `dominant_label`, `otherwise_share`,
    `abstain_share`, `judge_calibration`, `uncalibrated_judge`."""
    message: str
    blocking: bool = True
    """True: the verdicts on the affected estimates are INCONCLUSIVE."""
    layer: str | None = None
    """The coding layer the flag is about, if any."""
    estimates: list[str] = Field(default_factory=list)
    """Estimate names the flag affects (empty: every estimate of the metric)."""

    def affects(self, estimate: str) -> bool:
        return not self.estimates or estimate in self.estimates


class Table(BaseModel):
    model_config = ConfigDict(frozen=True)
    title: str
    columns: list[str]
    rows: list[list[Any]]
    note: str = ""
    total_rows: int | None = None
    """Rows before the table was cut at the report's row limit (None: not cut)."""

    @classmethod
    def cut(cls, title: str, columns: list[str], rows: list[list[Any]], limit: int, note: str = "",
            full: str = "items.csv and responses.jsonl") -> Table:
        """A table of at most `limit` rows that says, when it is cut, how many rows were
        left out and where every row is."""
        if len(rows) <= limit:
            return cls(title=title, columns=columns, rows=rows, note=note)
        said = (f"Showing {limit} of {len(rows)} rows (report.max_rows); {len(rows) - limit} left out here. "
                f"Every row is in {full} beside this report.")
        return cls(title=title, columns=columns, rows=rows[:limit], note=f"{note} {said}".strip(),
                   total_rows=len(rows))


class PlotSpec(BaseModel):
    """Data for a plot; the report renders it (the metric never draws)."""

    model_config = ConfigDict(frozen=True)
    kind: str
    """`interval_bars` (labels + estimates), `histogram` (values) or `multi_histogram`
    (series)."""
    title: str
    xlabel: str = ""
    ylabel: str = ""
    labels: list[str] = Field(default_factory=list)
    estimates: list[Estimate] = Field(default_factory=list)
    values: list[float] = Field(default_factory=list)
    series: dict[str, list[float | None]] = Field(default_factory=dict)
    """For `multi_histogram`: named value lists drawn over each other; `lines`: one line each."""
    points: list[list[float | None]] = Field(default_factory=list)
    """For `scatter`: [x, y, size] per label."""
    matrix: list[list[float | None]] = Field(default_factory=list)
    """For `heatmap`: rows x columns over `labels`."""
    vmin: float | None = None
    vmax: float | None = None
    reference: float | None = None
    """A reference line (e.g. 50 = parity)."""
    alt: str = ""


class ReliabilityItem(BaseModel):
    """One number that says how far the measurement itself can be trusted (coding
    agreement, ill-formed or refused answers, layer disagreement...)."""

    model_config = ConfigDict(frozen=True)
    name: str
    estimate: Estimate
    note: str = ""


class MetricResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    id: str = ""
    name: str
    title: str = ""
    headline: str
    """Key of the headline estimate in `estimates`."""
    estimates: dict[str, Estimate]
    cells: dict[str, dict[str, Estimate]] = Field(default_factory=dict)
    """Estimate key -> cell id -> per-cell estimate (for `over: worst_cell`)."""
    spread: dict[str, Spread] = Field(default_factory=dict)
    """Estimate key -> spread of its per-cell values across prompt conditions."""
    reliability: list[ReliabilityItem] = Field(default_factory=list)
    reference: float | None = None
    reference_note: str = ""
    tables: list[Table] = Field(default_factory=list)
    plots: list[PlotSpec] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    params: dict[str, Any] = Field(default_factory=dict)
    validity: list[ValidityFlag] = Field(default_factory=list)
    """Why (part of) the result cannot be decided: blocking flags make the verdicts on
    the estimates they name INCONCLUSIVE (metrics/validity.py)."""
    items: list[dict[str, Any]] = Field(default_factory=list)
    """Per-item values for cross-run analysis (`biasaudit compare`), made by
    `MetricContext.item`: `stimulus`, `cell`, `levels` (factor -> level), `stimulus_sha`
    (content hash of the stimulus's fields: what `compare` pairs on), the stimulus's
    scalar fields, and the item's numbers: `outcome` (0/1, the unit behind a proportion
    headline, compared with McNemar's test) and/or `diff` (a continuous per-item score,
    compared with a paired bootstrap and Wilcoxon's test)."""
