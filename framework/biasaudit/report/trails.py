"""The lines of a run's two trails, responses.jsonl and codes.jsonl, encoded one record
at a time for `_util.trail.write_encoded_lines` (which escapes, chunks and writes them).

At 10^5 requests the report stage spent most of its own time here (issue 42): a
pydantic dump of each request and of each code (`model_dump`, with its wrap
serializers), then a dict built around it, then the encoding. The lines are byte for
byte the ones `json_line` wrote from those dicts: the same keys in the same order, the
same values, the same encoder (`_util.trail.encode`). What is the same for many lines is
encoded once (a cell's levels); a record whose fields are plain values is read from its
fields instead of dumped, and any other (a subclass, an unexpected field, an int where
a float is declared) goes through its `model_dump` as before.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from biasaudit._util.trail import encode
from biasaudit.plan import Plan
from biasaudit.records.codes import Code
from biasaudit.records.responses import Response

_CODE_FIELDS = ("unit", "status", "label", "value", "text", "source", "detail")


def response_lines(plan: Plan, responses: Mapping[str, Response]) -> Iterator[str]:
    """responses.jsonl's records (its header aside), one JSON text per plan item."""
    levels = {c.id: dict(c.levels) for c in plan.cells}
    heads: dict[str, str] = {}
    requests = plan.requests
    for it in plan.items:
        head = heads.get(it.cell)
        if head is None:  # the line's start, the same for every item of a cell: encoded once
            head = heads[it.cell] = f'{{"cell": {encode(it.cell)}, "levels": {encode(levels.get(it.cell, {}))}, '
        resp = responses[it.key]
        rest = encode({"stimulus": it.stimulus, "slot": it.slot, "variant": it.variant, "sample": it.sample,
                       "key": it.key, "request": requests[it.key].body(), "status": resp.status,
                       "error": resp.error, "error_kind": resp.error_kind, "attempts": resp.attempts,
                       "output": resp.output})
        yield head + rest[1:]  # rest without its "{"


def _plain_code(c: Code) -> dict[str, object] | None:
    """`c.trail()` less its detail, read from the fields when they are plain JSON values
    (what `model_dump(mode="json")` gives them as); None: dump it."""
    d = c.__dict__
    if type(c) is not Code or tuple(d) != _CODE_FIELDS:
        return None
    v = d["value"]
    if v is not None and type(v) is not float:
        return None
    for k in ("unit", "status", "source"):
        if type(d[k]) is not str:
            return None
    for k in ("label", "text"):
        if d[k] is not None and type(d[k]) is not str:
            return None
    return {"unit": d["unit"], "status": d["status"], "label": d["label"], "value": v, "text": d["text"],
            "source": d["source"]}


_DETAILS_HELD = 4096
"""Distinct evidence records whose encoded text `code_lines` keeps at a time (coders
share one record among the units with equal evidence: a few per layer)."""


def code_lines(codes: Mapping[str, Mapping[str, Code]]) -> Iterator[str]:
    """codes.jsonl's records (its header aside): one per layer and unit, what the layer
    said and why (embedding vectors are left out: they are in the store). Coders share
    one evidence record among the units whose evidence is equal (rules, choice, judge
    panels), so each record's `trail()` is encoded once and its text reused: its dump
    was half of a line's time (issue 42). The line is `encode` of the same dict, built
    from its parts: the layer's head once, the plain fields, then the detail's text."""
    for layer, table in codes.items():
        head = f'{{"layer": {encode(layer)}, '
        done: dict[int, tuple[object, str]] = {}  # id(detail) -> (the detail, kept alive; its text)
        for c in table.values():
            plain = _plain_code(c)
            if plain is None:
                yield encode({"layer": layer, **c.trail()})
                continue
            detail = c.detail
            got = done.get(id(detail))
            if got is None or got[0] is not detail:
                if len(done) >= _DETAILS_HELD:
                    done.clear()
                got = done[id(detail)] = (detail, encode(detail.trail()))
            # encode(plain) is "{...}": its inside, then the detail, as encode(dict) joins items
            yield f'{head}{encode(plain)[1:-1]}, "detail": {got[1]}}}'


__all__ = ["code_lines", "response_lines"]
