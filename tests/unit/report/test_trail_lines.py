"""responses.jsonl and codes.jsonl lines from report/trails.py (issue 42: encoded from
the records' fields, the shared parts once) are byte for byte the lines the earlier
writer made from each record's `model_dump` through `json_line`: on hostile text (every
line break, a lone surrogate, quotes), NaN and infinite values, an int where a float is
declared, a request with a stimulus and one without, a record subclass, and across the
writer's chunk boundary."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import biasaudit.registry  # noqa: F401  (installs the evidence resolver)
from biasaudit._util import trail
from biasaudit._util.trail import json_line, write_encoded_lines, write_json_lines
from biasaudit.coding.coders.rules import RulesEvidence
from biasaudit.plan.requests import Request
from biasaudit.records.codes import Code, CodeDetail, CodeTable, Truncation
from biasaudit.records.responses import Response, ResponseTable
from biasaudit.report.trails import code_lines, response_lines

HOSTILE = 'w\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\x00 "q" \\ \ud800 é'


class MyCode(Code):
    """A subclass: written through its own dump."""


def _old_response_rows(plan: Any, responses: Any) -> list[dict[str, object]]:
    # the writer before issue 42's report work (runner/pipeline._trail_rows)
    levels = {c.id: dict(c.levels) for c in plan.cells}
    rows = []
    for it in plan.items:
        req = plan.requests[it.key]
        resp = responses[it.key]
        rows.append({
            "cell": it.cell, "levels": levels.get(it.cell, {}), "stimulus": it.stimulus, "slot": it.slot,
            "variant": it.variant, "sample": it.sample, "key": it.key,
            "request": req.model_dump(exclude={"key"}),
            "status": resp.status, "error": resp.error, "error_kind": resp.error_kind,
            "attempts": resp.attempts, "output": resp.output})
    return rows


def _plan(n: int) -> tuple[Any, ResponseTable]:
    cells = [SimpleNamespace(id="c0", levels={"gender": "woman", "x": HOSTILE}),
             SimpleNamespace(id='c"1', levels={})]
    items, requests, responses = [], {}, ResponseTable()
    for i in range(n):
        key = f"k{i:05d}"
        cell = ("c0", 'c"1', "not-a-cell")[i % 3]
        items.append(SimpleNamespace(cell=cell, stimulus=f"s{i} {HOSTILE[:i % 13]}", slot="prompt", variant=i % 2,
                                     sample=i % 4, key=key))
        stim = {"id": f"s{i}", "fields": {"t": HOSTILE}} if i % 5 == 0 else None
        if i % 7 == 0:
            requests[key] = Request(key=key, kind="score", text=f"text {HOSTILE}", text_pair="pair", sample=i % 4,
                                    params={"temperature": 0.5}, stimulus=stim)
        else:
            requests[key] = Request(key=key, kind="generate", messages=[
                {"role": "system", "content": "sys"}, {"role": "user", "content": f"ask {i} {HOSTILE}"}],
                params={"max_tokens": 20, "temperature": 0.0}, sample=i % 4, stimulus=stim)
        if i % 11 == 0:
            responses[key] = Response(key=key, status="failed", error="timeout", error_kind="timeout", attempts=3)
        else:
            responses[key] = Response(key=key, status="ok", output={"text": f"ans {HOSTILE} {i}",
                                                                     "logprob": -1.5 if i % 2 else math.nan})
    return SimpleNamespace(cells=cells, items=items, requests=requests), responses


def test_responses_lines_equal_the_earlier_writers() -> None:
    plan, responses = _plan(300)
    got = "".join(trail._safe(line) + "\n" for line in response_lines(plan, responses))
    assert got == "".join(json_line(r) for r in _old_response_rows(plan, responses))


def test_items_out_of_the_tables_order_or_asking_one_request_twice() -> None:
    # the writer reads the table alongside the items while they keep its order
    plan, responses = _plan(60)
    plan.items = plan.items[10:30] + plan.items[:10] + plan.items[25:35] + plan.items[59:] + plan.items[35:]
    got = "".join(trail._safe(line) + "\n" for line in response_lines(plan, responses))
    assert got == "".join(json_line(r) for r in _old_response_rows(plan, responses))


def test_a_request_subclass_or_model_construct_goes_through_its_dump() -> None:
    plan, responses = _plan(5)
    plan.requests["k00001"] = Request.model_construct(key="k00001", kind="generate", text="t", sample=1)
    got = "".join(trail._safe(line) + "\n" for line in response_lines(plan, responses))
    assert got == "".join(json_line(r) for r in _old_response_rows(plan, responses))


def _codes() -> dict[str, CodeTable | dict[str, Code]]:
    sel, val = CodeTable(), CodeTable()
    for i in range(300):
        uid = f"u{i}|{HOSTILE}"
        if i % 4 == 0:
            sel[uid] = Code(unit=uid, status="abstain", source="rules", detail=CodeDetail(reason=f"none {HOSTILE}"))
        elif i % 4 == 1:
            sel[uid] = Code(unit=uid, status="coded", label=f"E{HOSTILE}", source="rules",
                            detail=RulesEvidence(span=(0, 3), token="Yes", rule=1))
        else:
            sel[uid] = Code(unit=uid, status="failed", source="rules")
        value = (0.25 * i, math.nan, math.inf, -0.0)[i % 4]
        val[uid] = Code(unit=uid, status="coded", value=value, text=f"masked {HOSTILE}", source="fallback:parser",
                        detail=CodeDetail(input_truncated=Truncation(chars=900, kept=800)))
    # in a table too: an int value (kept aside from the float column) and a code keyed
    # apart from its unit (kept whole), each written through its record's dump
    sel["int"] = Code.model_construct(unit="int", status="coded", value=3, source="rules")
    sel["apart"] = Code(unit="elsewhere", status="coded", label="E", source="rules")
    odd = {
        "int": Code.model_construct(unit="int", status="coded", value=3, source="rules"),  # not validated
        "sub": MyCode(unit="sub", status="coded", label="A", source="rules"),
        "dict": Code(unit="dict", status="coded", label="A", source="rules", detail=CodeDetail()),
    }
    return {"selection": sel, "value": val, "odd": odd}


def test_codes_lines_equal_the_earlier_writers() -> None:
    codes = _codes()
    got = "".join(trail._safe(line) + "\n" for line in code_lines(codes))
    want = "".join(json_line({"layer": layer, **c.trail()}) for layer, t in codes.items() for c in t.values())
    assert got == want


@pytest.mark.parametrize("n", [0, 1, trail.CHUNK_LINES - 1, trail.CHUNK_LINES, 2 * trail.CHUNK_LINES + 5])
def test_the_chunked_writer_writes_what_one_line_at_a_time_did(tmp_path: Path, n: int) -> None:
    rows = [{"i": i, "t": HOSTILE if i % 3 else "plain", "v": math.nan} for i in range(n)]
    write_json_lines(tmp_path / "a.jsonl", rows, kind="responses")
    write_encoded_lines(tmp_path / "b.jsonl", (trail.encode(r) for r in rows), kind="responses")
    want = (json_line(trail.header("responses")) + "".join(json_line(r) for r in rows)).encode("utf-8")
    assert (tmp_path / "a.jsonl").read_bytes() == want == (tmp_path / "b.jsonl").read_bytes()
    got = [r for _, r in trail.json_records((tmp_path / "a.jsonl").read_bytes(), file="a", kind="responses")]
    assert [r["t"] for r in got] == [r["t"] for r in rows]


def test_the_writer_holds_a_chunk_not_the_file(tmp_path: Path) -> None:
    """A 12 MB trail is written with a few MB at most traced (one chunk, joined and
    encoded), never the whole file's text."""
    import tracemalloc

    def rows() -> Any:
        for i in range(40_000):
            yield {"i": i, "pad": "x" * 280}

    tracemalloc.start()
    try:
        write_json_lines(tmp_path / "big.jsonl", rows(), kind="responses")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (tmp_path / "big.jsonl").stat().st_size > 12_000_000
    assert peak < 4_000_000, peak
