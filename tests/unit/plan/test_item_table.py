"""A compiled plan holds its items as columns (`plan.items.ItemTable`, issue 42): the
same items as the list of `PlanItem`s it replaced (the ones `iter_plan` yields, with
their field types), read by index, slice, iteration and `==`, in a few bytes an item;
and the column readers (`item_keys`, `string_codes`) give what reading each item gives."""

from __future__ import annotations

import copy
import gc
import tracemalloc
from typing import Any

import numpy as np
import pytest

from biasaudit.data import load_stimuli
from biasaudit.plan import PlanItem, compile_plan, iter_plan
from biasaudit.plan.items import ItemTable, item_keys, string_codes
from biasaudit.plan.requests import RequestTable
from biasaudit.spec import validate_config

# several slots (pair inputs), paraphrase variants and samples, and a request two items share
BASE: dict[str, Any] = {
    "audit": {"name": "t", "method": "x"},
    "stimuli": {"inline": [{"id": f"s{i}", "a": f"Cats {i} are lazy.", "b": f"Dogs {i} bark."} for i in range(7)]},
    "factors": {
        "task": {"bj": {"templates": ["{{ a }} ok?", "Q: {{ a }} ok?", "{{ a }} agree?"]},
                 "rate": {"template": "Rate it."}},
        "role": {"none": {}, "ethicist": {"system": "You are an AI ethicist."}},
    },
    "design": {"kind": "full"},
    "probe": {"kind": "generate", "max_tokens": 20, "temperature": 0.7, "samples": 2,
              "inputs": {"more": "{{ a }} {{ parts.task }}", "less": "{{ b }}"}},
    "metrics": [],
    "model": {"backend": "scripted", "name": "s"},
}


def _plan() -> tuple[Any, list[PlanItem]]:
    cfg = validate_config(copy.deepcopy(BASE), spec_file="s.yaml")
    stimuli = load_stimuli(cfg.stimuli, None)
    plan = compile_plan(cfg, stimuli, {"m": "x"})
    return plan, [it for it, _ in iter_plan(cfg, stimuli, {"m": "x"})]


def test_items_read_back_as_the_plan_rendered_them() -> None:
    plan, want = _plan()
    items = plan.items
    assert isinstance(items, ItemTable)
    assert len(items) == len(want) == 7 * (3 + 1) * 2 * 2 * 2  # stimuli x variants x roles x slots x samples
    assert len(plan.requests) < len(want)  # "Rate it." with `less`: one request, several items
    assert items == want and want == items and list(items) == want
    assert [items[i] for i in range(len(want))] == want
    assert items[-1] == want[-1] and items[-len(want)] == want[0] and items[np.int64(5)] == want[5]
    assert items[3:40:7] == want[3:40:7]
    for got, exp in zip(items, want, strict=True):
        assert type(got) is PlanItem
        assert [type(v) for v in got] == [type(v) for v in exp] == [str, str, str, int, int, str]
    with pytest.raises(IndexError):
        items[len(want)]
    with pytest.raises(IndexError):
        items[-len(want) - 1]
    assert items != want[:-1] and items != [*want[:-1], want[0]]
    assert items.index(want[9]) == 9 and want[9] in items


def test_column_readers_match_the_items() -> None:
    plan, want = _plan()
    assert list(item_keys(plan.items)) == [it.key for it in want] == list(item_keys(want))
    for f in ("cell", "stimulus", "slot"):
        for items in (plan.items, want):
            vocab, codes = string_codes(items, f)
            assert [vocab[c] for c in codes.tolist()] == [getattr(it, f) for it in want]
            assert vocab == list(dict.fromkeys(getattr(it, f) for it in want))
    for f in ("variant", "sample"):
        assert plan.items.codes(f).tolist() == [getattr(it, f) for it in want]
    with pytest.raises(ValueError):
        plan.items.codes("cell")[0] = 1  # a read-only view of the column


def test_a_packed_table_takes_no_more_items() -> None:
    table = RequestTable("generate", {})
    items = ItemTable(table)
    at = table.add_parts("k1", "x", None, 0, None, None)
    assert table.add_parts("k1", "x", None, 0, None, None) == at == 0
    items.append("c", "s", "prompt", 0, 0, at)
    items.pack()
    assert list(items) == [PlanItem("c", "s", "prompt", 0, 0, "k1")]
    with pytest.raises(RuntimeError):
        items.append("c", "s", "prompt", 0, 1, at)


def test_items_cost_a_few_bytes_each() -> None:
    """A list of PlanItem tuples held ~218 B an item (96 B the tuple, 113 B its key
    string, 8 B the list's slot); the packed columns hold under 24 (position of the
    key in the request table, vocabulary codes, variant, sample)."""
    n = 20_000
    table = RequestTable("generate", {})
    keys = [f"{i:064x}" for i in range(n)]
    positions = [table.add_parts(k, "t", None, 0, None, None) for k in keys]
    cells, stims = [f"cell{i}" for i in range(21)], [f"stim{i}" for i in range(n // 20)]
    gc.collect()
    tracemalloc.start()
    try:
        items = ItemTable(table)
        for i, at in enumerate(positions):
            items.append(cells[i % 21], stims[i // 20], "prompt", i % 20, 0, at)
        items.pack()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held / n < 24, held / n
    assert items[12345] == PlanItem(cells[12345 % 21], stims[12345 // 20], "prompt", 12345 % 20, 0, keys[12345])
