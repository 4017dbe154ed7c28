"""The coding summary pools each label's share over the units as columns (issue 42): the
same estimates, bit for bit, as `stats.disaggregate.pooled` over one `Obs` per unit,
without building those rows (13 labels x 100,250 units were 1.3 million row objects),
from integer columns (`summary._Coded`, `reliability.UnitColumns`)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

import biasaudit.stats.disaggregate as disaggregate
from biasaudit.coding import summary
from biasaudit.coding.reliability import UnitColumns
from biasaudit.records.codes import Code, Unit
from biasaudit.stats.disaggregate import Obs, mean, pooled, proportion


def _coded() -> list[tuple[Unit, str | None, float | None]]:
    out = []
    for i in range(600):
        s, cell = f"s{i % 37}", f"c{i % 5}"
        u = Unit(id=f"{cell}|{s}|p|{i}|0", cell=cell, stimulus=s, slot="p", variant=i, sample=0, key=f"k{i}",
                 levels={}, fields={}, vars={})
        out.append((u, "ABCD"[(i * 7 + i // 11) % 4] if i % 13 else None, ((i * 37) % 101) / 10.0))
    return out


def _columns(coded: list[tuple[Unit, str | None, float | None]]) -> tuple[list[Unit], UnitColumns, Any]:
    """The summary's columns of these coded units (plus one uncoded unit, left out)."""
    extra = Unit(id="x|s0|p|0|0", cell="c0", stimulus="s0", slot="p", variant=0, sample=0, key="kx", levels={},
                 fields={}, vars={})
    units = [u for u, _, _ in coded] + [extra]
    codes = {u.id: Code(unit=u.id, status="coded", label=label, value=v) for u, label, v in coded}
    codes[extra.id] = Code(unit=extra.id, status="failed")
    return units, UnitColumns(units), summary._Coded(units, codes)


def test_label_shares_equal_the_row_pooling_and_build_no_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    coded = _coded()
    labels = ["A", "B", "C", "D", "E"]
    # the reference: pooled over one Obs per unit, as the summary computed it before
    want = {lab: pooled([Obs(cell=u.cell, cluster=u.stimulus, value=1.0 if label == lab else 0.0)
                         for u, label, _ in coded], proportion) for lab in labels}
    made = [0]

    class Counted(Obs):
        def __init__(self, *a: Any, **k: Any) -> None:
            made[0] += 1
            super().__init__(*a, **k)

    monkeypatch.setattr(disaggregate, "Obs", Counted)
    units, cols, columns = _columns(coded)
    got = summary._pooled_labels(SimpleNamespace(value_type="label"), cols, columns, labels)  # type: ignore[arg-type]
    assert made[0] == 0
    assert {k: v.model_dump() for k, v in got.items()} == {k: v.model_dump() for k, v in want.items()}


def test_value_mean_equals_the_row_pooling() -> None:
    coded = _coded()
    want = pooled([Obs(cell=u.cell, cluster=u.stimulus, value=v) for u, _, v in coded if v is not None], mean)
    _, cols, columns = _columns(coded)
    got = summary._pooled_labels(SimpleNamespace(value_type="number"), cols, columns, [])  # type: ignore[arg-type]
    assert got["mean"].model_dump() == want.model_dump()
