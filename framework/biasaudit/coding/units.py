"""The units a coding layer codes: one per answered plan item, with its stimulus fields and level variables."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from biasaudit.backends.factory import kind_of
from biasaudit.coding.stage import make_units
from biasaudit.records.codes import UnitTable
from biasaudit.records.json import JSONObject

if TYPE_CHECKING:
    from biasaudit.runner.pipeline import Prepared


def units_of(prep: Prepared) -> UnitTable:
    cfg = prep.composed.config

    def level_vars(levels: Mapping[str, str]) -> JSONObject:
        out: JSONObject = {}
        for f, lv in levels.items():
            out.update(cfg.factors[f][lv].vars)
        return out

    return make_units(prep.plan.items, {c.id: c.levels for c in prep.plan.cells},
                      {s.id: s.fields for s in prep.stimuli.stimuli}, level_vars)


def check_plans(prep: Prepared) -> None:
    """Each layer whose coder checks the plan (`CoderDef.check_plan`: a human layer's sheet
    sampled this plan's requests) is checked when the run is prepared, before any model
    call: a sheet from another run is refused (its answers are compared again when the
    layer codes)."""
    layers = [lay for lay in prep.coding.layers.values() if lay.coder_def.check_plan is not None]
    # the self-test's oracle backend: nobody labelled its answers, there is no sheet to match
    if not layers or kind_of(prep.composed.config.model).selftest_only:
        return
    keys = {u.id: u.key for u in units_of(prep)}
    for lay in layers:
        check = lay.coder_def.check_plan
        if check is not None:
            check(lay.env, lay.options, keys)
