"""The report's item index (`report.answers._Index`, issue 42) reads the plan's columns
and gives, for a (stimulus, cell), the plan items the lists of every item it replaced
gave: those of the pair in plan order, else those of the stimulus, else none."""

from __future__ import annotations

from collections import defaultdict

from biasaudit.plan import PlanItem
from biasaudit.report.answers import _Index
from tests.unit.plan.test_item_table import _plan


def _old(items: list[PlanItem], stimulus: str, cell: str) -> list[PlanItem]:
    by_cell: dict[tuple[str, str], list[PlanItem]] = defaultdict(list)
    by_stimulus: dict[str, list[PlanItem]] = defaultdict(list)
    for it in items:
        by_cell[(it.stimulus, it.cell)].append(it)
        by_stimulus[it.stimulus].append(it)
    return by_cell.get((stimulus, cell)) or by_stimulus.get(stimulus) or []


def test_index_gives_the_items_the_lists_gave() -> None:
    plan, want = _plan()
    index = _Index(plan)
    cells = list(dict.fromkeys(it.cell for it in want))
    for stimulus in ["s0", "s3", "s6", "nope"]:
        for cell in [*cells, "", "other"]:
            got = index.of(stimulus, cell)
            exp = _old(want, stimulus, cell)
            assert list(got) == exp and len(got) == len(exp)
            if exp:
                assert got[len(exp) - 1] == exp[-1] and got[1:3] == exp[1:3]
