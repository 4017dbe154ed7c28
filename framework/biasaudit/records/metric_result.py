"""What a metric returns: estimates, per-cell estimates and spreads, reliability figures, validity flags,
item rows, and the tables and plots its report section shows. Data only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    FieldSerializationInfo,
    SerializerFunctionWrapHandler,
    field_serializer,
    model_serializer,
    model_validator,
)

from biasaudit.records.estimate import Estimate, Spread
from biasaudit.records.json import AS_JSON, NAN_AS_NULL, DumpedJSONObject, JSONValue

Scalar = str | bool | int | float
"""A stimulus field an item row carries (bool before int: a True field stays True)."""
Number = bool | int | float | str | None
"""A per-item value: an int stays an int (JSON `1`, not `1.0`); text read back from a
summary written by another version is kept as it is."""


class ValidityFlag(BaseModel):
    """Why (part of) a metric cannot be decided, or a warning worth showing beside it."""

    model_config = ConfigDict(frozen=True)
    kind: str
    """`valid_share`, `undefined`, `failed_requests`, `dominant_label`, `otherwise_share`,
    `abstain_share`, `judge_calibration`, `uncalibrated_judge`, `judge_below_chance`
    (against human labels), `nli_no_discrimination`, or a method's own."""
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
    rows: Annotated[Sequence[Sequence[JSONValue]], AS_JSON, NAN_AS_NULL]
    """The cells: JSON values (a value given in Python, such as a tuple, is kept in its JSON
    form, a list; a NaN is written as null). A sequence so that a method's rows of text or
    numbers are rows of JSON values too."""
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


ITEM_KEYS = frozenset({"stimulus", "stimulus_sha", "cell", "levels", "outcome", "diff"})
"""Keys of an item row that stimulus fields may not take over."""


class ItemRow(BaseModel):
    """One scored item (pair, triple, question...) of a metric, for cross-run analysis
    (`biasaudit compare`), items.csv and the report's "largest differences".

    In summary.json a row is one flat object, as it always was: `stimulus`, `cell` and
    `levels` (absent for metrics whose items sit outside the design's cells), `stimulus_sha`
    (absent when unknown), the stimulus's scalar fields, then the item's numbers: `outcome`,
    `diff` and any other per-item value of the method, in that order."""

    model_config = ConfigDict(frozen=True)
    stimulus: str
    cell: str | None = None
    """The design cell (None: the metric's items are not per cell)."""
    levels: dict[str, str] | None = None
    """Factor -> level of `cell`."""
    stimulus_sha: str | None = None
    """sha256 of the stimulus's fields (what `compare` pairs two runs' items on)."""
    fields: dict[str, Scalar | None] = Field(default_factory=dict)
    """The stimulus's scalar fields (never one of ITEM_KEYS)."""
    outcome: int | None = None
    """0/1: the unit behind a proportion headline (compared with McNemar's test)."""
    diff: int | float | None = None
    """A continuous per-item score (compared with a paired bootstrap and Wilcoxon's test)."""
    values: dict[str, Number] = Field(default_factory=dict)
    """The method's other per-item numbers (e.g. pivotal perplexity's `accurate`)."""

    @model_serializer(mode="plain")
    def _flat(self) -> dict[str, object]:
        # the flat object summary.json and items.csv have always held (column order included)
        out: dict[str, object] = {"stimulus": self.stimulus}
        if self.cell is not None:
            out["cell"] = self.cell
        if self.levels is not None:
            out["levels"] = dict(self.levels)
        if self.stimulus_sha is not None:
            out["stimulus_sha"] = self.stimulus_sha
        out.update(self.fields)
        if "outcome" in self.model_fields_set:
            out["outcome"] = self.outcome
        if "diff" in self.model_fields_set:
            out["diff"] = self.diff
        out.update(self.values)
        return out

    @model_validator(mode="before")
    @classmethod
    def _from_flat(cls, data: Any) -> Any:
        """Read a flat row back (summary.json): scalar keys before the first number are the
        stimulus's fields, those after `outcome`/`diff` the method's other numbers."""
        # the structured form (made in Python) has mappings there; a flat row's fields are scalars
        if not isinstance(data, dict) or isinstance(data.get("fields"), dict) or isinstance(data.get("values"), dict):
            return data
        # raw values, checked by the fields they are put in
        out: dict[str, object] = {}
        fields: dict[str, object] = {}
        values: dict[str, object] = {}
        numbers = False
        for k, v in data.items():
            if k in ITEM_KEYS:
                out[k] = v
                numbers = numbers or k in ("outcome", "diff")
            else:
                (values if numbers else fields)[k] = v
        return {**out, "fields": fields, "values": values}

    def value(self, key: str) -> Number:
        """A per-item number by name (`outcome`, `diff` or one of `values`)."""
        if key == "outcome":
            return self.outcome
        if key == "diff":
            return self.diff
        return self.values.get(key)


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
    params: DumpedJSONObject = Field(default_factory=dict)
    """The metric's parameters as run (its parameter model's dump, in JSON form)."""
    validity: list[ValidityFlag] = Field(default_factory=list)
    """Why (part of) the result cannot be decided: blocking flags make the verdicts on
    the estimates they name INCONCLUSIVE (metrics/validity.py)."""
    items: list[ItemRow] = Field(default_factory=list)
    """One row per scored item (`ItemRow`, made by `MetricContext.item`)."""
    detail: DumpedJSONObject = Field(default_factory=dict)
    """The method's own intermediate values that its report section draws from and that
    are neither estimates nor item rows (items that could not be scored, per-group score
    sets): JSON here, parsed back into the method's typed record by its `present`."""

    @field_serializer("estimates", mode="wrap")
    def _estimates_with_subsets(self, v: dict[str, Estimate], handler: SerializerFunctionWrapHandler,
                                info: FieldSerializationInfo) -> Any:
        # a metric's own estimates say which of its items they rest on (`Estimate.subset`)
        out = handler(v)
        return _with_subsets(out, v, info.mode)

    @field_serializer("cells", mode="wrap")
    def _cells_with_subsets(self, v: dict[str, dict[str, Estimate]], handler: SerializerFunctionWrapHandler,
                            info: FieldSerializationInfo) -> Any:
        out = handler(v)
        if isinstance(out, dict):
            for name, per in v.items():
                if name in out:
                    out[name] = _with_subsets(out[name], per, info.mode)
        return out


def _with_subsets(out: Any, v: dict[str, Estimate], mode: str) -> Any:
    if not isinstance(out, dict):
        return out
    for k, e in v.items():
        if e.subset is not None and isinstance(out.get(k), dict):
            out[k]["subset"] = e.subset.model_dump(mode="json" if mode == "json" else "python")
        if e.group is not None and isinstance(out.get(k), dict):
            out[k]["group"] = e.group.model_dump(mode="json" if mode == "json" else "python")
    return out
