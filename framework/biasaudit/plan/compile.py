"""Compile a validated config + stimuli into a plan of hashed requests."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from biasaudit.data import StimulusSet
from biasaudit.errors import SpecError
from biasaudit.plan.design import Cell, expand_design
from biasaudit.plan.items import ItemTable
from biasaudit.plan.requests import (
    KeyMaker,
    PlanItem,
    Request,
    RequestTable,
    encode_payload,
    estimated_tokens,
    sends_stimulus,
    stimulus_payload,
)
from biasaudit.records.json import JSONObject
from biasaudit.spec import AuditConfig, LevelSpec
from biasaudit.spec.templates import check_variables, forget_renders, reads, render

CHAT_KINDS = ("generate", "next_token")
BUILTIN_VARS = {"levels", "stimulus_id", "parts"}


@dataclass
class Plan:
    cells: list[Cell]
    stimuli: StimulusSet
    items: Sequence[PlanItem]
    """In plan order; a compiled plan holds them as columns in an `ItemTable` (issue 42)."""
    requests: Mapping[str, Request]
    """Key -> request; a compiled plan holds them in a compact `RequestTable` (issue 42)."""
    identity: JSONObject
    kind: str
    notes: list[str] = field(default_factory=list)

    @property
    def n_items(self) -> int:
        return len(self.items)

    def token_estimate(self) -> tuple[int, int]:
        """(input, output) tokens over the unique requests (see `estimated_tokens`)."""
        tin = tout = 0
        for r in self.requests.values():
            i, o = estimated_tokens(r)
            tin += i
            tout += o
        return tin, tout


def _params(cfg: AuditConfig, seed: int) -> JSONObject:
    p = cfg.probe
    if p.kind == "generate":
        out: JSONObject = {
            "temperature": p.temperature,
            "top_p": p.top_p,
            "max_tokens": p.max_tokens,
        }
        if p.temperature > 0:
            out["seed"] = seed
        return out
    if p.kind == "next_token":
        return {"top_k": p.top_k}
    return {}


def check_templates(cfg: AuditConfig, stimuli: StimulusSet, spec_file: str | None) -> None:
    fields = stimuli.field_names
    level_vars = {k for lv in cfg.factors.values() for level in lv.values() for k in level.vars}
    available = fields | level_vars | BUILTIN_VARS
    for fname, levels in cfg.factors.items():
        for lname, level in levels.items():
            for i, t in enumerate(level.variants()):
                if t is not None:
                    key = f"factors.{fname}.{lname}." + (
                        "template" if level.templates is None else f"templates[{i}]"
                    )
                    check_variables(t, available, file=spec_file, key=key)
            if level.system:
                check_variables(
                    level.system, available, file=spec_file, key=f"factors.{fname}.{lname}.system"
                )
    for slot, t in (cfg.probe.inputs or {}).items():
        check_variables(t, available, file=spec_file, key=f"probe.inputs.{slot}")
    for attr in ("prompt", "system", "hypothesis"):
        t = getattr(cfg.probe, attr)
        if t:
            check_variables(t, available, file=spec_file, key=f"probe.{attr}")


class _Render(Protocol):
    def __call__(self, source: str, context: dict[str, Any], *, file: str | None, key: str) -> str: ...


class _CellRender:
    """`render` for the rows of one cell. A template that reads only the cell's level vars
    and `levels` (a role's system text, a perspective line) renders the same text for
    every stimulus: it is rendered at the first and reused (templates are pure functions
    of what they read, as `render`'s memo assumes), instead of a memo lookup per row."""

    def __init__(self, fixed_names: set[str]) -> None:
        self._fixed_names = fixed_names
        self._done: dict[str, str] = {}

    def __call__(self, source: str, context: dict[str, Any], *, file: str | None, key: str) -> str:
        text = self._done.get(source)
        if text is not None:
            return text
        text = render(source, context, file=file, key=key)
        if reads(source) <= self._fixed_names:
            self._done[source] = text
        return text


class Row(NamedTuple):
    """One rendered payload of the design, before any model identity is attached."""

    cell: str
    stimulus: str
    slot: str
    variant: int
    text: str | None
    messages: list[dict[str, str]] | None
    pair: str | None
    fields: dict[str, Any]
    """The stimulus's fields and the cell's level vars (what an application is sent)."""
    levels: dict[str, str]


def iter_rows(cfg: AuditConfig, stimuli: StimulusSet, spec_file: str | None = None,
              cells: list[Cell] | None = None) -> Iterator[Row]:
    """Render the design lazily, one payload at a time: the same rows for every model, so
    a sweep over models renders once and hashes per model (see `plan.stream`)."""
    cells = expand_design(cfg, spec_file) if cells is None else cells
    probe = cfg.probe
    factor_names = list(cfg.factors)
    for cell in cells:
        levels = [cfg.factors[f][cell.levels[f]] for f in factor_names]
        level_vars: dict[str, Any] = {}
        for lv in levels:
            level_vars.update(lv.vars)
        variant_lists = [lv.variants() for lv in levels] or [[None]]
        rend = _CellRender(set(level_vars) | {"levels"})
        for variant_idx, variant in enumerate(itertools.product(*variant_lists)):
            for stim in stimuli.stimuli:
                fields = {**stim.fields, **level_vars}
                ctx = {
                    **fields,
                    "levels": dict(cell.levels),
                    "stimulus_id": stim.id,
                }
                parts = {}
                for fname, tmpl in zip(factor_names, variant, strict=False):
                    if tmpl is not None:
                        parts[fname] = rend(
                            tmpl, ctx, file=spec_file, key=f"factors.{fname}.{cell.levels[fname]}"
                        )
                ctx["parts"] = parts
                pair = (
                    rend(probe.hypothesis, ctx, file=spec_file, key="probe.hypothesis")
                    if probe.kind == "classify_nli" and probe.hypothesis else None
                )
                for slot, text, messages in _payloads(cfg, ctx, levels, parts, spec_file, rend):
                    yield Row(cell.id, stim.id, slot, variant_idx, text, messages, pair, fields, cell.levels)


def request_params(cfg: AuditConfig) -> tuple[JSONObject, int]:
    """Decoding parameters of the spec's requests and the number of samples per payload."""
    probe = cfg.probe
    sampled = probe.kind == "generate" and probe.temperature > 0
    # Deterministic requests give the same answer every time: one item, not `samples` copies.
    return _params(cfg, cfg.runtime.seed), (probe.samples if sampled else 1)


def iter_plan(cfg: AuditConfig, stimuli: StimulusSet, identity: JSONObject,
              spec_file: str | None = None, cells: list[Cell] | None = None,
              ) -> Iterator[tuple[PlanItem, Request]]:
    """(item, request) pairs in design order, without holding them; a request shared by
    several items is yielded with each."""
    params = request_params(cfg)[0]
    for row, sample, key, stim in _keyed(cfg, stimuli, identity, spec_file, cells):
        req = Request(key=key, kind=cfg.probe.kind, text=row.text, messages=row.messages,
                      params=params, sample=sample, text_pair=row.pair, stimulus=stim)
        yield PlanItem(cell=row.cell, stimulus=row.stimulus, slot=row.slot,
                       variant=row.variant, sample=sample, key=key), req


def _keyed(cfg: AuditConfig, stimuli: StimulusSet, identity: JSONObject, spec_file: str | None,
           cells: list[Cell] | None) -> Iterator[tuple[Row, int, str, JSONObject | None]]:
    """Each rendered row with its sample index, its request key and its stimulus payload."""
    params, n_samples = request_params(cfg)
    make_key = KeyMaker(identity, cfg.probe.kind, params)
    with_stimulus = sends_stimulus(identity)
    for row in iter_rows(cfg, stimuli, spec_file, cells):
        stim = stimulus_payload(row.stimulus, row.fields, row.levels) if with_stimulus else None
        parts = encode_payload(row.text, row.messages, row.pair, stim)
        for sample in range(n_samples):
            yield row, sample, make_key.from_parts(parts, sample), stim


def check_plan_size(cfg: AuditConfig, cells: list[Cell], stimuli: StimulusSet, spec_file: str | None) -> int:
    """Plan items (cells x paraphrase combinations x stimuli x slots x samples), counted
    before rendering any; over `runtime.limits.max_plan_items` is an error."""
    _, n_samples = request_params(cfg)
    slots = len(cfg.probe.inputs) if cfg.probe.inputs else 1
    variants = sum(math.prod(len(cfg.factors[f][c.levels[f]].variants()) for f in cfg.factors) for c in cells)
    n = variants * len(stimuli.stimuli) * slots * n_samples
    limit = cfg.runtime.limits.max_plan_items
    if n > limit:
        raise SpecError(f"the plan has {n} items ({len(cells)} cells, {len(stimuli.stimuli)} stimuli, "
                        f"{n_samples} sample(s)), over the limit of {limit}", file=spec_file, key="design",
                        hint="sample the stimuli (stimuli.sample), use fewer cells or paraphrases, or raise "
                             "runtime.limits.max_plan_items")
    return n


def compile_plan(
    cfg: AuditConfig,
    stimuli: StimulusSet,
    identity: JSONObject,
    spec_file: str | None = None,
) -> Plan:
    cells = expand_design(cfg, spec_file)
    check_plan_size(cfg, cells, stimuli, spec_file)
    check_templates(cfg, stimuli, spec_file)
    requests = RequestTable(cfg.probe.kind, request_params(cfg)[0])
    items = ItemTable(requests)
    # the rows go into the table as parts: a pydantic `Request` per row only to take it
    # apart again cost a third of the plan stage (issue 42); each item keeps its
    # request's position in the table, not a copy of its key
    for row, sample, key, stim in _keyed(cfg, stimuli, identity, spec_file, cells):
        at = requests.add_parts(key, row.text, row.messages, sample, row.pair, stim)
        items.append(row.cell, row.stimulus, row.slot, row.variant, sample, at)
    requests.pack()
    items.pack()
    # the renders memoised while compiling (~120 B an item at 10^5, capped at 65,536)
    # would stay alive to the end of the run; the plan holds every text it needs
    forget_renders()
    if not items:
        raise SpecError("the plan has no requests", file=spec_file, key="design")
    return Plan(
        cells=cells, stimuli=stimuli, items=items, requests=requests,
        identity=identity, kind=cfg.probe.kind,
    )


def _systems(cfg: AuditConfig, ctx: dict[str, Any], levels: list[LevelSpec],
             spec_file: str | None, rend: _Render) -> list[str]:
    systems: list[str] = []
    if cfg.probe.system:
        systems.append(rend(cfg.probe.system, ctx, file=spec_file, key="probe.system"))
    for lv in levels:
        if lv.system:
            systems.append(rend(lv.system, ctx, file=spec_file, key="factors.system"))
    return systems


def _payloads(
    cfg: AuditConfig, ctx: dict[str, Any], levels: list[LevelSpec], parts: dict[str, str],
    spec_file: str | None, rend: _Render = render,
) -> Iterator[tuple[str, str | None, list[dict[str, str]] | None]]:
    probe = cfg.probe
    if probe.inputs and probe.kind not in CHAT_KINDS:
        for slot, tmpl in probe.inputs.items():
            text = rend(tmpl, ctx, file=spec_file, key=f"probe.inputs.{slot}")
            yield slot, text, None
        return
    if probe.inputs:
        # chat probes with several inputs: one user message per slot, same system text
        systems = _systems(cfg, ctx, levels, spec_file, rend)
        for slot, tmpl in probe.inputs.items():
            user = rend(tmpl, ctx, file=spec_file, key=f"probe.inputs.{slot}")
            msgs = ([{"role": "system", "content": " ".join(systems)}] if systems else []) + [{"role": "user", "content": user}]
            yield slot, None, msgs
        return
    if probe.prompt:
        user = rend(probe.prompt, ctx, file=spec_file, key="probe.prompt")
    else:
        user = "\n".join(p for p in parts.values() if p)
    if not user.strip():
        raise SpecError(
            "the prompt renders empty", file=spec_file, key="probe.prompt",
            hint="set `probe.prompt` or give factor levels a `template`",
        )
    systems = _systems(cfg, ctx, levels, spec_file, rend)
    messages: list[dict[str, str]] = []
    if systems:
        messages.append({"role": "system", "content": " ".join(systems)})
    messages.append({"role": "user", "content": user})
    if probe.kind not in ("generate", "next_token", "classify_nli", "embed"):
        raise SpecError(
            f"probe kind {probe.kind!r} needs `inputs`", file=spec_file, key="probe.inputs"
        )
    yield "prompt", None, messages
