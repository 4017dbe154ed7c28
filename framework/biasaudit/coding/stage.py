"""The coding stage: turn responses into codes, layer by layer, in dependency order.

Each layer's input is resolved per unit (the response text, a field of the response,
or an earlier layer's output; with `strip`, minus the span another layer matched). The
coder plans its requests, which `answer` resolves (from the store, or a model); the
coder is asked again with the answers until it wants nothing new, then codes. A layer
with a `fallback` hands the units it abstained on to that layer, whose codes replace
the abstentions (source `fallback:<layer>`). An input longer than
`runtime.limits.max_coding_chars` is cut to that length for the coder, flagged in the
code's detail (`input_truncated`) and counted in the report.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from biasaudit.coding.base import CodingRequest
from biasaudit.coding.layers import CodingPlan, Layer
from biasaudit.errors import BiasAuditError
from biasaudit.plan import PlanItem
from biasaudit.records.codes import (
    Code,
    CodeDetail,
    CodeTable,
    PlanUnitIndex,
    Truncation,
    Unit,
    UnitIndex,
    UnitTable,
)
from biasaudit.records.json import JSONValue
from biasaudit.records.responses import Response, generated_text

MAX_ROUNDS = 4
"""Rounds a multi-step coder may ask in (claims: extract, then check)."""
CODE_CHUNK = 4096
"""Units a per-unit coder (`CoderDef.per_unit`) codes at a time."""

Answerer = Callable[[str, list[CodingRequest]], dict[CodingRequest, Response]]
"""(layer name, requests) -> their responses (cached or answered now)."""


@dataclass
class CodingResult:
    codes: dict[str, Mapping[str, Code]]
    """Layer -> unit id -> code. A fallback layer holds only the units it was given. The
    coding stage gives each layer's codes as a compact `CodeTable` (issue 42)."""
    units: Sequence[Unit]
    """The units coded (the coding stage's: a `UnitTable` over the plan's items)."""
    handed: dict[str, int] = field(default_factory=dict)
    """Fallback layer -> units its primary handed to it."""

    def layer(self, name: str) -> Mapping[str, Code]:
        return self.codes.get(name, {})


def response_text(response: Response) -> str | None:
    """The answer: a generation's text; any other output (a next-token distribution) as
    canonical JSON."""
    if not response.ok:
        return None
    text = generated_text(response)
    return text if text is not None else json.dumps(response.output, sort_keys=True)


def strip_span(text: str, span: Sequence[int] | None) -> str:
    """The text with a span another layer matched (e.g. the selected answer, its code's
    `detail.matched_span()`) removed, for a later layer that should read only the rest
    (BiAxisAudit's elaboration judges)."""
    if not span:
        return text
    s, e = int(span[0]), int(span[1])
    return (text[:s] + text[e:]).lstrip(" \t\n.,:;-)")


def resolve_inputs(layer: Layer, units: Sequence[Unit], responses: Mapping[str, Response],
                   codes: Mapping[str, Mapping[str, Code]],
                   cut: dict[str, int] | None = None) -> tuple[dict[str, str], dict[str, Code]]:
    """(input text of each codable unit, codes of the units that cannot be coded). An
    input longer than `runtime.limits.max_coding_chars` is cut to that length (a model
    server's answer is untrusted: one huge answer must not stop the coders); `cut`
    receives the unit id -> the input's full length of each cut input."""
    limit = layer.env.config.runtime.limits.max_coding_chars
    inputs: dict[str, str] = {}
    skipped: dict[str, Code] = {}
    for u in units:
        r = responses[u.key]
        if not r.ok:
            skipped[u.id] = Code(unit=u.id, status="failed", source=layer.coder_name,
                                 detail=CodeDetail(reason="the response failed"))
            continue
        text: str | None
        if layer.input.kind == "response":
            text = response_text(r)
        elif layer.input.kind == "field":
            value = r.field(layer.input.name)
            # structured fields (a top-k list) reach the coder as JSON
            text = None if value is None else value if isinstance(value, str) else json.dumps(value)
        else:
            src = codes[layer.input.name].get(u.id)
            text = None if src is None or not src.coded else (src.text if src.text is not None else src.label)
        if text is None:
            skipped[u.id] = Code(unit=u.id, status="not_applicable", source=layer.coder_name,
                                 detail=CodeDetail(reason=f"no input ({layer.spec.input})"))
            continue
        if layer.spec.strip is not None:
            marker = codes[layer.spec.strip].get(u.id)
            text = strip_span(text, marker.detail.matched_span() if marker is not None else None)
        if len(text) > limit:
            if cut is not None:
                cut[u.id] = len(text)
            text = text[:limit]
        inputs[u.id] = text
    return inputs, skipped


def _chunks(layer: Layer, codable: list[Unit]) -> list[list[Unit]]:
    """The units in the groups the coder is asked to code at a time: `CODE_CHUNK` units
    for a per-unit coder; whole groups of at least `CODE_CHUNK` units for one that
    compares units within a group (`CoderDef.chunk_by`), each group's units in their
    order; else the whole layer."""
    cdef = layer.coder_def
    if cdef.chunk_by is not None:
        key = cdef.chunk_by(layer.options)
        groups: dict[str, list[Unit]] = {}
        for u in codable:
            groups.setdefault(key(u), []).append(u)
        out: list[list[Unit]] = [[]]
        for members in groups.values():
            if len(out[-1]) >= CODE_CHUNK:
                out.append([])
            out[-1].extend(members)
        return out
    if cdef.per_unit:
        return [codable[i:i + CODE_CHUNK] for i in range(0, len(codable), CODE_CHUNK)]
    return [codable]


def _code_layer(plan: CodingPlan, name: str, units: Sequence[Unit], responses: Mapping[str, Response],
                codes: dict[str, Mapping[str, Code]], answer: Answerer, result: CodingResult,
                index: UnitIndex) -> CodeTable:
    layer = plan.layers[name]
    cut: dict[str, int] = {}
    inputs, out = resolve_inputs(layer, units, responses, codes, cut)
    codable = [u for u in units if u.id in inputs]
    coder = layer.build()
    answers: dict[CodingRequest, Response] = {}
    for _ in range(MAX_ROUNDS + 1):
        wanted = [r for r in dict.fromkeys(coder.plan(codable, inputs, answers)) if r not in answers]
        if not wanted:
            break
        answers.update(answer(name, wanted))
    else:
        raise BiasAuditError(f"layer {name!r} kept asking for new requests after {MAX_ROUNDS} rounds",
                             key=f"coding.{name}")
    # a per-unit coder codes a chunk of units at a time, each chunk kept compactly before
    # the next: never every unit's full record at once (issue 42)
    chunks = _chunks(layer, codable)
    got = CodeTable(index=index)
    for chunk in chunks:
        for c in coder.code(chunk, inputs, answers):
            got[c.unit] = c
    missing = [u.id for u in codable if u.id not in got]
    if missing:
        raise RuntimeError(f"coder {layer.coder_name!r} gave no code for {len(missing)} unit(s)")  # a coder bug
    limit = layer.env.config.runtime.limits.max_coding_chars
    for uid, chars in cut.items():  # flagged, and counted in the report (coding/summary.py)
        c = got[uid]
        if c.status != "not_applicable":  # a unit the coder did not read (another level's) lost nothing
            truncated = Truncation(chars=chars, kept=limit)
            got[uid] = c.model_copy(update={"detail": c.detail.model_copy(update={"input_truncated": truncated})})
    # `out` holds the units the coder was not given (no input, a failed response) and,
    # below, the fallback's codes; every other unit's code is the coder's, in `got`
    fb = layer.spec.fallback
    if fb is not None:
        left = [u for u in units if (out[u.id].status if u.id in out else got.status_of(u.id)) == "abstain"]
        result.handed[fb] = len(left)
        fb_codes = _code_layer(plan, fb, left, responses, codes, answer, result, index)
        codes[fb] = fb_codes
        for uid, c in fb_codes.items():
            if c.coded:
                out[uid] = c.model_copy(update={"source": f"fallback:{fb}"})
    if not out and len(got) == len(units) and all(a == u.id for a, u in zip(got, units, strict=True)):
        return got  # every unit coded by the coder, held in the units' order already
    table = CodeTable(index=index)
    for u in units:
        if u.id in out:
            table[u.id] = out[u.id]
        else:
            table.put_from(got, u.id)
    return table


def run_coding(plan: CodingPlan, units: Sequence[Unit], responses: Mapping[str, Response],
               answer: Answerer) -> CodingResult:
    """Code every unit on every layer."""
    result = CodingResult(codes={}, units=units)
    # one unit index for every layer's table: each table holds a 4-byte position per code
    # (over the plan's items: no id string held per unit; a plan that repeats an id, which
    # compiled plans never do, keeps the plain index: one position per distinct id)
    index: UnitIndex
    try:
        index = PlanUnitIndex(units) if isinstance(units, UnitTable) else UnitIndex(u.id for u in units)
    except ValueError:
        index = UnitIndex(u.id for u in units)
    # the units read once for all the layers (a `UnitTable` builds each unit, its id
    # included, on every read): held while coding, let go when it ends (issue 42)
    listed = units if isinstance(units, list) else list(units)
    for name in plan.primary:
        result.codes[name] = _code_layer(plan, name, listed, responses, result.codes, answer, result, index)
    # a fallback layer's own codes stay with it (shown in the report); reorder as planned
    result.codes = {n: result.codes[n] for n in plan.layers if n in result.codes}
    return result


def make_units(items: Sequence[PlanItem], cells: Mapping[str, Mapping[str, str]],
               fields: Mapping[str, Mapping[str, JSONValue]],
               level_vars: Callable[[Mapping[str, str]], Mapping[str, JSONValue]]) -> UnitTable:
    """One unit per plan item, read from the items (a `UnitTable`: no object held per unit)."""
    vars_of: dict[str, Mapping[str, JSONValue]] = {}
    for it in items:
        if it.cell not in vars_of:
            vars_of[it.cell] = level_vars(cells[it.cell])
    return UnitTable(items, cells, fields, vars_of)


__all__ = ["Answerer", "CodingResult", "MAX_ROUNDS", "make_units", "resolve_inputs", "response_text", "run_coding", "strip_span"]
