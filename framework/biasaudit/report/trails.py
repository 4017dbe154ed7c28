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

import math
from collections.abc import Iterator, Mapping

from biasaudit._util.trail import encode
from biasaudit.plan import Plan
from biasaudit.records.codes import Code, CodeFields, CodeTable
from biasaudit.records.responses import Response

_CODE_FIELDS = ("unit", "status", "label", "value", "text", "source", "detail")


def response_lines(plan: Plan, responses: Mapping[str, Response]) -> Iterator[str]:
    """responses.jsonl's records (its header aside), one JSON text per plan item."""
    levels = {c.id: dict(c.levels) for c in plan.cells}
    heads: dict[str, str] = {}
    requests = plan.requests
    # the plan's items usually ask its requests in the order the table holds them: read
    # alongside, in order (a compact table decodes each block once), instead of a key
    # lookup per item; any item out of that order is looked up
    ahead = iter(requests.items())
    nxt = next(ahead, None)
    for it in plan.items:
        head = heads.get(it.cell)
        if head is None:  # the line's start, the same for every item of a cell: encoded once
            head = heads[it.cell] = f'{{"cell": {encode(it.cell)}, "levels": {encode(levels.get(it.cell, {}))}, '
        if nxt is not None and nxt[0] == it.key:
            req = nxt[1]
            nxt = next(ahead, None)
        else:
            req = requests[it.key]
        resp = responses[it.key]
        rest = encode({"stimulus": it.stimulus, "slot": it.slot, "variant": it.variant, "sample": it.sample,
                       "key": it.key, "request": req.body(), "status": resp.status,
                       "error": resp.error, "error_kind": resp.error_kind, "attempts": resp.attempts,
                       "output": resp.output})
        yield head + rest[1:]  # rest without its "{"


def _plain_code(c: Code) -> CodeFields | None:
    """The code's field values when it is a plain `Code` with a float or no value (what
    `model_dump(mode="json")` writes as they are); None: dump it."""
    d = c.__dict__
    if type(c) is not Code or tuple(d) != _CODE_FIELDS:
        return None
    v = d["value"]
    if v is not None and type(v) is not float:
        return None
    return (d["unit"], d["status"], d["label"], v, d["text"], d["source"], d["detail"])


_HELD = 4096
"""Distinct evidence records (and label, source texts) whose encoded text `code_lines`
keeps at a time: coders share one record among the units with equal evidence, and a
layer has a few labels and sources."""


def _float_text(v: float) -> str:
    # what the encoder writes for a float (allow_nan: NaN and the infinities as JavaScript names)
    if v != v:
        return "NaN"
    if v in (math.inf, -math.inf):
        return "Infinity" if v > 0 else "-Infinity"
    return float.__repr__(v)


def code_lines(codes: Mapping[str, Mapping[str, Code]]) -> Iterator[str]:
    """codes.jsonl's records (its header aside): one per layer and unit, what the layer
    said and why (embedding vectors are left out: they are in the store). A `CodeTable`
    gives each code's field values without building its record (`CodeTable.fields`).
    Coders share one evidence record among the units whose evidence is equal (rules,
    choice, judge panels), so each record's `trail()` is encoded once and its text
    reused, as are a layer's few labels and sources: the dump of the record and of its
    evidence was most of a line's time (issue 42). The line is `encode` of the same
    dict, written from its parts in its key order."""
    for layer, table in codes.items():
        head = f'{{"layer": {encode(layer)}, "unit": '
        done: dict[int, tuple[object, str]] = {}  # id(detail) -> (the detail, kept alive; its text)
        texts: dict[str | None, str] = {None: "null"}  # a label's or source's JSON text
        for c in (table.fields() if isinstance(table, CodeTable) else table.values()):
            got = c if isinstance(c, tuple) else _plain_code(c)
            if got is None or not _plain_types(got):
                record = table[got[0]] if isinstance(c, tuple) and got is not None else c
                assert isinstance(record, Code)
                yield encode({"layer": layer, **record.trail()})
                continue
            unit, status, label, value, text, source, detail = got
            if len(done) >= _HELD or len(texts) >= _HELD:
                done.clear()
                texts = {None: "null"}
            seen = done.get(id(detail))
            if seen is None:
                seen = done[id(detail)] = (detail, encode(detail.trail()))
            st, lab, src = texts.get(status), texts.get(label), texts.get(source)
            if st is None:
                st = texts[status] = encode(status)
            if lab is None:
                lab = texts[label] = encode(label)
            if src is None:
                src = texts[source] = encode(source)
            yield (f'{head}{encode(unit)}, "status": {st}, "label": {lab}, '
                   f'"value": {"null" if value is None else _float_text(value)}, '
                   f'"text": {"null" if text is None else encode(text)}, "source": {src}, "detail": {seen[1]}}}')


def _plain_types(f: CodeFields) -> bool:
    """The values are what `model_dump(mode="json")` writes as they are (text, or None)."""
    unit, status, label, _, text, source, _ = f
    return (type(unit) is str and type(status) is str and type(source) is str
            and (label is None or type(label) is str) and (text is None or type(text) is str))


__all__ = ["code_lines", "response_lines"]
