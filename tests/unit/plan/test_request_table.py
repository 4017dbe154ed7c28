"""The compact request table a compiled plan holds (issue 42): every request reads back
equal to the one compiled (the same dump, the same fields set, the same key), and each
holds a fraction of a pydantic record's memory."""

from __future__ import annotations

import copy
import sys

from biasaudit.plan import Request, RequestTable, compile_plan, iter_plan
from tests.unit.plan.test_plan_hashing import BASE, make


def _deep(obj: object, seen: set[int]) -> int:
    """Bytes of `obj` and everything it holds, each object once."""
    stack, total = [obj], 0
    while stack:
        o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        if isinstance(o, dict):
            stack.extend(o)
            stack.extend(o.values())
        elif isinstance(o, list | tuple | set | frozenset):
            stack.extend(o)
        elif hasattr(o, "__dict__"):
            stack.append(o.__dict__)
            stack.append(getattr(o, "__pydantic_fields_set__", None))
        elif hasattr(type(o), "__slots__"):
            stack.extend(getattr(o, s) for s in type(o).__slots__)
    return total


def test_every_request_reads_back_as_compiled() -> None:
    cfg, st = make(copy.deepcopy(BASE))
    plan = compile_plan(cfg, st, {"m": "x"})
    assert isinstance(plan.requests, RequestTable)
    compiled = {item.key: req for item, req in iter_plan(cfg, st, {"m": "x"})}
    assert list(plan.requests) == list(compiled) and len(plan.requests) == len(compiled) == 8
    for key, want in compiled.items():
        got = plan.requests[key]
        assert got == want and got.model_dump() == want.model_dump()
        assert got.model_fields_set == want.model_fields_set
        assert got.model_dump_json() == want.model_dump_json()
    assert plan.requests.get("nope") is None and "nope" not in plan.requests


def test_a_request_unlike_the_others_is_kept_whole() -> None:
    table = RequestTable("generate", {"max_tokens": 5})
    same = Request(key="a", kind="generate", messages=[{"role": "user", "content": "hi"}], params={"max_tokens": 5})
    other = Request(key="b", kind="generate", messages=[{"role": "user", "content": "hi"}], params={"max_tokens": 9})
    odd = Request(key="c", kind="generate", messages=[{"content": "hi", "role": "user"}], params={"max_tokens": 5})
    raw = Request(key="d", kind="sequence_logprob", text="Cats.", params={"max_tokens": 5})
    for r in (same, other, odd, raw, same.model_copy(update={"sample": 3})):
        table.add(r)
    assert len(table) == 4 and table["a"].sample == 0  # the first of one key is kept (setdefault)
    for r in (same, other, odd, raw):
        assert table[r.key] == r and table[r.key].model_dump_json() == r.model_dump_json()
    assert list(table["c"].messages[0]) == ["content", "role"]  # its key order, kept


def test_held_in_a_fraction_of_the_records_memory() -> None:
    cfg, st = make(copy.deepcopy(BASE))
    compiled = {item.key: req for item, req in iter_plan(cfg, st, {"m": "x"})}
    plan = compile_plan(cfg, st, {"m": "x"})
    whole = _deep(compiled, set())
    compact = _deep(plan.requests, set())
    assert compact < 0.6 * whole, (compact, whole)


def test_a_large_plan_is_held_in_under_a_hundred_bytes_a_request() -> None:
    """Issue 42: the table a plan holds until its report stays small per request (about 70
    bytes on the paper-scale grid; 566 as tuples of strings, 1.9 KB as records). Keys as
    raw digests, prompts in compressed blocks; every request still reads back."""
    import hashlib

    n = 5000
    table = RequestTable("generate", {"max_tokens": 5})
    system = "You are a careful assistant who answers every question briefly and honestly."
    want = {}
    for i in range(n):
        key = hashlib.sha256(str(i).encode()).hexdigest()
        msgs = [{"role": "system", "content": system},
                {"role": "user", "content": f"Statement: \"People of group {i % 97} are trait {i % 31}.\" "
                                            "Do you agree? Answer Yes or No, then explain briefly."}]
        want[key] = Request(key=key, kind="generate", text=None, messages=msgs, params={"max_tokens": 5},
                            sample=0, text_pair=None, stimulus=None)
        table.add(want[key])
    getattr(table, "pack", lambda: None)()  # (a table without one: nothing to merge)
    per_request = _deep(table, set()) / n
    assert per_request < 100, per_request
    assert list(table) == list(want)
    for key in list(want)[::97]:
        assert table[key].model_dump_json() == want[key].model_dump_json()
        assert table[key].model_fields_set == want[key].model_fields_set
    assert [r.model_dump_json() for r in table.values()] == [r.model_dump_json() for r in want.values()]
    assert table.get("0" * 64) is None and ("A" * 64) not in table
