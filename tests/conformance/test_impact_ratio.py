"""Conformance: impact ratios (`impact_ratio`, `stats.impact`) and equivalence (TOST)
decisions on group contrasts, against statsmodels on the same inputs, and LL144's
definitions (6 RCNY 5-300 / 5-301, the DCWP rules of NYC Local Law 144,
https://codelibrary.amlegal.com/codes/newyorkcity/latest/NYCrules/0-0-0-138530) applied by
hand. The rules also publish example tables of selection and scoring rates; their text
could not be retrieved from the stored sources when this file was written (the excerpts
stop before the tables), so no example table is reproduced here: the LL144 check is the
rules' definitions on a table computed by hand and with pandas."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm
from statsmodels.stats.contingency_tables import Table2x2
from statsmodels.stats.proportion import confint_proportions_2indep, tost_proportions_2indep
from statsmodels.stats.weightstats import ttost_ind

from biasaudit.stats.contrasts import pairwise_contrasts, pairwise_mean_contrasts
from biasaudit.stats.impact import impact_ratios, katz_interval, lowest_critical
from biasaudit.verdicts.thresholds import judge_equivalence

CONFORMANCE = [
    {"check": "Katz log interval of one impact ratio (95% and 90%) on 2x2 tables",
     "source": "statsmodels Table2x2.riskratio_confint and confint_proportions_2indep(compare='ratio', "
               "method='log')", "tolerance": "1e-9 relative"},
    {"check": "lowest impact ratio of G groups: the reported pair's Katz interval at the simultaneous critical "
              "value", "source": "statsmodels confint_proportions_2indep(compare='ratio', method='log', "
                                 "alpha=2 sf(c)) on the pair's counts", "tolerance": "1e-9 relative"},
    {"check": "simultaneous critical value c of the lowest ratio (G = 3, 5, 10): P(max of G-k normals - min of k "
              "> c sqrt 2) = 0.025 at the worst k", "source": "Monte Carlo of 400,000 standard normal vectors "
                                                            "(numpy)", "tolerance": "4 Monte Carlo SD (0.001)"},
    {"check": "equivalence (TOST) verdict on an impact ratio, incl. 500/1000 vs 500/1000 in [0.8, 1.25] and a "
              "borderline pair", "source": "statsmodels tost_proportions_2indep(compare='ratio', method='log'): "
                                           "PASS iff p < 0.05", "tolerance": "exact decision"},
    {"check": "equivalence (TOST) verdict on a Newcombe difference of two rates",
     "source": "statsmodels confint_proportions_2indep(compare='diff', method='newcomb', alpha=0.10) inside the "
               "band", "tolerance": "1e-9 absolute (interval), exact decision"},
    {"check": "equivalence (TOST) verdict on a Welch difference of two means",
     "source": "statsmodels ttost_ind(usevar='unequal'): PASS iff p < 0.05", "tolerance": "exact decision"},
    {"check": "LL144 scoring rate (share above the full sample's median, ties not above) and impact ratio",
     "source": "6 RCNY 5-300 definitions 'Scoring Rate' and 'Impact Ratio', computed with pandas",
     "tolerance": "1e-12"},
]


def _01(selected: int, n: int) -> list[float]:
    return [1.0] * selected + [0.0] * (n - selected)


@pytest.mark.parametrize(("a", "n1", "c", "n0"), [(30, 100, 50, 100), (7, 19, 33, 41), (128, 368, 209, 412),
                                                  (500, 1000, 500, 1000)])
def test_katz_interval(a: int, n1: int, c: int, n0: int) -> None:
    for level in (0.95, 0.90):
        rr, lo, hi = katz_interval(a, n1, c, n0, level)
        t = Table2x2(np.array([[a, n1 - a], [c, n0 - c]]))
        ref = confint_proportions_2indep(a, n1, c, n0, compare="ratio", method="log", alpha=1 - level)
        assert float(rr) == pytest.approx(t.riskratio, rel=1e-12)
        assert (float(lo), float(hi)) == (pytest.approx(ref[0], rel=1e-9), pytest.approx(ref[1], rel=1e-9))
        assert (float(lo), float(hi)) == pytest.approx(t.riskratio_confint(alpha=1 - level), rel=1e-9)


def test_lowest_interval_is_statsmodels_at_the_simultaneous_level() -> None:
    counts = {"A": (120, 300), "B": (150, 300), "C": (90, 260), "D": (140, 280), "E": (100, 250)}
    fam = impact_ratios({g: _01(x, n) for g, (x, n) in counts.items()}, min_n=10)
    low = fam.lowest()
    assert fam.reference == "B" and "group C" in low.note  # 0.346 / 0.5
    c = lowest_critical(5, 0.025)
    lo, hi = confint_proportions_2indep(90, 260, 150, 300, compare="ratio", method="log", alpha=2 * norm.sf(c))
    assert (low.ci_low, low.ci_high) == (pytest.approx(lo, rel=1e-9), pytest.approx(hi, rel=1e-9))
    tlo, thi = confint_proportions_2indep(90, 260, 150, 300, compare="ratio", method="log",
                                          alpha=2 * norm.sf(lowest_critical(5, 0.05)))
    assert low.tost_interval == (pytest.approx(tlo, rel=1e-9), pytest.approx(thi, rel=1e-9))


def test_critical_value_by_monte_carlo() -> None:
    rng = np.random.default_rng(20261129)
    for g in (3, 5, 10):
        c = lowest_critical(g, 0.025)
        z = rng.standard_normal((400_000, g))
        worst = max(float(np.mean(z[:, k:].max(axis=1) - z[:, :k].min(axis=1) > c * np.sqrt(2)))
                    for k in range(1, g // 2 + 1))
        assert worst == pytest.approx(0.025, abs=4 * np.sqrt(0.025 * 0.975 / 400_000)), (g, worst)


@pytest.mark.parametrize(("x", "x_ref"), [(500, 500), (433, 500), (432, 500), (420, 500), (470, 480)])
def test_tost_on_an_impact_ratio(x: int, x_ref: int) -> None:
    fam = impact_ratios({"r": _01(x_ref, 1000), "a": _01(x, 1000)}, min_n=10)
    [a] = [r for r in fam.rows if r.group == "a"]
    v = judge_equivalence(a.ratio, 0.8, 1.25)[0]
    p = tost_proportions_2indep(x, 1000, x_ref, 1000, 0.8, 1.25, method="log", compare="ratio").pvalue
    assert (v == "PASS") == (p < 0.05), (x, x_ref, v, p)
    if (x, x_ref) == (500, 500):
        assert v == "PASS"


@pytest.mark.parametrize(("xa", "xb", "margin"), [(500, 500, 0.05), (520, 500, 0.05), (510, 500, 0.05),
                                                  (540, 500, 0.05)])
def test_tost_on_a_newcombe_difference(xa: int, xb: int, margin: float) -> None:
    [c] = pairwise_contrasts({"a": _01(xa, 1000), "b": _01(xb, 1000)}).contrasts
    v, _, tost = judge_equivalence(c.difference, -margin, margin)
    lo, hi = confint_proportions_2indep(xa, 1000, xb, 1000, compare="diff", method="newcomb", alpha=0.10)
    assert tost is not None and (tost.ci_low, tost.ci_high) == (pytest.approx(lo, abs=1e-9),
                                                                pytest.approx(hi, abs=1e-9))
    assert (v == "PASS") == (-margin <= lo and hi <= margin)


def test_tost_on_a_welch_difference() -> None:
    rng = np.random.default_rng(7)
    for _ in range(10):
        x, y = rng.normal(0, 1, 50), rng.normal(0.1, 1.3, 35)
        [c] = pairwise_mean_contrasts({"a": list(x), "b": list(y)}).contrasts
        for margin in (0.4, 0.7, 1.0):
            v = judge_equivalence(c.difference, -margin, margin)[0]
            assert (v == "PASS") == (ttost_ind(x, y, -margin, margin, usevar="unequal")[0] < 0.05)


def test_ll144_scoring_rate_definition() -> None:
    """6 RCNY 5-300: "Scoring Rate" is the rate at which individuals in a category receive a
    score above the sample's median score; "Impact Ratio" is a category's scoring rate over
    the scoring rate of the highest scoring category."""
    from types import SimpleNamespace

    from biasaudit.methods.label_rates.impact import ImpactRatioParams, compute
    from biasaudit.metrics.base import MetricContext
    from biasaudit.records.codes import Code, Unit
    from biasaudit.spec.compose import compose

    rng = np.random.default_rng(144)
    df = pd.DataFrame({"sex": rng.choice(["Female", "Male"], 300),
                       "race": rng.choice(["Asian", "Black", "Hispanic or Latino", "White"], 300),
                       "score": rng.integers(0, 20, 300).astype(float)})  # integer scores: many ties
    units, codes = [], {}
    for i, r in df.iterrows():
        uid = f"u{i}"
        units.append(Unit(id=uid, cell="base", stimulus=uid, slot="", variant=0, sample=0, key=uid, levels={},
                          fields={"sex": r.sex, "race": r.race}, vars={}))
        codes[uid] = Code(unit=uid, status="coded", value=float(r.score))
    ctx = MetricContext(config=compose(["spec=hiring_impact"]).config,  # type: ignore[arg-type]
                        plan=SimpleNamespace(stimuli=SimpleNamespace(stimuli=[]), cells=[]), responses={},
                        units=units, codes={"score": codes})
    res = compute(ctx, "ir", ImpactRatioParams(layer="score", rate="scoring", by=["sex", "race"], min_n=1))
    above = df.score > df.score.median()
    for key, cols in (("sex", ["sex"]), ("race", ["race"]), ("sex+race", ["sex", "race"])):
        rate = above.groupby([df[c] for c in cols]).mean()
        rate.index = ["+".join(i) if isinstance(i, tuple) else i for i in rate.index]
        for g, want in rate.items():
            assert res.estimates[f"rate.{key}.{g}"].value == pytest.approx(want, abs=1e-12)
            assert res.estimates[f"ratio.{key}.{g}"].value == pytest.approx(want / rate.max(), abs=1e-12)
