"""The compact response table the engine returns (issue 42): every response reads back
equal to the one added, in the order added, and the table holds a fraction of the
records' memory."""

from __future__ import annotations

from biasaudit.records.responses import Response, ResponseTable
from tests.unit.plan.test_request_table import _deep


def _responses() -> dict[str, Response]:
    out: dict[str, Response] = {}
    for i in range(200):
        key = f"{i:064x}"
        if i % 5 == 0:
            out[key] = Response(key=key, status="failed", error="HTTP 500", error_kind="server_error", attempts=3)
        else:
            out[key] = Response(key=key, status="ok", output={"text": f"Yes {i}.", "output_tokens": 2},
                                latency_s=0.01 * i)
    return out


def test_every_response_reads_back_as_added() -> None:
    responses = _responses()
    table = ResponseTable(responses)
    assert list(table) == list(responses) and len(table) == len(responses)
    for key, want in responses.items():
        got = table[key]
        assert got == want and got.model_dump() == want.model_dump() and got.model_dump_json() == want.model_dump_json()
        assert got.model_fields_set == want.model_fields_set and got.ok == want.ok
        assert table.status(key) == want.status
    assert table.status("nope") is None and table.get("nope") is None and "nope" not in table
    assert dict(table.items()) == responses


def test_a_response_keyed_apart_is_kept_whole() -> None:
    r = Response(key="a", status="ok", output={"text": "x"})
    table = ResponseTable({"b": r})
    assert table["b"] is r and table.status("b") == "ok"


def test_response_fields_are_the_ones_the_table_keeps() -> None:
    assert list(Response.model_fields) == ["key", "status", "output", "error", "error_kind", "latency_s", "attempts"]


def test_held_in_a_fraction_of_the_records_memory() -> None:
    responses = _responses()
    table = ResponseTable(responses)
    shared = {id(k) for k in responses} | {id(r.output) for r in responses.values()}
    whole = _deep(responses, set(shared))
    compact = _deep(table, set(shared))
    assert compact < 0.3 * whole, (compact, whole)
