"""`impact_ratio` per NYC Local Law 144's rules (issue 38, item 11): the scoring rate of a
layer of scores (6 RCNY 5-300: the rate at which a category scores above the sample's
median score; impact ratio = a category's scoring rate over the highest category's), with
ties at the median not "above"; and the small-category rule (6 RCNY 5-301(d): a category
under 2% of the data may be excluded from the impact ratios, its count and rate still
reported). Expected values are computed here by hand and with pandas, not by the code."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest

from biasaudit.methods.label_rates.impact import ImpactRatioParams, compute
from biasaudit.methods.label_rates.report import present_impact
from biasaudit.metrics.base import MetricContext
from biasaudit.records.codes import Code, Unit
from biasaudit.spec.compose import compose

# A small table of scores. Sorted, the 11 scores are 1 2 4 5 5 5 6 7 8 9 10: the median is 5
# (the 6th), and three scores tie at it. Above 5: F has 6 and 9 (2 of 5 = 0.4), M has 7, 8
# and 10 (3 of 6 = 0.5): impact ratio F = 0.4 / 0.5 = 0.8. Counting "at or above" the median
# instead would give F 3/5 = 0.6, M 5/6 = 0.8333 and a ratio of 0.72.
SCORES = [("F", 1.0), ("F", 4.0), ("F", 5.0), ("F", 6.0), ("F", 9.0),
          ("M", 2.0), ("M", 5.0), ("M", 5.0), ("M", 7.0), ("M", 8.0), ("M", 10.0)]


def _ctx(rows: list[tuple[dict[str, Any], Code]]) -> MetricContext:
    units, codes = [], {}
    for i, (fields, code) in enumerate(rows):
        uid = f"u{i}"
        units.append(Unit(id=uid, cell="base", stimulus=uid, slot="", variant=0, sample=0, key=uid, levels={},
                          fields=fields, vars={}))
        codes[uid] = code.model_copy(update={"unit": uid})
    cfg = compose(["spec=hiring_impact"]).config
    plan = SimpleNamespace(stimuli=SimpleNamespace(stimuli=[]), cells=[])
    return MetricContext(config=cfg, plan=plan, responses={}, units=units,  # type: ignore[arg-type]
                         codes={"score": codes})


def _scored(scores: list[tuple[str, float]]) -> MetricContext:
    return _ctx([({"sex": s}, Code(unit="", status="coded", value=v)) for s, v in scores])


def test_scoring_rate_by_hand_and_by_pandas() -> None:
    df = pd.DataFrame(SCORES, columns=["sex", "score"])
    med = df.score.median()
    rate = (df.score > med).groupby(df.sex).mean()
    assert med == 5.0 and rate["F"] == pytest.approx(0.4) and rate["M"] == pytest.approx(0.5)

    p = ImpactRatioParams(layer="score", rate="scoring", by=["sex"], min_n=1)
    res = compute(_scored(SCORES), "ir", p)
    est = res.estimates
    assert est["rate.sex.F"].value == pytest.approx(rate["F"]) and est["rate.sex.M"].value == pytest.approx(0.5)
    assert est["ratio.sex.F"].value == pytest.approx(0.8) and est["ratio.sex.M"].value == 1.0
    assert est["lowest"].value == pytest.approx(0.8)
    assert "2 of 5 above the median 5" in est["rate.sex.F"].note
    # ties at the median are not above it: not the 0.72 of "at or above"
    at_or_above = (df.score >= med).groupby(df.sex).mean()
    assert at_or_above["F"] / at_or_above["M"] == pytest.approx(0.72)
    assert est["ratio.sex.F"].value != pytest.approx(0.72)
    assert any("a score equal to the median is not above it" in n and "11 scored units, 5.0" in n for n in res.notes)
    assert "scoring rate" in res.title
    assert [it.outcome for it in res.items] == [int(v > 5.0) for _, v in SCORES]
    tables, _ = present_impact(res, p, compose(["spec=hiring_impact"]).config)
    assert [row[3] for row in tables[0].rows] == [2, 3]  # units above the median per category
    assert tables[0].columns[3:5] == ["above median", "scoring rate"]


def test_median_of_the_full_sample_includes_units_without_a_category() -> None:
    """The median is of every scored unit (5-301(c)(1): the full sample), not only of those
    with a category: a unit with no `sex` moves it. Scores 1..6 with an uncategorised 100:
    median of the seven = 4, above it F (1, 2, 6) 1/3, M (3, 4, 5) 1/3."""
    rows = [({"sex": "F"}, 1.0), ({"sex": "F"}, 2.0), ({"sex": "F"}, 6.0), ({"sex": "M"}, 3.0), ({"sex": "M"}, 4.0),
            ({"sex": "M"}, 5.0), ({}, 100.0)]
    ctx = _ctx([(f, Code(unit="", status="coded", value=v)) for f, v in rows])
    res = compute(ctx, "ir", ImpactRatioParams(layer="score", rate="scoring", by=["sex"], min_n=1))
    assert pd.Series([v for _, v in rows]).median() == 4.0
    assert res.estimates["rate.sex.F"].value == pytest.approx(1 / 3)
    assert res.estimates["rate.sex.M"].value == pytest.approx(1 / 3)
    assert res.counts["uncategorised"] == 1


def test_scoring_on_a_layer_without_scores_is_undefined() -> None:
    ctx = _ctx([({"sex": s}, Code(unit="", status="coded", label="invite")) for s in "FFMM"])
    res = compute(ctx, "ir", ImpactRatioParams(layer="score", rate="scoring", by=["sex"], min_n=1))
    assert res.estimates["lowest"].value is None and "gave no unit a score" in res.estimates["lowest"].note


def _selected(groups: dict[str, tuple[int, int]]) -> MetricContext:
    rows = []
    for g, (n, sel) in groups.items():
        rows += [({"race": g}, Code(unit="", status="coded", label="invite" if i < sel else "reject"))
                 for i in range(n)]
    return _ctx(rows)


def test_small_category_excluded_below_two_percent() -> None:
    """A 59 stimuli, 30 invited (0.5085); B 38, 13 (0.3421); C 2, 2 (1.0, 2% of 100: kept);
    D 1, 1 (1.0, 1% < 2%: excluded). Kept: C is the highest rate, so with min_n 1 it is the
    reference (ratios over 1.0); D is never the reference: its rate and count are reported,
    its ratio is not calculated, and the report says so."""
    groups = {"A": (59, 30), "B": (38, 13), "C": (2, 2), "D": (1, 1)}
    p = ImpactRatioParams(layer="score", labels=["invite"], by=["race"], min_n=1, exclude_below_share=0.02)
    res = compute(_selected(groups), "ir", p)
    est = res.estimates
    total = sum(n for n, _ in groups.values())
    assert total == 100 and 2 / total == 0.02  # C sits exactly at 2%: "less than 2%" does not exclude it
    assert est["rate.race.D"].value == 1.0 and est["rate.race.D"].n == 1
    assert est["ratio.race.D"].value is None and "excluded: 1 stimuli, 1.00% of the data < 0.02" in \
        est["ratio.race.D"].note and "5-301(d)" in est["ratio.race.D"].note
    assert est["ratio.race.C"].value == 1.0  # the reference: 2 of 2
    assert est["ratio.race.B"].value == pytest.approx((13 / 38) / 1.0)
    assert est["lowest"].value == pytest.approx(13 / 38)
    assert any("excluded from the ratios" in n and "D (1 stimuli, 1 units, rate 1)" in n for n in res.notes)
    tables, _ = present_impact(res, p, compose(["spec=hiring_impact"]).config)
    [row] = [r for r in tables[0].rows if r[0] == "D"]
    assert row[8] == "excluded" and row[1] == 1 and row[4] == 1.0  # flag, count and rate reported
    assert "Excluded from the ratios" in tables[0].note
    # without the rule (the default), D (1 of 1) is a small group only if below min_n; with
    # min_n 1 it is the reference
    plain = compute(_selected(groups), "ir", p.model_copy(update={"exclude_below_share": 0.0}))
    assert plain.estimates["ratio.race.D"].value == 1.0 and plain.estimates["ratio.race.C"].value == 1.0
    assert plain.estimates["ratio.race.A"].value == pytest.approx(30 / 59)


def test_an_excluded_category_and_min_n_side_by_side() -> None:
    """min_n (absolute) and exclude_below_share (relative) both apply: a category of 5 of 400
    (1.25%) is excluded; one of 20 (5%) under min_n 30 is a small cell, reported, not judged."""
    groups = {"A": (200, 100), "B": (175, 70), "C": (20, 20), "D": (5, 0)}
    p = ImpactRatioParams(layer="score", labels=["invite"], by=["race"], min_n=30, exclude_below_share=0.02)
    res = compute(_selected(groups), "ir", p)
    est = res.estimates
    assert est["ratio.race.D"].value is None and "excluded" in est["ratio.race.D"].note
    assert est["ratio.race.C"].value == pytest.approx(2.0) and "small cell" in est["ratio.race.C"].note
    assert est["lowest"].value == pytest.approx((70 / 175) / 0.5)


def test_every_category_excluded_says_so() -> None:
    """Four categories of 25% each under `exclude_below_share: 0.3`: nothing is compared, and
    the reason says why (not "no group has a selection rate above 0")."""
    groups = {"A": (25, 10), "B": (25, 12), "C": (25, 5), "D": (25, 20)}
    p = ImpactRatioParams(layer="score", labels=["invite"], by=["race"], min_n=1, exclude_below_share=0.3)
    res = compute(_selected(groups), "ir", p)
    assert res.estimates["lowest"].value is None
    assert "every group has less than 0.3 of the data" in res.estimates["lowest"].note
    assert res.estimates["rate.race.D"].value == pytest.approx(0.8)  # rates still reported


def test_spec_checks(workdir, cli) -> None:  # type: ignore[no-untyped-def]
    """Bad values: one line naming the file and key, exit 2."""
    for override, said in (("+metrics.0.rate=median", "metrics[0].rate"),
                           ("+metrics.0.exclude_below_share=0.7", "metrics[0].exclude_below_share"),
                           ("+metrics.0.exclude_below_share=-0.01", "metrics[0].exclude_below_share"),
                           ("+metrics.0.rate=scoring", "`labels` is for rate: selection")):
        code, _, err = cli("validate", "spec=hiring_impact", override)
        assert code == 2 and said in err and "hiring_impact.yaml" in err, (override, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    code, _, err = cli("validate", "spec=hiring_impact", "~metrics.0.labels", "+metrics.0.rate=scoring")
    assert code == 2 and "metrics[0].rate" in err and "gives labels" in err
    code, _, err = cli("validate", "spec=hiring_impact", "~metrics.0.labels")
    assert code == 2 and "`labels` is required with rate: selection" in err
    code, out, _ = cli("validate", "spec=hiring_impact", "+metrics.0.exclude_below_share=0.02")
    assert code == 0
