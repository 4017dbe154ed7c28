"""What the viewer page embeds: one record per response, per estimate and per run. Data
only; `load.py` fills it from a run (or suite) folder, `page.py` writes it into the page.

Every text here came from a model, a stimulus file or a spec: the page treats it as data
(JSON in a non-executable script element, shown through `textContent`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from biasaudit.metrics.card import ViewScoring, ViewSentence, ViewToken


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ViewCode(_Record):
    """What one coding layer said about one response."""

    layer: str
    status: str
    """coded, abstain, not_applicable or failed."""
    code: str = ""
    """The label, or the value as text; empty when not coded."""
    source: str = ""
    why: str = ""
    """The coder's evidence (each judge's vote, the matched span, the reason), as text."""


class ViewOption(_Record):
    """One option of a next-token or choice distribution."""

    option: str
    prob: float | None = None
    logprob: float | None = None


class ViewRow(_Record):
    """One response: a plan item of one run, with its prompt, answer and codes."""

    run: int
    """Index into `ViewData.runs`."""
    cell: str
    levels: dict[str, str] = Field(default_factory=dict)
    """Factor -> level of the cell."""
    stimulus: str
    slot: str = ""
    variant: int = 0
    sample: int = 0
    groups: dict[str, str] = Field(default_factory=dict)
    """Breakdown field -> this stimulus's value (the metrics' `by` fields)."""
    fields: dict[str, str] = Field(default_factory=dict)
    """The stimulus's fields, as text (cut)."""
    prompt: str = ""
    answer: str = ""
    output: str = ""
    """A non-text output (scores, probabilities) as compact JSON, cut: shown only when
    neither `scoring` nor `options` reads it."""
    scoring: ViewScoring | None = None
    options: list[ViewOption] = Field(default_factory=list)
    """A next-token / choice / classifier distribution, most probable first."""
    status: str = "ok"
    error: str = ""
    codes: list[ViewCode] = Field(default_factory=list)
    items: dict[str, float | None] = Field(default_factory=dict)
    """Metric id -> the difference of the metric's item behind this response (the largest
    in absolute value when several), None when the item has no difference."""
    verdicts: list[str] = Field(default_factory=list)
    """The verdicts of the thresholds whose estimate this response feeds."""


class ViewEstimate(_Record):
    """One estimate of a run, and which responses are behind it (`rows`)."""

    run: int
    metric: str
    estimate: str
    headline: bool = False
    cell: str = ""
    """The cell of a per-cell estimate; empty when pooled over cells."""
    field: str = ""
    """The breakdown field of a per-group estimate or contrast."""
    factor: str = ""
    """The design factor of a per-level estimate (`<x>.<factor>.<level>`), when it is one."""
    values: list[str] = Field(default_factory=list)
    """The group(s) of `field`, or the level(s) of `factor`, it is computed over."""
    group: str = ""
    """Its subset in words (`field = group`, `field = a vs b`, `condition factor = level`), from
    the estimate's own record (`Estimate.subset`), never from its name."""
    rows: list[int] = Field(default_factory=list)
    """Indices into `ViewData.rows` of the responses behind it (those of its items that
    the page embeds): what its "responses" link shows."""
    items: int | None = None
    """The items of its metric it is computed from (None: the metric writes no items)."""
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None
    method: str = ""
    note: str = ""
    verdicts: list[str] = Field(default_factory=list)


class ViewRun(_Record):
    label: str
    """The member and subject in a suite; the audit name for a single run."""
    audit: str = ""
    run_id: str = ""
    model: str = ""
    overall: str = ""
    folder: str = ""
    """The run folder, relative to the folder given (`.` for a single run)."""
    metrics: list[str] = Field(default_factory=list)
    metrics_with_items: list[str] = Field(default_factory=list)
    layers: list[str] = Field(default_factory=list)
    cells: list[str] = Field(default_factory=list)
    group_fields: list[str] = Field(default_factory=list)
    responses: int = 0
    """Responses the run has (responses.jsonl lines)."""
    shown: int = 0
    """Responses embedded in the page."""


class ViewData(_Record):
    kind: str
    """`run` or `suite`."""
    title: str
    version: str = ""
    runs: list[ViewRun] = Field(default_factory=list)
    rows: list[ViewRow] = Field(default_factory=list)
    estimates: list[ViewEstimate] = Field(default_factory=list)
    notices: list[str] = Field(default_factory=list)
    """What the page leaves out or could not read (shown above the tables)."""
    page_size: int = 50
    review: list[ViewRunReview] = Field(default_factory=list)
    """Per run (the index of `runs`): what the page needs to write a review sheet
    (`review.py`); empty for a run it cannot write one for."""


# -- review in the page (review.py, review.js) -------------------------------------------


class ViewReviewLayer(_Record):
    """A label layer a reviewer can label with."""

    name: str
    labels: list[str]
    legend: str
    """The sheet's `allowed_labels` cell (each label with its meaning)."""
    coded: int = 0
    """Units the layer coded in the run (the sampling record's population)."""


class ViewRowReview(_Record):
    """One embedded response as a row of a review sheet and a unit of its record."""

    row: int
    """Index into `ViewData.rows`."""
    unit: str
    key: str
    answer_sha256: str
    shown_sha256: str
    prompt_sha256: str
    answer: str | None = None
    """The sheet's answer when it is not the card's (None: the card's `answer`)."""
    prompt: str | None = None
    """The sheet's prompt when it is not the card's (None: the card's `prompt`)."""


class ViewRunReview(_Record):
    run: int
    """Index into `ViewData.runs`."""
    run_id: str = ""
    run_dir: str = ""
    spec_sha256: str = ""
    format: str = ""
    """The sampling record's format (`coding.human_sheet.FORMAT`)."""
    format_version: int = 0
    """The sampling record's layout version (`records.annotation.FORMAT_VERSION`)."""
    layers: list[ViewReviewLayer] = Field(default_factory=list)
    rows: list[ViewRowReview] = Field(default_factory=list)
    """The run's embedded responses a reviewer can label (answered, with text)."""
    note: str = ""
    """Why the run cannot be reviewed in the page, or what it leaves out."""


ViewData.model_rebuild()

__all__ = ["ViewCode", "ViewData", "ViewEstimate", "ViewOption", "ViewReviewLayer", "ViewRow", "ViewRowReview",
           "ViewRun", "ViewRunReview", "ViewScoring", "ViewSentence", "ViewToken"]
