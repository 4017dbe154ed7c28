"""The answers' table a run holds from its run stage to its report (engine/answers.py,
issue 42): every answer reads back equal to the one added (fields, fields set, output
types bit for bit), cached and new answers together, only the plan's keys; and it holds
a small fraction of what the run held before (measured with tracemalloc on a real run
of the engine: a dict of key strings and tuple rows, ~420 bytes an answer, on main)."""

from __future__ import annotations

import gc
import math
import tracemalloc
from pathlib import Path

import pytest

from biasaudit.engine import execute_plan, execute_requests
from biasaudit.engine.answers import CHUNK, AnswerTable
from biasaudit.plan.requests import RequestTable
from biasaudit.records.responses import Response
from biasaudit.runner.pipeline import prepare
from biasaudit.spec.compose import compose
from biasaudit.store import Store
from tests.conftest import isolation
from tests.helpers import tp_spec
from tests.integration.test_golden_scale import scale_spec


def _table(n: int) -> RequestTable:
    import hashlib

    t = RequestTable("generate", {})
    for i in range(n):
        t.add_parts(hashlib.sha256(str(i).encode()).hexdigest(), f"prompt {i}", None, 0, None, None)
    t.pack()
    return t


def _answers(keys: list[str]) -> dict[str, Response]:
    out: dict[str, Response] = {}
    for i, key in enumerate(keys):
        if i % 7 == 0:
            out[key] = Response(key=key, status="failed", error="HTTP 500", error_kind="server_error", attempts=3)
        elif i % 11 == 0:
            out[key] = Response(key=key, status="ok", output=None)
        else:
            # types marshal must keep: a tuple, -0.0, nan, a bool, an int that is not a float, key order
            out[key] = Response(key=key, status="ok", latency_s=0.001 * i + 1e-17,
                                output={"z": 1, "text": f"Yes {i}.", "top": [("a", -0.0), ("b", 1e-300)],
                                        "flag": True, "output_tokens": i, "float": float(i)})
    return out


def _same(got: Response, want: Response) -> None:
    assert got.model_dump_json() == want.model_dump_json()
    assert got.model_fields_set == want.model_fields_set
    if want.output is not None:
        assert got.output is not None
        assert list(got.output) == list(want.output)
        assert [type(v) for v in got.output.values()] == [type(v) for v in want.output.values()]
        assert repr(got.output) == repr(want.output)  # -0.0 included


def test_answers_read_back_as_added_in_the_order_added_before_and_after_sealing() -> None:
    requests = _table(3 * CHUNK + 17)
    keys = list(requests)
    answers = _answers(keys)
    order = keys[::-1][: len(keys) - 40]  # out of plan order; the last 40 of the plan's keys never answered
    table = AnswerTable(requests)
    for k in order:
        table[k] = answers[k]
    for stage in ("open", "sealed"):
        assert list(table) == order and len(table) == len(order), stage
        for k in order:
            _same(table[k], answers[k])
            assert table.status(k) == answers[k].status and table.output(k) == answers[k].output
            assert k in table
        for k in keys[:40]:
            assert k not in table and table.status(k) is None and table.output(k) is None and table.get(k) is None
        table.seal()
    # a sealed block written again: the new answer read back, the order kept (a dict's)
    k = order[5]
    again = Response(key=k, status="ok", output={"text": "again"})
    table[k] = again
    _same(table[k], again)
    assert list(table) == order
    table.seal()
    _same(table[k], again)


def test_keys_that_are_no_request_refused_and_absent() -> None:
    table = AnswerTable(_table(10))
    with pytest.raises(KeyError):
        table["f" * 64] = Response(key="f" * 64, status="ok")
    assert "f" * 64 not in table and 3 not in table and "F" * 64 not in table


def test_a_response_keyed_apart_or_not_marshallable_is_kept_whole() -> None:
    requests = _table(CHUNK)
    keys = list(requests)
    table = AnswerTable(requests)

    class Odd(float):  # a backend's own object in an output: marshal refuses it
        pass

    apart = Response(key="elsewhere", status="ok", output={"text": "x"})
    odd = Response.model_construct(key=keys[1], status="ok", output={"p": Odd(0.5)})
    table[keys[0]] = apart
    table[keys[1]] = odd
    for k in keys[2:]:
        table[k] = Response(key=k, status="ok", output={"text": k[:6]})
    assert table[keys[0]] is apart and table.status(keys[0]) == "ok"
    assert table[keys[1]].output == {"p": 0.5} and type(table.output(keys[1])["p"]) is Odd
    nan = Response(key=keys[2], status="ok", output={"p": math.nan})
    table[keys[2]] = nan
    table.seal()
    assert math.isnan(table.output(keys[2])["p"])
    assert table[keys[7]].output == {"text": keys[7][:6]}


def test_a_plain_mapping_of_requests_works_the_same() -> None:
    requests = _table(40)
    plain = dict(requests.items())
    keys = list(plain)
    answers = _answers(keys)
    table = AnswerTable(plain)
    for k in keys[3:]:
        table[k] = answers[k]
    table.seal()
    assert list(table) == keys[3:]
    for k in keys[3:]:
        _same(table[k], answers[k])
    assert keys[0] not in table


def test_resume_from_a_cache_shared_with_other_runs_reads_only_this_plans_answers(workdir: Path) -> None:
    from biasaudit.backends.scripted import ScriptedBackend

    prep = prepare(compose([f"spec={tp_spec(workdir, 9)}", "model=scripted", *isolation(workdir)]))
    store = Store(workdir / "c.sqlite")
    keys = list(prep.plan.requests)
    first = prep.plan.requests[keys[0]]
    others = [f"{i:064x}" for i in range(30)]  # another run's answers in the same cache
    for k in others:
        store.put(first.model_copy(update={"key": k, "text": k}), Response(key=k, status="ok", output={"t": k}))
    half = {k: prep.plan.requests[k] for k in keys[::2]}
    execute_requests(half, store, lambda: ScriptedBackend({"fail_every": 4}), progress=False)
    got, stats = execute_plan(prep.plan, store, lambda: ScriptedBackend({}), progress=False)
    assert stats.cache_hits == len(half) and stats.calls == len(keys) - len(half)
    assert sorted(got) == sorted(keys) and not set(got) & set(others)
    stored = store.get_many(keys)
    for k in keys:  # read back from the cache (in its canonical key order) or as the backend gave them
        assert got[k].model_dump() == stored[k].model_dump()
    for k in half:
        _same(got[k], stored[k])
    assert set(list(got)[: len(half)]) == set(half)  # cached first, then the calls


def test_a_runs_answers_are_held_in_under_a_tenth_of_the_bytes_of_before(workdir: Path) -> None:
    """The paper-scale grid at 2,005 requests (scripted answers). On main the engine's
    table held ~420 B an answer here (key string 113, dict 21, tuple 96, output dict
    184); the bound is 40 B."""
    from biasaudit.backends.scripted import ScriptedBackend

    prep = prepare(compose([f"spec={scale_spec(workdir / 'spec', 5)}", "model=scripted", *isolation(workdir)]))
    store = Store(workdir / "c.sqlite")
    n = len(prep.plan.requests)
    assert n == 2005
    gc.collect()
    tracemalloc.start()
    try:
        responses, _ = execute_plan(prep.plan, store, lambda: ScriptedBackend({}), progress=False)
        gc.collect()
        snap = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    # what the plan's own table keeps decoded (its last blocks, read while the engine ran) is the plan's
    # (and the fixed-size caches of the store's connection and of Python's isinstance checks
    # against abstract classes, filled the first time a type is checked: not a cost an answer)
    kept = sum(s.size for s in snap.filter_traces([tracemalloc.Filter(False, "*/plan/requests.py"),
                                                   tracemalloc.Filter(False, "*/store/sqlite.py"),
                                                   tracemalloc.Filter(False, "<frozen abc>")]).statistics("filename"))
    assert len(responses) == n
    assert kept / n < 40, f"{kept / n:.0f} bytes an answer"
