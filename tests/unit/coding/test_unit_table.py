"""The coding stage's units as a view of the plan's items (issue 42): `make_units` holds
no object per plan item (a `UnitTable`), each read gives the unit a list of `Unit`s held
(the expected units below are built by hand from the items, not by the code under test),
and the code tables' index over those units (`PlanUnitIndex`) holds no id string per
unit yet finds every unit by its id, refuses every id it does not hold, and keeps units
added later as a plain index would."""

from __future__ import annotations

import gc
import tracemalloc

from biasaudit.coding.stage import make_units
from biasaudit.plan import PlanItem
from biasaudit.records.codes import Code, CodeTable, PlanUnitIndex, Unit, UnitIndex, UnitTable

CELLS = {f"c{k}": {"task": f"t{k % 3}", "role": f"r{k}"} for k in range(7)}
FIELDS = {f"s{k}": {"statement": f"statement {k}", "n": k} for k in range(11)}


def _items(n: int) -> list[PlanItem]:
    return [PlanItem(f"c{i % 7}", f"s{i % 11}", "" if i % 2 else "a|b", i % 5, i // 385, f"key{i}") for i in range(n)]


def _vars(levels: dict[str, str]) -> dict[str, str]:
    return {"task_word": levels["task"].upper()}


def test_each_unit_read_is_the_unit_of_its_plan_item() -> None:
    items = _items(800)
    units = make_units(items, CELLS, FIELDS, _vars)
    expected = [Unit(id=f"{it.cell}|{it.stimulus}|{it.slot}|{it.variant}|{it.sample}", cell=it.cell,
                     stimulus=it.stimulus, slot=it.slot, variant=it.variant, sample=it.sample, key=it.key,
                     levels=CELLS[it.cell], fields=FIELDS[it.stimulus], vars=_vars(CELLS[it.cell])) for it in items]
    assert isinstance(units, UnitTable) and len(units) == 800
    assert list(units) == expected
    assert [units[i] for i in (0, 399, 799, -1)] == [expected[0], expected[399], expected[799], expected[-1]]
    assert units[10:20] == expected[10:20]
    assert list(units.ids()) == [u.id for u in expected]


def test_the_plan_index_finds_every_unit_and_nothing_else() -> None:
    items = _items(3000)
    units = make_units(items, CELLS, FIELDS, _vars)
    index = PlanUnitIndex(units)
    plain = UnitIndex(u.id for u in units)
    assert len(index) == len(plain) == 3000
    for k, uid in enumerate(units.ids()):
        assert index.at(uid) == plain.at(uid) == k
        assert index.id_at(k) == uid
    for odd in ("", "c0|s0|a|b|0|1", "c0|s0||0|0 ", "c9|s0||0|0", "c1|s1||1|99"):
        assert index.at(odd) is None and plain.at(odd) is None
    # a unit the plan does not hold is added after the plan's units, once
    assert index.add("extra") == 3000 and index.add("extra") == 3000 and index.at("extra") == 3000
    assert index.id_at(3000) == "extra" and len(index) == 3001


def test_a_code_table_over_the_plan_index_reads_as_a_dict() -> None:
    units = make_units(_items(500), CELLS, FIELDS, _vars)
    index = PlanUnitIndex(units)
    codes = {u.id: Code(unit=u.id, status="coded", label=f"L{i % 3}", source="rules")
             for i, u in enumerate(reversed(list(units)))}
    table = CodeTable(index=index)
    for uid, c in codes.items():
        table[uid] = c
    table["zzz"] = Code(unit="zzz", status="abstain")
    assert list(table) == [*codes, "zzz"] and len(table) == 501
    assert all(table[uid] == c for uid, c in codes.items())
    assert "nope" not in table and table.get("nope") is None


def test_the_units_and_their_index_hold_next_to_nothing_per_plan_item() -> None:
    """On main (a list of Unit records, and an index holding each id), about 250 bytes a
    unit were held from coding to the end of the report."""
    items = _items(20_000)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        units = make_units(items, CELLS, FIELDS, _vars)
        index = PlanUnitIndex(units) if isinstance(units, UnitTable) else UnitIndex(u.id for u in units)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(index) == len(units) == 20_000
    assert held / 20_000 < 40, f"{held / 20_000:.0f} bytes a unit"
