"""The units a coding layer codes: one per answered plan item, with its stimulus fields and level variables."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from biasaudit.coding.stage import make_units
from biasaudit.records.codes import Unit

if TYPE_CHECKING:
    from biasaudit.runner.pipeline import Prepared


def units_of(prep: Prepared) -> list[Unit]:
    cfg = prep.composed.config

    def level_vars(levels: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f, lv in levels.items():
            out.update(cfg.factors[f][lv].vars)
        return out

    return make_units(prep.plan.items, {c.id: c.levels for c in prep.plan.cells},
                      {s.id: s.fields for s in prep.stimuli.stimuli}, level_vars)
