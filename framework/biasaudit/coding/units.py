"""The units a coding layer codes: one per answered plan item, with its stimulus fields and level variables."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from biasaudit.coding.stage import make_units
from biasaudit.records.codes import Unit
from biasaudit.records.json import JSONObject

if TYPE_CHECKING:
    from biasaudit.runner.pipeline import Prepared


def units_of(prep: Prepared) -> list[Unit]:
    cfg = prep.composed.config

    def level_vars(levels: Mapping[str, str]) -> JSONObject:
        out: JSONObject = {}
        for f, lv in levels.items():
            out.update(cfg.factors[f][lv].vars)
        return out

    return make_units(prep.plan.items, {c.id: c.levels for c in prep.plan.cells},
                      {s.id: s.fields for s in prep.stimuli.stimuli}, level_vars)


def check_human_sheets(prep: Prepared) -> None:
    """Each `human` layer's sheet sampled this plan's requests: a sheet from another run is
    refused when the run is prepared, before any model call (its answers are compared
    again when the layer codes)."""
    from biasaudit.coding.coders.human import HumanOptions, check_plan

    layers = [lay for lay in prep.coding.layers.values() if lay.coder_name == "human"]
    if not layers or prep.composed.config.model.backend == "oracle":
        return
    keys = {u.id: u.key for u in units_of(prep)}
    for lay in layers:
        assert isinstance(lay.options, HumanOptions)
        check_plan(lay.env, lay.options, keys)
