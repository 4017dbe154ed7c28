"""Design expansion: full, oat, explicit, and reference errors."""

from __future__ import annotations

import copy

import pytest

from biasaudit.errors import SpecError
from biasaudit.plan import expand_design
from biasaudit.spec import validate_config

BASE = {
    "audit": {"name": "t", "method": "x"},
    "stimuli": {"inline": [{"statement": "s"}]},
    "probe": {"kind": "generate"},
    "metrics": [],
    "model": {"backend": "scripted", "name": "s"},
}


def six_level_factors() -> dict:
    return {f: {f"{f}{i}": {"template": f"{f}{i}"} for i in range(6)} for f in ("task", "persp", "role", "sent")}


def cfg(**extra):  # type: ignore[no-untyped-def]
    d = copy.deepcopy(BASE)
    d.update(extra)
    return validate_config(d, spec_file="s.yaml")


def test_no_factors_is_one_base_cell() -> None:
    assert [c.id for c in expand_design(cfg())] == ["base"]


def test_full_factorial_count() -> None:
    f = {"a": {"x": {}, "y": {}}, "b": {"p": {}, "q": {}, "r": {}}}
    cells = expand_design(cfg(factors=f, design={"kind": "full"}))
    assert len(cells) == 6
    assert cells[0].levels == {"a": "x", "b": "p"}


def test_oat_four_factors_six_levels_is_21_cells() -> None:
    f = six_level_factors()
    base = {k: f"{k}0" for k in f}
    cells = expand_design(cfg(factors=f, design={"kind": "oat", "baseline": base}))
    assert len(cells) == 1 + 4 * 5
    assert cells[0].levels == base
    # every non-baseline cell differs from the baseline in exactly one factor
    for c in cells[1:]:
        assert sum(c.levels[k] != base[k] for k in f) == 1


def test_explicit_cells() -> None:
    f = {"a": {"x": {}, "y": {}}}
    cells = expand_design(cfg(factors=f, design={"kind": "explicit", "cells": [{"a": "y"}]}))
    assert [c.id for c in cells] == ["a=y"]


def test_undefined_level_in_baseline() -> None:
    f = {"a": {"x": {}, "y": {}}}
    with pytest.raises(SpecError) as ei:
        expand_design(cfg(factors=f, design={"kind": "oat", "baseline": {"a": "z"}}), "s.yaml")
    assert ei.value.key == "design.baseline.a"
    assert "levels: x, y" in ei.value.one_line()


def test_undefined_factor_in_explicit_cell() -> None:
    f = {"a": {"x": {}}}
    with pytest.raises(SpecError) as ei:
        expand_design(cfg(factors=f, design={"kind": "explicit", "cells": [{"a": "x", "b": "q"}]}), "s.yaml")
    assert "undefined factor 'b'" in ei.value.one_line()


def test_fractional_sub_grid_3x2x2x2() -> None:
    f = six_level_factors()
    levels = {"task": ["task0", "task1", "task2"], "persp": ["persp0", "persp1"], "role": ["role0", "role3"],
              "sent": ["sent0", "sent5"]}
    cells = expand_design(cfg(factors=f, design={"kind": "fractional", "levels": levels}))
    assert len(cells) == 3 * 2 * 2 * 2
    assert {c.levels["role"] for c in cells} == {"role0", "role3"}


def test_fractional_unlisted_factor_takes_the_baseline() -> None:
    f = {"a": {"x": {}, "y": {}}, "b": {"p": {}, "q": {}}}
    cells = expand_design(cfg(factors=f, design={"kind": "fractional", "levels": {"a": ["x", "y"]}, "baseline": {"b": "q"}}))
    assert [c.levels for c in cells] == [{"a": "x", "b": "q"}, {"a": "y", "b": "q"}]
    with pytest.raises(SpecError):
        expand_design(cfg(factors=f, design={"kind": "fractional", "levels": {"a": ["x", "z"]}, "baseline": {"b": "q"}}), "s.yaml")
