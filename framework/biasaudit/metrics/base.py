"""Metric records, the context a metric reads, and what a registered metric is.

A metric is a pure function of the plan, the responses and the codes: it makes no model
call and reads no store (the coding stage has already asked every model question).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from biasaudit.metrics.card import CardDef
from biasaudit.plan import Plan, PlanItem
from biasaudit.records.codes import Code, Unit
from biasaudit.records.metric_result import (
    ITEM_KEYS,
    ItemRow,
    MetricResult,
    PlotSpec,
    ReliabilityItem,
    Scalar,
    Table,
)
from biasaudit.records.responses import Response
from biasaudit.registry import METRICS
from biasaudit.spec import AuditConfig, CodingLayerSpec, ReliabilityPairSpec

if TYPE_CHECKING:
    from biasaudit.coding.layers import Layer










@dataclass
class MetricContext:
    config: AuditConfig
    plan: Plan
    responses: Mapping[str, Response]
    units: Sequence[Unit] = ()
    """The answered plan items the coding stage coded (empty when the spec has no layers)."""
    codes: Mapping[str, Mapping[str, Code]] = field(default_factory=dict)
    """Layer -> unit id -> code."""
    layers: Mapping[str, Layer] = field(default_factory=dict)
    """The compiled layers (their checked options), by name."""

    def items_by(self) -> dict[tuple[str, int, str, int], dict[str, PlanItem]]:
        """(cell, variant, stimulus, sample) -> slot -> plan item."""
        out: dict[tuple[str, int, str, int], dict[str, PlanItem]] = {}
        for it in self.plan.items:
            out.setdefault((it.cell, it.variant, it.stimulus, it.sample), {})[it.slot] = it
        return out

    def layer_codes(self, name: str) -> Mapping[str, Code]:
        return self.codes.get(name, {})

    def levels(self, cell: str) -> dict[str, str]:
        """Factor -> level of a cell of the plan (empty for the base cell)."""
        for c in self.plan.cells:
            if c.id == cell:
                return dict(c.levels)
        return {}

    def item(self, stimulus: str, cell: str, fields: Mapping[str, Any] | None = None,
             **values: float | None) -> ItemRow:
        """One row of `MetricResult.items`: where the unit sits (stimulus, cell and its
        factor levels), the stimulus's scalar fields, its content hash (`stimulus_sha`, of
        all the plan stimulus's fields, whatever subset `fields` passes) and `values`."""
        shas = self.__dict__.get("_stimulus_shas")
        if shas is None:  # once per context: stimulus id -> content hash
            shas = self.__dict__["_stimulus_shas"] = {s.id: stimulus_sha(s.fields) for s in self.plan.stimuli.stimuli}
        return item_row(stimulus, cell, self.levels(cell), fields, sha=shas.get(stimulus), **values)


def stimulus_sha(fields: Mapping[str, Any]) -> str:
    """sha256 of a stimulus's fields as canonical JSON (sorted keys): the content that
    `biasaudit compare` pairs two runs' items on, whatever their row ids."""
    text = json.dumps(dict(fields), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def item_row(stimulus: str, cell: str | None, levels: Mapping[str, str] | None,
             fields: Mapping[str, Any] | None = None, sha: str | None = None, **values: float | None) -> ItemRow:
    """One row of `MetricResult.items` (see `MetricContext.item`); `stimulus_sha` is `sha`,
    else the hash of `fields` (which should then be all the stimulus's fields). `values`:
    `outcome` and/or `diff` (set only when given: a row without a 0/1 outcome has none,
    and a given None stays null) and the method's other per-item numbers."""
    scalar: dict[str, Scalar | None] = {k: v for k, v in (fields or {}).items()
              if isinstance(v, str | int | float) and k not in ITEM_KEYS and k not in values}
    sha = sha if sha is not None else stimulus_sha(fields) if fields else None
    numbers: dict[str, Any] = {k: values.pop(k) for k in ("outcome", "diff") if k in values}
    return ItemRow(stimulus=stimulus, cell=cell, levels=None if levels is None else dict(levels), stimulus_sha=sha or None,
                   fields=scalar, values=dict(values), **numbers)

Presentation = tuple[list[Table], list[PlotSpec]]
"""What a method's report section declares for one result: its tables, then its plots."""


class DefaultCoding(BaseModel):
    """The coding a spec without `coding:` gets for a metric: its layers and reliability
    pairs, the records a spec's own `coding:` and `reliability:` entries are read into."""

    model_config = ConfigDict(frozen=True)
    layers: dict[str, CodingLayerSpec] = Field(default_factory=dict)
    """Layer name -> the layer, as a spec's `coding:` would declare it."""
    reliability: list[ReliabilityPairSpec] = Field(default_factory=list)
    """Layer pairs compared (used when the spec gives no `reliability:`)."""

    @classmethod
    def of(cls, layers: Mapping[str, Mapping[str, object]],
           reliability: Sequence[Mapping[str, object]] = ()) -> DefaultCoding:
        """From the mappings a spec would give (a method composes its defaults as a spec
        section, or reads them from a shipped YAML file): checked here, so a method's
        broken default fails where it is made."""
        return cls(layers={n: CodingLayerSpec.model_validate(d) for n, d in layers.items()},
                   reliability=[ReliabilityPairSpec.model_validate(r) for r in reliability])


@dataclass(frozen=True)
class NoBias:
    """The value an estimate takes when there is no bias, and its scale in words: a
    threshold band that claims parity must contain it (`runner.checks.parity_warnings`),
    and the self-test mirrors a planted bias around it (`runner.selftest_content`)."""

    value: float
    scale: str
    """E.g. "0-100, centred at 50", "-1 to 1, 0 is no bias", "a ratio, 1 is parity"."""


def no_bias_of(mdef: MetricDef, estimate: str) -> NoBias | None:
    """The no-bias value of estimate `estimate` ("" the headline) of a metric, by the
    first matching pattern of `MetricDef.no_bias` (None: the method declares none)."""
    for pat, nb in mdef.no_bias:
        if (estimate == "" if pat == "" else fnmatch.fnmatchcase(estimate, pat)):
            return nb
    return None


@dataclass(frozen=True)
class MetricDef:
    compute: Callable[[MetricContext, str, BaseModel], MetricResult]
    params: type[BaseModel]
    probe_kinds: frozenset[str]
    title: str
    method: str = ""
    """The method (package) the metric belongs to: its report text."""
    check: Callable[[BaseModel, str], str | None] | None = None
    """Extra consistency check of the parameters against the probe kind; returns a
    message when they do not fit."""
    bounds: tuple[tuple[str, tuple[float, float] | None], ...] = ()
    """The range of the metric's estimates, for checking thresholds before any model
    call: (estimate-name pattern, (low, high) or None for unbounded), first match wins;
    the pattern "" stands for the headline (a threshold naming only the metric)."""
    check_spec: Callable[[BaseModel, AuditConfig], str | tuple[str, str] | None] | None = None
    """Extra consistency check of the parameters against the rest of the spec: a message,
    or (message, hint) when the fix is not to move a setting to its coding layer."""
    layers: Callable[[BaseModel], dict[str, str]] = field(default=lambda p: {})
    """Parameter name -> the coding layer it binds (checked to exist)."""
    default_coding: Callable[[BaseModel, AuditConfig], DefaultCoding] | None = None
    """The layers a spec without `coding:` gets for this metric."""
    no_bias: tuple[tuple[str, NoBias | None], ...] = ()
    """The no-bias value of the metric's estimates, (estimate-name pattern, NoBias or None
    for an estimate with none, e.g. a rate), first match wins; "" the headline. Declared
    by the method: the scale is its knowledge."""
    present: Callable[[MetricResult, BaseModel, AuditConfig], Presentation] | None = None
    """The method's report section: the tables and plots of a computed result, drawn from
    its records alone (estimates, cells, item rows, counts, `detail`), after `compute`.
    None: `compute` filled them itself (a plug-in written before `present` existed)."""
    card: CardDef | None = None
    """How `biasaudit view` shows the scored sentences the metric compares (their scores
    and the winner, `metrics/card.py`); None: each scored response gets the generic card."""


__all__ = ["ITEM_KEYS", "METRICS", "DefaultCoding", "Presentation", "ItemRow", "item_row", "stimulus_sha", "MetricContext", "MetricDef", "NoBias", "no_bias_of", "MetricResult", "PlotSpec",
           "ReliabilityItem", "Table"]
