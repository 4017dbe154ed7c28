"""`impact_ratio` over a layer's codes (issue 30, point 4), without a run: categories of
each field and of their intersection, units without a category counted apart, small
cells flagged for the thresholds, the headline the lowest judged ratio of any
categorisation, and the spec checks."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from biasaudit.methods.label_rates.impact import ImpactRatioParams, compute
from biasaudit.methods.label_rates.report import present_impact
from biasaudit.metrics.base import MetricContext
from biasaudit.records.codes import Code, Unit
from biasaudit.spec.compose import compose


def _units(spec: list[tuple[dict[str, Any], int, int]]) -> tuple[list[Unit], dict[str, dict[str, Code]]]:
    """(fields, stimuli, selected) -> one unit per stimulus, the first `selected` invited."""
    units, codes = [], {}
    for j, (fields, n, sel) in enumerate(spec):
        for i in range(n):
            uid = f"u{j}-{i}"
            units.append(Unit(id=uid, cell="base", stimulus=uid, slot="", variant=0, sample=0, key=uid, levels={},
                              fields=fields, vars={}))
            codes[uid] = Code(unit=uid, status="coded", label="invite" if i < sel else "reject")
    return units, {"decision": codes}


def _ctx(units: list[Unit], codes: dict[str, dict[str, Code]]) -> MetricContext:
    cfg = compose(["spec=hiring_impact"]).config
    plan = SimpleNamespace(stimuli=SimpleNamespace(stimuli=[]), cells=[])
    return MetricContext(config=cfg, plan=plan, responses={}, units=units, codes=codes)  # type: ignore[arg-type]


def test_fields_intersections_unknowns_and_small_cells() -> None:
    units, codes = _units([
        ({"sex": "F", "race": "A"}, 40, 10), ({"sex": "F", "race": "B"}, 40, 20),
        ({"sex": "M", "race": "A"}, 40, 24), ({"sex": "M", "race": "B"}, 40, 28),
        ({"sex": "M", "race": "C"}, 5, 5),   # a small cell at 100%: never the reference
        ({"sex": "F"}, 7, 1),                # no race: out of the race and sex+race ratios, counted
    ])
    p = ImpactRatioParams(layer="decision", labels=["invite"], by=["sex", "race"], min_n=30)
    res = compute(_ctx(units, codes), "ir", p)
    est = res.estimates
    # sex: F (10+20+1)/87, M (24+28+5)/85; ratio F = (31/87) / (57/85)
    assert est["ratio.sex.F"].value == pytest.approx((31 / 87) / (57 / 85))
    # race (94 + 7 unknown): A 34/80, B 48/80, C 5/5 (small); reference B; A = 34/48
    assert est["ratio.race.A"].value == pytest.approx(34 / 48) and est["ratio.race.B"].method == "reference"
    assert est["ratio.race.C"].value == pytest.approx(1 / 0.6) and "small cell" in est["ratio.race.C"].note
    # sex+race: reference M+B 28/40 = 0.7; F+A 10/40 -> 0.25 / 0.7
    assert est["ratio.sex+race.F+A"].value == pytest.approx(0.25 / 0.7)
    assert est["lowest.sex+race"].value == pytest.approx(0.25 / 0.7)
    assert est["lowest"].value == pytest.approx(0.25 / 0.7) and "by sex+race" in est["lowest"].note
    assert res.counts["uncategorised"] == 7
    # the report section's tables, from the families kept in the result's detail
    tables = {t.title: t for t in present_impact(res, p, compose(["spec=hiring_impact"]).config)[0]}
    assert "7 coded units have no race value" in tables["Impact ratios by race"].note
    assert "7 coded" not in tables["Impact ratios by sex"].note
    [flag] = [f for f in res.validity if f.kind == "small_cell"]
    assert flag.blocking and set(flag.estimates) == {"rate.race.C", "ratio.race.C", "rate.sex+race.M+C",
                                                     "ratio.sex+race.M+C"}
    assert any("sex=F" in n and "race=A" in n for n in res.notes)  # the four-fifths flags, listed


def test_no_selection_at_all_is_undefined_with_the_reason() -> None:
    units, codes = _units([({"sex": "F"}, 40, 0), ({"sex": "M"}, 40, 0)])
    res = compute(_ctx(units, codes), "ir", ImpactRatioParams(layer="decision", labels=["invite"], by=["sex"]))
    assert res.estimates["lowest"].value is None and "no group has a selection rate above 0" in res.estimates[
        "lowest"].note
    assert res.estimates["ratio.sex.F"].value is None and "0/0" in res.estimates["ratio.sex.F"].note


def test_spec_checks(workdir, cli) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("validate", "spec=hiring_impact", "metrics.0.by=[gender,gender]")
    assert code == 2 and "names a field twice" in err and "metrics[0]" in err
    code, _, err = cli("validate", "spec=hiring_impact", "metrics.0.min_n=0")
    assert code == 2 and "min_n" in err
    code, _, err = cli("validate", "spec=hiring_impact", "thresholds.0.min=-0.5")
    assert code == 2 and "outside the range" in err
