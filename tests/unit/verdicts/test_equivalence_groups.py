"""Equivalence thresholds (TOST) on group contrasts and impact ratios (issue 38, item 8).

Welch and Newcombe differences between groups and Katz impact ratios now carry their
interval at 1 - 2 alpha (90%), made by the same method from the same data, so parity
between groups can PASS; before, they were always INCONCLUSIVE ("equivalence not
decidable"). The verdict is checked against statsmodels' TOST on the same data: `ttost_ind
(usevar="unequal")` for Welch, `tost_proportions_2indep(compare="ratio", method="log")` for
Katz, and for Newcombe (statsmodels has no Newcombe test) the inclusion of statsmodels'
`confint_proportions_2indep(method="newcomb", alpha=0.10)` in the band, which is the TOST
of that interval, with `tost_proportions_2indep(compare="diff", method="score")` agreeing
away from the band's edge."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.proportion import confint_proportions_2indep, tost_proportions_2indep
from statsmodels.stats.weightstats import ttost_ind

from biasaudit.records.metric_result import MetricResult
from biasaudit.spec import ThresholdSpec
from biasaudit.stats.contrasts import pairwise_contrasts, pairwise_mean_contrasts
from biasaudit.stats.impact import impact_ratios
from biasaudit.verdicts.thresholds import evaluate, judge_equivalence


def _01(selected: int, n: int) -> list[float]:
    return [1.0] * selected + [0.0] * (n - selected)


def _ratio(x: int, n: int, x_ref: int, n_ref: int):  # type: ignore[no-untyped-def]
    """The impact ratio of group `a` (x of n) against the reference `r` (the higher rate)."""
    fam = impact_ratios({"r": _01(x_ref, n_ref), "a": _01(x, n)}, min_n=10)
    assert fam.reference == "r"
    return {r.group: r for r in fam.rows}["a"].ratio, fam


def test_issue_case_500_of_1000_each_passes() -> None:
    """Impact ratio 500/1000 vs 500/1000 against [0.8, 1.25]: the 95% interval [0.916,
    1.092] (the issue's figures), the 90% one inside the band: PASS, as statsmodels' TOST
    (p far below 0.05); main said INCONCLUSIVE (not decidable)."""
    e, fam = _ratio(500, 1000, 500, 1000)
    assert (e.ci_low, e.ci_high) == (pytest.approx(0.916, abs=5e-4), pytest.approx(1.092, abs=5e-4))
    v, why, tost = judge_equivalence(e, 0.8, 1.25)
    ref = tost_proportions_2indep(500, 1000, 500, 1000, 0.8, 1.25, method="log", compare="ratio")
    assert ref.pvalue < 1e-6
    assert v == "PASS" and "equivalence shown within [0.8, 1.25]" in why
    assert tost is not None and tost.level == pytest.approx(0.90)
    lo, hi = confint_proportions_2indep(500, 1000, 500, 1000, compare="ratio", method="log", alpha=0.10)
    assert (tost.ci_low, tost.ci_high) == (pytest.approx(lo), pytest.approx(hi))
    # the headline `lowest` of two groups gives the same
    assert judge_equivalence(fam.lowest(), 0.8, 1.25)[0] == "PASS"
    # and through a threshold, as a run judges it
    res = MetricResult(id="impact", name="impact_ratio", headline="lowest",
                       estimates={"lowest": fam.lowest(), "ratio.sex.a": e})
    [verdict] = evaluate([ThresholdSpec.model_validate({"metric": "impact.ratio.sex.a",
                                                        "equivalence": {"low": 0.8, "high": 1.25}})], {"impact": res})
    assert verdict.verdict == "PASS" and verdict.tost is not None


@pytest.mark.parametrize(("x", "n", "x_ref", "n_ref", "low", "high"), [
    (500, 1000, 500, 1000, 0.8, 1.25),
    (420, 1000, 500, 1000, 0.8, 1.25),   # 0.84: the 90% lower end 0.775 is below 0.8
    (450, 1000, 500, 1000, 0.8, 1.25),   # 0.90: lower end 0.83, inside
    (433, 1000, 500, 1000, 0.8, 1.25),   # borderline: lower end 0.8002, just above 0.8 (p 0.0495)
    (432, 1000, 500, 1000, 0.8, 1.25),   # borderline: lower end 0.7983, just below (p 0.0548)
    (90, 200, 100, 200, 0.8, 1.25),      # small groups: not shown
    (300, 700, 320, 650, 0.85, 1.0 / 0.85),
    (45, 100, 52, 110, 0.5, 2.0),
])
def test_katz_ratio_verdict_agrees_with_statsmodels_tost(x: int, n: int, x_ref: int, n_ref: int, low: float,
                                                        high: float) -> None:
    e, _ = _ratio(x, n, x_ref, n_ref)
    v, _, tost = judge_equivalence(e, low, high)
    ref = tost_proportions_2indep(x, n, x_ref, n_ref, low, high, method="log", compare="ratio")
    assert tost is not None
    assert (v == "PASS") == (ref.pvalue < 0.05), (v, ref.pvalue, tost.ci_low, tost.ci_high)
    assert v in ("PASS", "INCONCLUSIVE")  # none of these lies wholly outside the band


def test_borderline_ratio_inputs_fall_on_both_sides() -> None:
    """The two borderline inputs above do sit on either side of the decision."""
    p = [tost_proportions_2indep(x, 1000, 500, 1000, 0.8, 1.25, method="log", compare="ratio").pvalue
         for x in (433, 432)]
    assert p[0] < 0.05 < p[1] and p[1] - p[0] < 0.01
    assert [judge_equivalence(_ratio(x, 1000, 500, 1000)[0], 0.8, 1.25)[0] for x in (433, 432)] == \
        ["PASS", "INCONCLUSIVE"]


@pytest.mark.parametrize(("xa", "na", "xb", "nb", "margin", "clear"), [
    (500, 1000, 500, 1000, 0.05, True),
    (520, 1000, 500, 1000, 0.05, False),   # borderline: the 90% upper end 0.0567 is above 0.05
    (510, 1000, 500, 1000, 0.05, True),
    (60, 100, 50, 100, 0.1, True),         # not shown
    (300, 600, 280, 550, 0.08, True),
    (47, 90, 40, 80, 0.2, True),
])
def test_newcombe_difference_verdict_agrees_with_statsmodels(xa: int, na: int, xb: int, nb: int, margin: float,
                                                            clear: bool) -> None:
    fam = pairwise_contrasts({"a": _01(xa, na), "b": _01(xb, nb)})
    [c] = fam.contrasts
    v, _, tost = judge_equivalence(c.difference, -margin, margin)
    lo, hi = confint_proportions_2indep(xa, na, xb, nb, compare="diff", method="newcomb", alpha=0.10)
    assert tost is not None and (tost.ci_low, tost.ci_high) == (pytest.approx(lo, abs=1e-9),
                                                                pytest.approx(hi, abs=1e-9))
    assert (v == "PASS") == (-margin <= lo and hi <= margin)
    if clear:  # away from the edge the score TOST decides the same
        score = tost_proportions_2indep(xa, na, xb, nb, -margin, margin, method="score", compare="diff")
        assert (v == "PASS") == (score.pvalue < 0.05), (v, score.pvalue)


def test_newcombe_parity_can_pass_now() -> None:
    [c] = pairwise_contrasts({"a": _01(500, 1000), "b": _01(500, 1000)}).contrasts
    assert judge_equivalence(c.difference, -0.05, 0.05)[0] == "PASS"
    # scaled to points, as label_rate reports a contrast in some specs, the 90% interval follows
    assert judge_equivalence(c.difference.scaled(100), -5, 5)[0] == "PASS"


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_welch_difference_verdict_agrees_with_ttost_ind(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x, y = rng.normal(0.0, 1.0, 40 + 5 * seed), rng.normal(0.05 * seed, 1.5, 30 + 3 * seed)
    [c] = pairwise_mean_contrasts({"a": list(x), "b": list(y)}).contrasts
    e = c.difference
    assert e.tost_interval is not None
    edge = max(abs(e.tost_interval[0]), abs(e.tost_interval[1]))
    for margin in (0.3, 0.6, 1.0, edge * (1 + 1e-6), edge * (1 - 1e-6)):  # the last two: either side of the edge
        v, _, _ = judge_equivalence(e, -margin, margin)
        p = ttost_ind(x, y, -margin, margin, usevar="unequal")[0]
        assert (v == "PASS") == (p < 0.05), (seed, margin, v, p)
