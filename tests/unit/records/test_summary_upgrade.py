"""summary.json format 2 (issue 40, section 1): one verdict record, stored as built;
estimates with typed groups; unknown keys refused; format 1 read through the pure
upgrade step in records/upgrade/summary.py."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from pydantic import ValidationError

from biasaudit.records import upgrade as up
from biasaudit.records.estimate import Estimate
from biasaudit.records.summary import RunSummary
from biasaudit.records.upgrade.summary import CURRENT, STEPS, upgrade_1_to_2


def upgrade(raw: dict[str, Any]) -> dict[str, Any]:
    return up.upgrade("summary", raw)[0]


def _e(value: float) -> dict[str, Any]:
    return {"value": value, "ci_low": value - 0.1, "ci_high": value + 0.1, "n": 40, "method": "wilson"}


def _v1() -> dict[str, Any]:
    """A format-1 summary (no format_version) of a rate metric broken down by `city`."""
    estimates = {
        "rate": _e(0.5),
        "rate.city.St. Louis": {**_e(0.4), "subset": {"where": {"city": ["St. Louis"]}}},
        "rate.city.v1.2": _e(0.6),
        "contrast.city.St. Louis-v1.2": {**_e(-0.2), "subset": {"where": {"city": ["St. Louis", "v1.2"]}}},
        "contrast.city.St. Louis-v1.2.paired": _e(-0.2),
        "lowest.city": _e(0.4),
    }
    verdict = {"metric": "m.rate", "over": "pooled", "min": 0.3, "max": 0.7, "estimate": _e(0.5),
               "verdict": "INCONCLUSIVE", "refs": [], "reason": "straddles", "equivalence": True,
               "tost": {**_e(0.5), "level": 0.9}, "over_text": "pooled", "clauses": []}
    return {"audit": {"name": "a"}, "model": {"name": "m"},
            "metrics": {"m": {"name": "label_rates", "headline": "rate", "estimates": estimates,
                              "cells": {"rate.city.v1.2": {"c1": _e(0.6)}}, "params": {"by": ["city"]}}},
            "verdicts": [verdict], "overall": "INCONCLUSIVE"}


def test_the_step_is_registered_and_current_is_2() -> None:
    assert CURRENT == 2 and STEPS == {1: upgrade_1_to_2}


def test_upgrade_1_to_2_is_pure_and_gives_format_1_its_groups() -> None:
    raw = _v1()
    before = copy.deepcopy(raw)
    out = upgrade_1_to_2(raw)
    assert raw == before  # the input is left as it was
    est = out["metrics"]["m"]["estimates"]
    assert out["format_version"] == 2
    assert est["rate.city.St. Louis"]["group"] == {"factor": "city", "levels": ["St. Louis"], "reference": None}
    assert est["rate.city.v1.2"]["group"]["levels"] == ["v1.2"]
    # a contrast's two groups, from its subset where that spells the name
    assert est["contrast.city.St. Louis-v1.2"]["group"]["levels"] == ["St. Louis", "v1.2"]
    assert est["contrast.city.St. Louis-v1.2.paired"]["group"]["levels"] == ["St. Louis-v1.2"]
    assert "group" not in est["rate"] and "group" not in est["lowest.city"]
    assert out["metrics"]["m"]["cells"]["rate.city.v1.2"]["c1"]["group"]["levels"] == ["v1.2"]
    assert upgrade(raw) == out and upgrade(out) == out


def test_a_format_1_summary_reads_into_the_typed_records() -> None:
    s = RunSummary.read_raw(_v1(), file="summary.json")
    assert s.format_version == 2
    g = s.metrics["m"].estimates["rate.city.St. Louis"].group
    assert g is not None and g.label == "city=St. Louis"
    # the verdict is the one typed record: its TOST estimate is an Estimate, not an untyped extra
    [v] = s.verdicts
    assert v.equivalence is True and isinstance(v.tost, Estimate) and v.tost.level == 0.9


def test_the_verdict_read_back_is_the_one_built() -> None:
    s = RunSummary.read_raw(_v1(), file="summary.json")
    doc = json.loads(s.to_json())
    assert doc["format_version"] == 2 and doc["verdicts"][0]["tost"]["level"] == 0.9
    assert RunSummary.model_validate(doc) == s


@pytest.mark.parametrize("where", ["top", "audit", "verdict", "group"])
def test_unknown_keys_are_refused(where: str) -> None:
    raw = upgrade(_v1())
    if where == "top":
        raw["surprise"] = 1
    elif where == "audit":
        raw["audit"]["surprise"] = 1
    elif where == "verdict":
        raw["verdicts"][0]["surprise"] = 1
    else:
        raw["metrics"]["m"]["estimates"]["rate.city.v1.2"]["group"]["surprise"] = 1
    with pytest.raises(ValidationError, match="surprise"):
        RunSummary.model_validate(raw)


def test_a_format_newer_than_this_version_is_refused() -> None:
    with pytest.raises(ValidationError, match="format_version"):
        RunSummary.model_validate({**upgrade(_v1()), "format_version": 3})
