"""Count a plan without holding it: one rendering pass, keyed for one or many models.

A sweep over models renders the same payloads for each model (only the identity in the
hash differs), so `count_plans` renders each payload once and hashes it per model. Memory
is the set of unique keys per model (what the unique count needs) plus one chunk of keys
waiting for a cache lookup; requests and plan items are never kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from biasaudit.data import StimulusSet
from biasaudit.errors import SpecError
from biasaudit.plan.compile import check_plan_size, check_templates, iter_rows, request_params
from biasaudit.plan.design import Cell, expand_design
from biasaudit.plan.requests import (
    Decoding,
    KeyMaker,
    encode_payload,
    sends_stimulus,
    stimulus_payload,
)
from biasaudit.records.json import JSONObject
from biasaudit.spec import AuditConfig

CHUNK = 5000


@dataclass
class PlanCount:
    """Counts of one model's plan."""

    identity: JSONObject
    items: int = 0
    unique: int = 0
    cached: int = 0
    """Unique requests with a successful response in the store."""
    input_tokens: int = 0
    output_tokens: int = 0
    keys: set[str] = field(default_factory=set, repr=False)


@dataclass
class PlanCounts:
    cells: list[Cell]
    kind: str
    per_cell_n: int
    """Stimulus x variant x sample units in the first cell (the n of a per-cell rate)."""
    units: int
    """Stimulus x variant x sample units over all cells (the n of a pooled rate)."""
    models: list[PlanCount]

    @property
    def items(self) -> int:
        return sum(m.items for m in self.models)

    @property
    def unique(self) -> int:
        return sum(m.unique for m in self.models)


def count_plans(
    cfg: AuditConfig,
    stimuli: StimulusSet,
    identities: list[JSONObject],
    spec_file: str | None = None,
    cached: Callable[[list[str]], int] | None = None,
) -> PlanCounts:
    """Counts, unique requests and estimated tokens of `cfg`'s plan for each identity.
    `cached(keys)` says how many of a chunk of new keys the store already holds."""
    cells = expand_design(cfg, spec_file)
    check_plan_size(cfg, cells, stimuli, spec_file)
    check_templates(cfg, stimuli, spec_file)
    params, n_samples = request_params(cfg)
    kind = cfg.probe.kind
    max_out = ((Decoding.model_validate(params).max_tokens or 0) if kind == "generate"
               else (1 if kind == "next_token" else 0))
    counts = [PlanCount(identity=i) for i in identities]
    makers = [KeyMaker(i, kind, params) for i in identities]
    per_stimulus = [sends_stimulus(i) for i in identities]
    waiting: list[list[str]] = [[] for _ in identities]
    first_cell = cells[0].id
    first_units: set[tuple[str, int]] = set()
    units = 0
    last_unit: tuple[str, str, int] | None = None
    for row in iter_rows(cfg, stimuli, spec_file, cells):
        if row.cell == first_cell:
            first_units.add((row.stimulus, row.variant))
        unit = (row.cell, row.stimulus, row.variant)
        if unit != last_unit:  # a unit's slots come one after another
            units += 1
            last_unit = unit
        chars = len(row.text or "") + len(row.pair or "") + sum(len(m["content"]) for m in row.messages or [])
        tin = max(1, chars // 4)
        parts = encode_payload(row.text, row.messages, row.pair)
        with_stim = encode_payload(row.text, row.messages, row.pair, stimulus_payload(
            row.stimulus, row.fields, row.levels)) if any(per_stimulus) else parts
        for sample in range(n_samples):
            for c, make, wait, stim in zip(counts, makers, waiting, per_stimulus, strict=True):
                c.items += 1
                key = make.from_parts(with_stim if stim else parts, sample)
                if key in c.keys:
                    continue
                c.keys.add(key)
                c.unique += 1
                c.input_tokens += tin
                c.output_tokens += max_out
                if cached is not None:
                    wait.append(key)
                    if len(wait) >= CHUNK:
                        c.cached += cached(wait)
                        wait.clear()
    if cached is not None:
        for c, wait in zip(counts, waiting, strict=True):
            if wait:
                c.cached += cached(wait)
    if not counts or counts[0].items == 0:
        raise SpecError("the plan has no requests", file=spec_file, key="design")
    return PlanCounts(cells=cells, kind=kind, per_cell_n=len(first_units) * n_samples,
                      units=units * n_samples, models=counts)
