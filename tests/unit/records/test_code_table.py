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
