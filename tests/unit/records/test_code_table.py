"""The compact code table the coding stage gives each layer (issue 42): every code
reads back equal to the one added (values, evidence record, fields set, codes.jsonl
line), in the order added, and the table holds a fraction of the records' memory."""

from __future__ import annotations

from biasaudit.records.codes import Code, CodeDetail, CodeTable, Truncation
from tests.unit.plan.test_request_table import _deep


def _codes() -> dict[str, Code]:
    import biasaudit.registry  # noqa: F401  (installs the evidence resolver)
    from biasaudit.coding.coders.rules import RulesEvidence

    out: dict[str, Code] = {}
    for i in range(200):
        uid = f"task=bj|s{i}|prompt|{i % 3}|0"
        if i % 4 == 0:
            out[uid] = Code(unit=uid, status="abstain", source="rules", detail=CodeDetail(reason="no rule fired"))
        elif i % 4 == 1:
            out[uid] = Code(unit=uid, status="coded", label="E", source="rules",
                            detail=RulesEvidence(span=(0, 3), token="Yes", rule=1))
        elif i % 4 == 2:
            out[uid] = Code(unit=uid, status="coded", value=0.25 * i, text=f"masked {i}", source="fallback:parser",
                            detail=CodeDetail(input_truncated=Truncation(chars=900, kept=800)))
        else:
            out[uid] = Code(unit=uid, status="failed", source="rules")
    return out


def test_every_code_reads_back_as_added() -> None:
    codes = _codes()
    table = CodeTable(codes)
    assert list(table) == list(codes) and len(table) == len(codes)
    for uid, want in codes.items():
        got = table[uid]
        assert got == want and got.trail() == want.trail() and got.model_dump() == want.model_dump()
        assert got.model_fields_set == want.model_fields_set and type(got.detail) is type(want.detail)
        assert got.detail.model_fields_set == want.detail.model_fields_set
        assert got.model_copy(update={"source": "x"}).source == "x" and table[uid].source == want.source
    assert dict(table.items()) == codes and table.get("nope") is None and "nope" not in table


def test_a_code_keyed_apart_from_its_unit_is_kept_whole() -> None:
    c = Code(unit="a", status="coded", label="E")
    table = CodeTable({"b": c})
    assert table["b"] is c


def test_code_fields_are_the_ones_the_table_keeps() -> None:
    # a new field on Code must be added to CodeTable's row, or it would be lost on reading
    assert list(Code.model_fields) == ["unit", "status", "label", "value", "text", "source", "detail"]


def test_held_in_a_fraction_of_the_records_memory() -> None:
    codes = _codes()
    table = CodeTable(codes)
    shared = {id(c.unit) for c in codes.values()} | {id(c.detail) for c in codes.values()}
    whole = _deep(codes, set(shared))
    compact = _deep(table, set(shared))
    assert compact < 0.3 * whole, (compact, whole)


def test_new_code_is_the_record_code_gives() -> None:
    # the coders' fast constructor (issue 42): equal values, fields set and line to Code(...)
    from biasaudit.coding.coders.rules import RulesEvidence
    from biasaudit.records.codes import new_code

    ev = RulesEvidence(span=(0, 3), token="Yes", rule=1)
    for kw in ({"label": "E", "source": "rules"}, {"value": 0.5, "source": "judge_panel"}, {"label": None},
               {"source": "rules"}):
        want = Code(unit="u1", status="coded", detail=ev, **kw)  # type: ignore[arg-type]
        got = new_code("u1", "coded", ev, **kw)
        assert got == want and got.trail() == want.trail() and got.model_fields_set == want.model_fields_set
        assert got.detail is ev
    import pytest

    with pytest.raises(TypeError):  # Code would make it 1.0: refused rather than kept an int
        new_code("u1", "coded", ev, value=1)
    with pytest.raises(TypeError):
        new_code("u1", "coded", ev, colour="red")


def test_a_shared_unit_index_keeps_each_code_in_a_few_dozen_bytes() -> None:
    # issue 42: the tuple-per-unit table held ~134 bytes per code (a dict entry and a
    # 7-tuple); with the run's shared unit index a code is a few column entries
    from biasaudit.coding.coders.rules import RulesEvidence
    from biasaudit.records.codes import UnitIndex, new_code

    ids = [f"task=bj|s{i // 401}|prompt|{i % 401}|0" for i in range(4000)]
    ev = [RulesEvidence(span=(0, 3), token="Yes", rule=1), CodeDetail(reason="no rule fired")]
    index = UnitIndex(ids)
    table = CodeTable(index=index)
    for i, uid in enumerate(ids):
        table[uid] = new_code(uid, "coded" if i % 2 else "abstain", ev[i % 2], label="E" if i % 2 else None,
                              source="rules")
    shared = {id(index), id(index.ids), id(index.pos), *map(id, ids), *map(id, ev)}
    per_code = _deep(table, shared) / len(ids)
    assert per_code < 60, per_code
    assert [table[u].label for u in ids[:4]] == [None, "E", None, "E"] and list(table) == ids


def test_columns_keep_every_kind_of_value() -> None:
    # a value that is not a float (a record built without validation) is kept as given,
    # a code set again keeps its place, a text only where there is one
    table = CodeTable()
    a = Code.model_construct(unit="a", status="coded", value=3, source="x")
    table["a"] = a
    table["b"] = Code(unit="b", status="coded", value=float("nan"), text="t")
    table["c"] = Code(unit="c", status="failed")
    table["a"] = Code(unit="a", status="coded", label="E", value=0.5)
    assert list(table) == ["a", "b", "c"]
    assert table["a"].value == 0.5 and table["a"].label == "E" and table["a"].source == ""
    b = table["b"]
    assert b.value is not None and b.value != b.value and b.text == "t" and table["c"].text is None
    table["d"] = a.model_copy(update={"unit": "d"})
    assert type(table["d"].value) is int and table["d"].value == 3
