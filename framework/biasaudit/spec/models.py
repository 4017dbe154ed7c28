"""Pydantic models of the audit spec language (v1) and of the composed run configuration.

A spec file holds the audit sections (audit, stimuli, factors, design, probe, coding,
metrics, thresholds, report). Hydra merges it with run-time groups (model, embedder,
runtime, report) into one dict, validated here as `AuditConfig`. Every model forbids
unknown keys, so a typo is an error, not a silently ignored setting.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from biasaudit.spec.model_configs import ModelConfig
from biasaudit.spec.registered_union import RegisteredUnion
from biasaudit.spec.strict import Strict

PROBE_KINDS = (
    "generate",
    "sequence_logprob",
    "pseudo_loglik",
    "next_token",
    "classify_nli",
    "embed",
)
ProbeKind = Literal[
    "generate", "sequence_logprob", "pseudo_loglik", "next_token", "classify_nli", "embed"
]


class SignOff(Strict):
    """The auditor's own account, printed in the report's scope, limitations and sign-off
    block (as text: markup is escaped)."""

    scope: str = Field(default="", max_length=5000)
    """What the audit covers and what it does not (model use, populations, languages),
    shown in the report's sign-off block; "not stated" when empty. At most 5000 characters."""
    limitations: str = Field(default="", max_length=5000)
    """Known limits of this audit's evidence (data coverage, coder validity, sample size),
    shown in the report's sign-off block; "not stated" when empty. At most 5000 characters."""
    auditor: str = Field(default="", max_length=200)
    """Who is responsible for the audit (a person or a team), shown in the sign-off block;
    e.g. `audit.auditor="Jane Doe"` on the command line. At most 200 characters."""
    date: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$", json_schema_extra={"format": "date"})
    """The sign-off date, an ISO date (`2026-01-31`); not the run's date, which the report
    records on its own."""

    @field_validator("date", mode="before")
    @classmethod
    def _iso_date(cls, v: Any) -> Any:
        import datetime as dt

        if isinstance(v, dt.datetime):
            raise ValueError("give a date without a time, e.g. 2026-01-31")
        if isinstance(v, dt.date):  # YAML reads an unquoted 2026-01-31 as a date
            return v.isoformat()
        if isinstance(v, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", v):
            try:
                dt.date.fromisoformat(v)
            except ValueError:
                raise ValueError(f"{v!r} is not a calendar date (YYYY-MM-DD)") from None
        return v


class AuditMeta(SignOff):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=100)
    """Short identifier; names the report folder (at most 100 characters: folder names
    are limited to 255 bytes, and sweep folders add the model name)."""
    method: str
    """Method family (e.g. `token_probability`); drives defaults and report sections."""
    description: str = ""
    """What the audit asks, in a sentence or two (shown in the report)."""
    version: str = "1"
    """The spec's own version label, recorded in the report."""


class SampleSpec(Strict):
    n: int = Field(gt=0)
    """Number of stimuli to keep (all of them when the data has fewer)."""
    seed: int = Field(default=0, ge=0)
    """Seed of the random sample (the same seed keeps the same stimuli); 0 or more."""


class GenerateSpec(Strict):
    """Stimuli made from templates: one row per combination of the `vars` lists."""

    vars: dict[str, list[Any]]
    """Name -> list of values; a value may be a mapping, whose keys become `<name>.<key>`."""
    fields: dict[str, str]
    """Field name -> Jinja template over the vars."""


class StimuliSpec(Strict):
    source: str | None = None
    """Data file, relative to the spec file (or absolute)."""
    inline: list[dict[str, Any]] | None = None
    """Stimuli written in the spec itself, one mapping each."""
    generate: GenerateSpec | None = None
    """Stimuli generated from templates (e.g. subjects x identities x predicates)."""
    format: str = "csv"
    """Adapter name: `csv`, `jsonl`, or a published format such as `crows_pairs`."""
    fields: dict[str, str] = Field(default_factory=dict)
    """Canonical field name -> column name in the file."""
    id_field: str | None = None
    """Column used as the stimulus id (row number when absent)."""
    where: dict[str, list[str | int | float | bool]] = Field(default_factory=dict)
    """Keep only stimuli whose field has one of the listed values (compared as text),
    e.g. `{bias_type: [gender, age]}`; applied before `sample`."""
    sample: SampleSpec | None = None
    """Keep a seeded random sample of `n` stimuli (after `where`)."""

    @model_validator(mode="after")
    def _one_source(self) -> StimuliSpec:
        given = [x for x in (self.source, self.inline, self.generate) if x is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of `source` (a file), `inline` (a list) or `generate`")
        return self


class LevelSpec(Strict):
    template: str | None = None
    """User-message text this level contributes (Jinja, sees stimulus fields and vars)."""
    templates: list[str] | None = None
    """Paraphrases of `template`; every stimulus is asked under each."""
    system: str | None = None
    """System-prompt text this level contributes."""
    vars: dict[str, Any] = Field(default_factory=dict)
    """Extra template variables set by this level."""

    @model_validator(mode="after")
    def _one_template(self) -> LevelSpec:
        if self.template is not None and self.templates is not None:
            raise ValueError("give `template` or `templates`, not both")
        if self.templates is not None and not self.templates:
            raise ValueError("`templates` is empty")
        return self

    def variants(self) -> list[str | None]:
        if self.templates is not None:
            return list(self.templates)
        return [self.template]


class DesignSpec(Strict):
    kind: Literal["full", "oat", "explicit", "fractional"] = "full"
    """How the factors' levels combine into cells: `full` (every combination), `oat` (one factor
    at a time from `baseline`), `explicit` (the listed `cells`) or `fractional` (a sub-grid)."""
    baseline: dict[str, str] | None = None
    """For `oat`: the level of every factor at the baseline cell."""
    cells: list[dict[str, str]] | None = None
    """For `explicit`: the list of cells, each a level for every factor."""
    levels: dict[str, list[str]] | None = None
    """For `fractional`: a named sub-grid, the levels kept per factor (every combination
    of them is a cell); factors not listed stay at `baseline`."""

    @model_validator(mode="after")
    def _kind_fields(self) -> DesignSpec:
        if self.kind == "oat" and self.baseline is None:
            raise ValueError("design kind `oat` needs `baseline`")
        if self.kind == "explicit" and not self.cells:
            raise ValueError("design kind `explicit` needs a non-empty `cells` list")
        if self.kind == "fractional" and not self.levels:
            raise ValueError("design kind `fractional` needs `levels` (factor -> levels kept)")
        return self


class ProbeSpec(Strict):
    kind: ProbeKind
    """What is asked of the model: `generate` (a chat answer), `sequence_logprob` or
    `pseudo_loglik` (log-probs of texts), `next_token` (the next-token distribution),
    `classify_nli` (entailment probabilities) or `embed`."""
    inputs: dict[str, str] | None = None
    """For scoring probes: slot name -> text template scored per stimulus and cell."""
    prompt: str | None = None
    """For chat probes: user-message template (defaults to the levels' templates joined)."""
    hypothesis: str | None = None
    """For `classify_nli`: the hypothesis template; `inputs` give the premises."""
    system: str | None = None
    """For chat probes: system-message template (joined with the levels' `system` texts)."""
    samples: int = Field(default=1, ge=1)
    """Answers drawn per request (more than 1 needs `temperature` > 0 to differ)."""
    temperature: float = Field(default=0.0, ge=0.0)
    """Sampling temperature of `generate` (0: greedy)."""
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    """Nucleus-sampling mass of `generate` (1: off)."""
    max_tokens: int = Field(default=128, ge=1)
    """Longest answer of `generate`, in tokens (at most `runtime.limits.max_tokens`)."""
    top_k: int = Field(default=20, ge=1)
    """For `next_token`: size of the returned distribution."""

    @model_validator(mode="after")
    def _inputs_for_scoring(self) -> ProbeSpec:
        if self.kind in ("sequence_logprob", "pseudo_loglik", "classify_nli") and not self.inputs:
            raise ValueError(f"probe kind `{self.kind}` needs `inputs` (slot -> template)")
        if self.kind == "classify_nli" and not self.hypothesis:
            raise ValueError("probe kind `classify_nli` needs `hypothesis` (a template)")
        return self


class CalibrationSpec(Strict):
    """A labelled control set for `biasaudit calibrate`: responses with gold labels."""

    source: str
    """csv, relative to the spec file."""
    text: str = "response"
    """Column with the response text the layer codes."""
    gold: str = "label"
    """Column with the gold label."""
    map: dict[str, str] = Field(default_factory=dict)
    """Gold label -> the layer's label (identity for labels not listed)."""
    levels: dict[str, str] = Field(default_factory=dict)
    """Factor -> the level the control responses answer (for per-level rules and questions)."""
    vars: dict[str, str] = Field(default_factory=dict)
    """Template variable -> the control set's column that holds it, for files whose
    column names are not the layer's variables (CLEAR-Bias: `{statement: PROMPT}`)."""


class CodingLayerSpec(BaseModel):
    """A coding layer. The keys below are common to every layer; the other keys are the
    coder's options, validated by the coder's own model."""

    model_config = ConfigDict(extra="allow", frozen=True, use_attribute_docstrings=True, strict=True)
    coder: str
    """A registered coder: rules, choice, judge_panel, classifier, claims, embedding..."""
    input: str = "response"
    """`response` (the answer: a generation's text, any other output as JSON),
    `response.<field>` (a field of the answer), or `layer:<name>` (another layer's output:
    its text, or its label)."""
    labels: list[str] | None = None
    """The label set (default: the one the coder's options imply)."""
    label_meanings: dict[str, str] | None = None
    """Each label's meaning in a few words (`{E: endorses the statement, ...}`): the human
    review sheet (`biasaudit annotate export`) prints it beside the label, so a reviewer
    need not guess what `QE` stands for. Keys must be labels of `labels`."""
    endorse: list[str] | None = None
    """Labels read as endorsing: with it, reliability pairs report IR and DNI, and
    metrics such as BiAxisAudit's BER read the layer as endorse / not endorse."""
    fallback: str | None = None
    """A layer that codes the units this one abstains on (counted and reported)."""
    strip: str | None = None
    """Remove the text span another layer matched (e.g. the selection marker) before coding."""
    calibration: CalibrationSpec | None = None
    """A labelled control set for `biasaudit calibrate`."""
    expect_dominant: bool = False
    """This layer is expected to give one label to nearly every unit (e.g. a refusal
    detector on a model that seldom refuses): its dominance is reported but does not make
    the verdicts it feeds INCONCLUSIVE."""
    require_calibration: bool = False
    """The verdicts this layer feeds are INCONCLUSIVE unless its judges have a stored
    `biasaudit calibrate` result that shows them better than chance."""

    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})

    @model_validator(mode="after")
    def _meanings_of_labels(self) -> CodingLayerSpec:
        unknown = sorted(set(self.label_meanings or {}) - set(self.labels or self.label_meanings or {}))
        if unknown:
            raise ValueError(f"`label_meanings` names labels not in `labels`: {', '.join(unknown)}")
        return self


class ReliabilityPairSpec(Strict):
    """Two layers compared over one label space."""

    pair: tuple[str, str] = Field(strict=False)  # YAML gives a list: strict would want a tuple
    """The two coding layers compared, by name."""
    map: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Layer name -> {its label: shared label}, mapping both onto one label space."""


class MetricSpec(BaseModel):
    """A metric by registered name; its parameters are validated by the metric."""

    model_config = ConfigDict(extra="allow", frozen=True, use_attribute_docstrings=True, strict=True)
    name: str
    """A registered metric (`biasaudit list metrics`); its other keys are its parameters."""
    id: str | None = None
    """Name used in thresholds and reports (defaults to `name`)."""

    @property
    def key(self) -> str:
        return self.id or self.name

    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class EquivalenceBand(Strict):
    """An equivalence margin (TOST): the band of values counted as fair."""

    low: float = Field(allow_inf_nan=False)
    """Lowest value inside the margin."""
    high: float = Field(allow_inf_nan=False)
    """Highest value inside the margin (larger than `low`)."""

    @model_validator(mode="after")
    def _order(self) -> EquivalenceBand:
        if not self.low < self.high:
            raise ValueError("`equivalence.low` must be smaller than `equivalence.high`")
        return self


class ThresholdSpec(Strict):
    metric: str
    """`<metric id>` for its headline estimate, or `<metric id>.<estimate name>`."""
    min: float | None = Field(default=None, allow_inf_nan=False)
    """Lowest passing value (the estimate's whole interval must be at or above it to PASS)."""
    max: float | None = Field(default=None, allow_inf_nan=False)
    """Finite; inside the estimate's range where the metric declares one (checked against
    the metric before any model call)."""
    over: Literal["pooled", "worst_cell", "spread"] = "pooled"
    """`pooled`: the estimate over all cells; `worst_cell`: every cell must pass, the
    worst one is reported; `spread`: the range of the per-cell values across prompt
    conditions (designs with factors)."""
    adjust: Literal["none", "holm", "bonferroni"] = "none"
    """With `over: worst_cell`: judge each cell's interval adjusted for the number of
    cells (`bonferroni`: level 1 - alpha/k each; `holm`: step-down from the cell furthest
    out). `none` (the default): each cell at its own level."""
    refs: list[str] = Field(default_factory=list)
    """Clause references, e.g. `nist-ai-rmf:measure-2.11`."""
    note: str = ""
    """Free text shown beside the verdict in the report."""
    sanity: bool = False
    """A check that the method works on this model (a task whose answer is known), not a
    bias threshold: the report states it as the sanity check passed or failed for the
    model, and a failure as the model not meeting the method's premise."""
    equivalence: EquivalenceBand | None = None
    """Instead of `min`/`max`: an equivalence margin `{low, high}` (TOST). PASS only when
    the 1 - 2 alpha interval (90% beside a 95% one) lies within the band ("equivalence
    shown": fair within the margin); FAIL when the 1 - alpha interval lies wholly outside
    it; INCONCLUSIVE otherwise. A `min`/`max` threshold's PASS says only that no deviation
    beyond the bound was shown."""
    share_test: Literal["score", "exact"] = "score"
    """How a share counted once per stimulus (an estimate with a plain Wilson interval) is
    decided. `score` (the default): on its Wilson interval (the score test), whose error
    rate with the truth on a bound can exceed nominal at some n by discreteness (e.g. 7.75%
    for equivalence in [0.1, 0.3] at n = 69; docs/statistics.md). `exact`: exact binomial
    tests, i.e. the Clopper-Pearson interval (an exact one-sided binomial test per bound;
    `binom_tost` for `equivalence`), at most the nominal rate at every n, at some cost in
    power. Clustered shares (several answers per stimulus), means and contrasts are judged
    on their own intervals either way."""

    @property
    def band(self) -> tuple[float | None, float | None]:
        """(low, high) the verdict is judged against: the equivalence band or (min, max)."""
        if self.equivalence is not None:
            return self.equivalence.low, self.equivalence.high
        return self.min, self.max

    @model_validator(mode="after")
    def _bound(self) -> ThresholdSpec:
        if self.equivalence is not None:
            if self.min is not None or self.max is not None:
                raise ValueError("give either `equivalence: {low, high}` or `min`/`max`, not both")
            if self.adjust != "none":
                raise ValueError("`adjust` does not apply to `equivalence`: every cell must show equivalence "
                                 "at 1 - 2 alpha (an intersection-union test needs no adjustment)")
            return self
        if self.min is None and self.max is None:
            raise ValueError("a threshold needs `min`, `max` or both (or `equivalence: {low, high}`)")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError("`min` is larger than `max`")
        if self.adjust != "none" and self.over != "worst_cell":
            raise ValueError("`adjust` applies to `over: worst_cell` only")
        return self


ReportFormat = Literal["html", "md", "json", "pdf"]


def _all_formats() -> list[ReportFormat]:
    return ["html", "md", "json"]


class ReportSpec(Strict):
    title: str | None = None
    """Report title (default: the audit's name)."""
    formats: list[ReportFormat] = Field(default_factory=_all_formats)
    """Report formats written besides summary.json and the csv files: html, md, json, pdf."""
    max_rows: int = Field(default=25, ge=1)
    """Rows shown in per-item tables (the full data is in responses.jsonl)."""
    crosswalk: str | None = None
    """An extra crosswalk YAML (reference key -> clause) merged over conf/crosswalk.yaml."""
    paper: Literal["a4", "letter"] = "a4"
    """Page size of the PDF report: `a4` (210 x 297 mm) or `letter` (8.5 x 11 in)."""


Relation = Literal["entailment", "neutral", "contradiction"]


class BaseNLIConfig(Strict):
    """What every NLI classifier's config has (conf group `nli/`): the registered kind
    that answers `classify_nli` requests, and a name. Each kind (`biasaudit list nli`)
    adds its own settings in its own config model, registered with it in `NLI_KINDS`."""

    backend: str
    """The NLI classifier kind: `hf_nli` (a sequence-classification NLI model), `llm_nli`
    (a chat model asked), or one a plug-in registers."""
    name: str
    """Short label used in reports."""

    def models(self) -> list[ModelConfig]:
        """The chat models this config names (their keys are secrets, their notices
        shown); none by default."""
        return []


def _nli_configs() -> tuple[type[BaseModel], ...]:
    from biasaudit.registry import NLI_KINDS

    return tuple(kind.config for _, kind in NLI_KINDS.items())


NLIConfig = Annotated[BaseNLIConfig, RegisteredUnion(_nli_configs)]
"""How `classify_nli` requests are answered: the registered NLI classifier's own config
model, chosen by its `backend` key."""


class JudgeSpec(Strict):
    name: str
    """The judge's name (layers pick judges by it)."""
    model: ModelConfig | None = None
    """The judge's chat model (None: the model under test)."""
    prompt: str
    """Jinja template (the rubric) over the stimulus fields, level vars and `text` (the
    coded input); a `judge_panel` layer's `rubric` replaces it."""


class JudgePanelConfig(Strict):
    """A panel of judges (conf group `judge/`), used by `judge_panel` coding layers."""

    judges: list[JudgeSpec] = Field(min_length=1)
    """The judges, each a name, a chat model and a prompt."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Label -> the answer word a judge gives for it (read by one next-token choice); a
    layer's `answers` replaces it."""


class BaseEmbedderConfig(Strict):
    """What every embedder's config has (conf group `embedder/`): the registered kind and
    a name. Each kind adds its own settings in its own config model (`EMBEDDERS`)."""

    backend: str
    """Embedding kind (`biasaudit list embedders` shows the configs); a config without it
    selects the kind registered as the default."""
    name: str
    """Short label used in reports (and part of the embedding cache's key)."""


def _embedder_configs() -> tuple[type[BaseModel], ...]:
    from biasaudit.registry import EMBEDDERS

    return tuple(kind.config for _, kind in EMBEDDERS.items())


def _default_embedder() -> str | None:
    from biasaudit.registry import EMBEDDERS

    return next((name for name, kind in EMBEDDERS.items() if kind.default), None)


EmbedderConfig = Annotated[BaseEmbedderConfig, RegisteredUnion(_embedder_configs, _default_embedder)]
"""The sentence encoder: the registered embedder's own config model, chosen by `backend`."""


class RuntimeLimits(Strict):
    """Bounds on what a spec can make biasaudit build or wait for. A spec cannot set
    `runtime`; the operator raises these on the command line (`runtime.limits.<key>=...`)."""

    max_cells: int = Field(default=100_000, ge=1)
    """Cells a design may expand to (counted before expanding)."""
    max_plan_items: int = Field(default=2_000_000, ge=1)
    """Plan items (cells x stimuli x paraphrases x slots x samples) of one run."""
    max_stimuli: int = Field(default=1_000_000, ge=1)
    """Rows read from a data file or made by a generator (counted before generating)."""
    max_data_bytes: int = Field(default=256 * 2**20, ge=1)
    """Largest data file read (stimuli, control sets)."""
    max_tokens: int = Field(default=8192, ge=1)
    """Largest `probe.max_tokens` (tokens generated per answer)."""
    template_chars: int = Field(default=1_000_000, ge=1)
    """Longest text a Jinja template may build."""
    template_steps: int = Field(default=1_000_000, ge=1)
    """Loop iterations plus calls per template render."""
    template_seconds: float = Field(default=5.0, gt=0, allow_inf_nan=False)
    """Wall-clock seconds per template render."""
    http_response_bytes: int = Field(default=16 * 2**20, ge=1)
    """Largest HTTP response body read from a model server (after decompression)."""
    max_coding_chars: int = Field(default=20_000, ge=1)
    """Longest input a coding layer's coder reads (an answer, a field, another layer's
    text): longer inputs are cut to this many characters, flagged in the code's detail
    (`input_truncated`) and counted in the report."""


class SequentialConfig(Strict):
    """Sequential stopping (docs/statistics.md, "Sequential stopping"): the run takes its
    stimuli in a seeded random order, judges its thresholds every `look_every` stimuli
    with group-sequential (Lan-DeMets alpha-spending) intervals, and stops once every
    threshold is decided. Off while `look_every` is null."""

    look_every: int | None = Field(default=None, ge=1)
    """Stimuli between two looks (null: no sequential stopping, every stimulus is run)."""
    spending: Literal["obrien_fleming", "pocock"] = "obrien_fleming"
    """How the error rate is spent over the looks: `obrien_fleming` (strict early, close to
    the fixed design's interval at the end) or `pocock` (about even over the looks: earlier
    stops, a wider interval at the last look)."""
    max_looks: int | None = Field(default=None, ge=1, le=200)
    """At most this many looks (the looks after the (max_looks - 1)-th are merged into the
    last, at the planned number of stimuli); null: every `look_every` stimuli, up to 200
    looks (raise `look_every` beyond that)."""


class BatchConfig(Strict):
    """Provider batch APIs (OpenAI's Batch API, Anthropic's Message Batches): requests are
    written as the provider's batch file, submitted, polled and their results stored as
    each batch ends, at the provider's batch price (about half) within its completion
    window. Batch ids are kept in the cache, so a killed run resumes by polling the same
    batches, never by submitting again (docs/models-and-servers.md, "Batch APIs")."""

    enabled: bool = False
    """Send the model's requests through its provider's batch API (off: one HTTP request
    per answer, as always)."""
    max_requests: int = Field(default=50_000, ge=1, le=100_000)
    """Requests per batch at most (the provider's own limit is applied too: OpenAI 50,000,
    Anthropic 100,000)."""
    max_bytes: int = Field(default=200_000_000, ge=1_000, le=256_000_000)
    """Bytes of one batch's request file at most (OpenAI 200 MB, Anthropic 256 MB)."""
    poll_s: float = Field(default=30.0, gt=0, le=3600, allow_inf_nan=False)
    """Seconds between the first status polls; the wait grows by half each time up to
    `max_poll_s`."""
    max_poll_s: float = Field(default=600.0, gt=0, le=3600, allow_inf_nan=False)
    """Longest wait between two polls."""
    max_wait_s: float = Field(default=90_000.0, gt=0, allow_inf_nan=False)
    """How long one run waits for its batches (default 25 h: a 24 h window and its
    finalizing). Past it the run stops; the batches stay recorded and the same command
    collects them later, without submitting again."""
    retry: int = Field(default=1, ge=0, le=10)
    """How many times a request that failed for a passing reason (the batch expired or was
    cancelled, 429, 5xx) is put into a new batch; 0: recorded as failed at once. A request
    the provider refused (4xx) is recorded as failed at once, as without batches."""
    completion_window: Literal["24h"] = "24h"
    """OpenAI's completion window (the only one it offers)."""
    max_result_bytes: int = Field(default=1_073_741_824, ge=1_000)
    """Bytes read at most from one batch's results (its output and error files); each line
    is bounded by `runtime.limits.http_response_bytes`."""
class BudgetConfig(Strict):
    """A spending limit on the model under test's calls (docs/models-and-servers.md,
    "Budgets"): the run stops before a call could take it past any limit set, leaving a
    resumable run marked `stopped: budget`. Off while every limit is null."""

    money: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Most money, in `model.price`'s currency (needs `model.price`)."""
    tokens: int | None = Field(default=None, gt=0)
    """Most tokens, input and output together."""
    input_tokens: int | None = Field(default=None, gt=0)
    """Most input (prompt) tokens."""
    output_tokens: int | None = Field(default=None, gt=0)
    """Most output (completion) tokens."""

    @property
    def active(self) -> bool:
        return any(v is not None for v in (self.money, self.tokens, self.input_tokens, self.output_tokens))


class RayConfig(Strict):
    """Where the shards of one sharded audit (`runtime.shards`) run on Ray, and with what.
    Operator-only like all of `runtime` (a spec cannot set it): `address` says which
    cluster runs the audit's model calls."""

    address: str | None = None
    """An existing cluster (`auto`, `ray://head:10001`, `head:6379`); null starts a local
    one on this machine (dashboard off, `object_store_memory` bytes of object store)."""
    num_cpus: int | None = Field(default=None, ge=1)
    """CPUs of the local cluster (null: Ray's default, every core); ignored with `address`."""
    object_store_memory: int = Field(default=200_000_000, ge=78_643_200)
    """Bytes of the local cluster's object store (shards pass only request keys and
    counts through it; Ray's floor is 75 MiB); ignored with `address`."""
    shard_cpus: float = Field(default=1.0, gt=0, allow_inf_nan=False)
    """CPUs Ray reserves for each shard task."""
    shard_gpus: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    """GPUs Ray reserves for each shard task (1: one local model per GPU)."""
    max_retries: int = Field(default=0, ge=0, le=10)
    """Times Ray restarts a shard whose worker died; a restarted shard resumes from its own
    cache file. 0: the run fails once the other shards have finished, and the same command
    resumes the dead shard alone."""


class SubmititConfig(Strict):
    """Where the shards of one sharded audit run with `runtime.shard_backend=submitit`: a
    SLURM array through submitit (or submitit's local executor: one process per shard on
    this machine, SLURM's code path without SLURM). Operator-only, like all of `runtime`."""

    cluster: Literal["slurm", "local"] = "slurm"
    """`slurm`: one array job per shard; `local`: subprocesses on this machine."""
    folder: str | None = None
    """submitit's folder for the jobs' inputs, logs and results, on a file system the nodes
    share (null: `<cache>.<plan>.shard-jobs/` beside the cache)."""
    timeout_min: int = Field(default=1440, ge=1)
    """Minutes a shard job may run."""
    partition: str | None = None
    """SLURM partition (null: the cluster's default)."""
    cpus_per_task: int = Field(default=1, ge=1)
    """CPUs per shard job."""
    gpus_per_node: int = Field(default=0, ge=0)
    """GPUs per shard job (1: one local model per GPU)."""
    mem_gb: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Memory per shard job in GB (null: the cluster's default)."""


class PreflightConfig(Strict):
    """Checks made before a run's first model call (docs/planning-an-audit.md, "What a run
    will cost")."""

    resources: Literal["refuse", "warn"] = "refuse"
    """A run whose estimated disk (run folder, cache growth) or peak memory exceeds what
    the machine has free: `refuse` stops it with the number and the setting that reduces
    it (exit 2); `warn` says so and runs anyway (the operator knows better)."""


class RuntimeConfig(Strict):
    batch_size: int = Field(default=8, ge=1)
    """Rows per batch for local models."""
    batch_tokens: int | None = Field(default=2048, ge=1)
    """Scoring (`sequence_logprob`) on local causal LMs: dynamic batches of up to this many
    padded tokens instead of `batch_size` rows (null: use `batch_size`)."""
    seed: int = Field(default=0, ge=0)
    """Seed of sampling and of every seeded statistic of the run; 0 or more."""
    cache: str = ".biasaudit/cache.sqlite"
    """The response cache (SQLite), shared by runs and resumed from."""
    reports_dir: str = "reports"
    """Where run folders are written."""
    progress: bool = True
    """Show per-item progress on stderr."""
    gpu_memory_fraction: float = Field(default=0.5, gt=0, le=0.95)
    """On a CUDA device: the share of the GPU memory free after loading a local causal LM
    that its scoring and generation batches may fill; the token budget (`batch_tokens`) is
    sized from it instead of the CPU default."""
    threads: int | None = None
    """torch intra-op threads (default: torch's own choice, one per physical core; joblib's
    workers are capped at cores / n_jobs by joblib itself)."""
    packed_scoring: bool = True
    """Scoring on local causal LMs: pack each token-budget batch into prefix-tree rows
    (no padding; shared prefixes such as BOS, a system prompt or a minimal pair's common
    start computed once). Same log-probs as the padded path (tested); false: padded batches."""
    prefix_cache: bool = False
    """Scoring with a model variant's system prompt: compute the shared prefix once per
    batch and reuse its keys/values (same log-probs; see `make bench` for whether it pays)."""
    models_dir: str | None = None
    """Where converted (dequantized GGUF) models are kept; default: `models/` beside the
    cache. Parallel jobs and separate caches can share one."""
    job_caches: bool | None = None
    """Sweeps (`run -m`): each job writes its own cache file, merged into `cache` after the
    sweep. None: on under launchers that may use other machines (submitit, ray), off under
    the basic and joblib launchers (one shared file on this host)."""
    job_cache_dir: str | None = None
    """Set by `run -m` when jobs write their own caches: the folder holding them."""
    retry_failed: bool = False
    """Send requests whose stored result is a failure to the model again."""
    limits: RuntimeLimits = Field(default_factory=RuntimeLimits)
    """Resource bounds (see `RuntimeLimits`)."""
    sequential: SequentialConfig = Field(default_factory=SequentialConfig)
    """Sequential stopping: look at the thresholds every `look_every` stimuli and stop when
    all are decided (see `SequentialConfig`)."""
    batch: BatchConfig = Field(default_factory=BatchConfig)
    """Provider batch APIs (see `BatchConfig`); off by default."""
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    """A limit on money and/or tokens spent on the model under test (see `BudgetConfig`)."""
    shards: int = Field(default=1, ge=1, le=1024)
    """Split the model under test's requests by a hash of their key into this many shards,
    each run as a task on `shard_backend` with its own cache file, merged into `cache`
    before the run codes, measures and reports once (docs/running-at-scale.md, "Sharding
    one audit on Ray"). 1: one process, no Ray."""
    shard_backend: Literal["ray", "submitit"] = "ray"
    """What runs the shards: `ray` (a local cluster, or `ray.address`) or `submitit` (a
    SLURM array, or submitit's local executor)."""
    ray: RayConfig = Field(default_factory=RayConfig)
    """The Ray cluster the shards run on (see `RayConfig`)."""
    submitit: SubmititConfig = Field(default_factory=SubmititConfig)
    """The SLURM array the shards run as with `shard_backend: submitit` (see `SubmititConfig`)."""
    preflight: PreflightConfig = Field(default_factory=PreflightConfig)
    """Checks before the first model call (see `PreflightConfig`)."""


class ValiditySpec(Strict):
    """When a measurement is too weak to decide: a verdict resting on it is INCONCLUSIVE,
    with the reason, instead of PASS or FAIL (docs/validity.md)."""

    min_valid_share: float = Field(default=0.8, ge=0.0, le=1.0)
    """Least share of a metric's units that must give a usable answer (not refused,
    unreadable, tied or failed) for its verdicts to be decided."""
    max_failed_share: float = Field(default=0.05, ge=0.0, le=1.0)
    """Largest share of the run's model requests that may fail; above it every verdict is
    INCONCLUSIVE ("the run could not measure")."""
    dominant_share: float = Field(default=0.95, gt=0.5, le=1.0)
    """A coding layer that gives one label to at least this share of its coded units
    does not discriminate (unless the layer says `expect_dominant: true`)."""
    max_otherwise_share: float = Field(default=0.5, ge=0.0, le=1.0)
    """Largest share of units a `rules` layer may leave to its `otherwise` label."""
    max_abstain_share: float = Field(default=0.5, ge=0.0, le=1.0)
    """Largest share of units a layer may abstain on (after its fallback, if any)."""


class AuditConfig(Strict):
    """The composed, validated configuration of one run."""

    audit: AuditMeta
    """Name, method family and description of the audit."""
    stimuli: StimuliSpec
    """Where the stimuli come from (a data file, inline rows or a generator) and which are kept."""
    factors: dict[str, dict[str, LevelSpec]] = Field(default_factory=dict)
    """Prompt factors: factor -> level name -> what the level contributes to the prompt."""
    design: DesignSpec = Field(default_factory=DesignSpec)
    """How the factors' levels combine into cells (default: every combination)."""
    probe: ProbeSpec
    """What each request asks of the model and how it is decoded."""
    coding: dict[str, CodingLayerSpec] = Field(default_factory=dict)
    """Named coding layers (empty: the default layers of the spec's metrics)."""
    reliability: list[ReliabilityPairSpec] | Literal["all"] = Field(default_factory=list)
    """Layer pairs whose agreement is reported, or `all` (every two layers with one label set)."""
    metrics: list[MetricSpec]
    """The metrics computed from the answers and codes, each a registered metric by `name`."""
    thresholds: list[ThresholdSpec] = Field(default_factory=list)
    """Bounds on estimates; each gives a PASS, FAIL or INCONCLUSIVE verdict."""
    report: ReportSpec = Field(default_factory=ReportSpec)
    """Report title, formats and table sizes."""
    validity: ValiditySpec = Field(default_factory=ValiditySpec)
    """When a measurement is too weak for a verdict (valid-answer share, failed requests,
    coders that do not discriminate)."""
    model: ModelConfig
    """The model under test (the operator's `model` group)."""
    nli: NLIConfig | None = None
    """How `classify_nli` requests are answered (the operator's `nli` group)."""
    judge: JudgePanelConfig | None = None
    """The judge panel of `judge_panel` and `choice` layers (the operator's `judge` group)."""
    embedder: EmbedderConfig | None = None
    """The sentence encoder of `embedding` and `tfdp_vectors` layers (the operator's `embedder` group)."""
    runtime: RuntimeConfig = Field(default_factory=RuntimeConfig)
    """Run-time settings: cache, reports folder, batching, limits (the operator's `runtime` group)."""
