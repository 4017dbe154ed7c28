"""Impact ratios (issue 30, point 4): each category's selection rate over the most favoured
category's, Katz log intervals, the four-fifths flag, intersectional categories, small cells
reported but not judged, zeros. Checked against a hand computation on an LL144-style table,
against statsmodels' `Table2x2.riskratio_confint`, and by seeded coverage simulations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm
from statsmodels.stats.contingency_tables import Table2x2

from biasaudit.stats.impact import KATZ, KATZ_CLUSTERED, impact_ratios, katz_interval
from biasaudit.stats.proportions import effective_n

Z = float(norm.ppf(0.975))

# An LL144-style summary (applicants and selected per sex x race/ethnicity category). The
# sex and race tables are the margins of the intersectional one.
COUNTS = {  # (sex, race): (applicants, selected)
    ("Male", "White"): (160, 90), ("Male", "Black"): (100, 40), ("Male", "Hispanic"): (90, 46),
    ("Male", "Asian"): (50, 24), ("Male", "Native American"): (12, 9),
    ("Female", "White"): (140, 60), ("Female", "Black"): (100, 30), ("Female", "Hispanic"): (70, 26),
    ("Female", "Asian"): (50, 10), ("Female", "Native American"): (8, 2),
}


def _01(selected: int, n: int) -> list[float]:
    return [1.0] * selected + [0.0] * (n - selected)


def _groups(key: tuple[int, ...]) -> dict[str, list[float]]:
    tot: dict[str, list[int]] = {}
    for cat, (n, x) in COUNTS.items():
        g = "+".join(cat[i] for i in key)
        t = tot.setdefault(g, [0, 0])
        t[0] += n
        t[1] += x
    return {g: _01(x, n) for g, (n, x) in sorted(tot.items())}


def _katz_by_hand(x1: float, n1: float, x0: float, n0: float) -> tuple[float, float, float]:
    rr = (x1 / n1) / (x0 / n0)
    se = math.sqrt(1 / x1 - 1 / n1 + 1 / x0 - 1 / n0)
    return rr, rr * math.exp(-Z * se), rr * math.exp(Z * se)


def test_ll144_table_by_hand() -> None:
    # Sex: Male 412 applicants, 209 selected (90+40+46+24+9), rate 0.50728;
    #      Female 368, 128 selected (60+30+26+10+2), rate 0.34783.
    # Impact ratio Female = 0.34783 / 0.50728 = (128/368) / (209/412) = 0.68567 < 0.8: flagged.
    sex = impact_ratios(_groups((0,)), by=("sex",), min_n=30)
    assert sex.reference == "Male"
    rows = {r.group: r for r in sex.rows}
    assert rows["Female"].rate.value == pytest.approx(128 / 368)
    assert rows["Female"].ratio.value == pytest.approx((128 / 368) / (209 / 412))
    assert rows["Female"].ratio.value == pytest.approx(0.68567, abs=1e-5)
    rr, lo, hi = _katz_by_hand(128, 368, 209, 412)
    assert (rows["Female"].ratio.ci_low, rows["Female"].ratio.ci_high) == (pytest.approx(lo), pytest.approx(hi))
    assert rows["Female"].flag == "below 0.8" and rows["Female"].ratio.method == KATZ
    assert rows["Male"].reference and rows["Male"].ratio.value == 1.0 and rows["Male"].ratio.ci_low is None

    # Race: White 300 / 150 = 0.5, Black 200 / 70 = 0.35, Hispanic 160 / 72 = 0.45,
    # Asian 100 / 34 = 0.34, Native American 20 / 11 = 0.55. Native American has the highest
    # rate but only 20 applicants (< min_n 30): a small cell is never the reference, so the
    # reference is White; its ratio 0.55 / 0.5 = 1.1 is reported, with a note, not flagged.
    race = impact_ratios(_groups((1,)), by=("race",), min_n=30)
    assert race.reference == "White"
    rows = {r.group: r for r in race.rows}
    assert rows["Black"].ratio.value == pytest.approx(0.7)
    assert rows["Hispanic"].ratio.value == pytest.approx(0.9) and rows["Hispanic"].flag == ""
    assert rows["Asian"].ratio.value == pytest.approx(0.68) and rows["Asian"].flag == "below 0.8"
    na = rows["Native American"]
    assert na.small and na.flag == "small cell" and na.ratio.value == pytest.approx(1.1)
    assert "small cell: 20 stimuli < 30" in na.ratio.note
    # lowest judged ratio: Asian 0.68 (the small cell is never the lowest on its own either)
    assert race.lowest().value == pytest.approx(0.68) and "group Asian" in race.lowest().note

    # Intersection: Male+Native American 9/12 = 0.75 is small; the reference is the highest
    # judged rate, Male+White 90/160 = 0.5625. Female+Asian 10/50 = 0.2 -> 0.2 / 0.5625 = 0.35556.
    inter = impact_ratios(_groups((0, 1)), by=("sex", "race"), min_n=30)
    assert inter.reference == "Male+White" and inter.key == "sex+race"
    rows = {r.group: r for r in inter.rows}
    assert rows["Female+Asian"].ratio.value == pytest.approx(0.2 / 0.5625)
    rr, lo, hi = _katz_by_hand(10, 50, 90, 160)
    assert (rows["Female+Asian"].ratio.ci_low, rows["Female+Asian"].ratio.ci_high) == (pytest.approx(lo),
                                                                                        pytest.approx(hi))
    assert rows["Male+Native American"].small and rows["Female+Native American"].small
    assert rows["Male+Native American"].flag == "small cell"  # 0.75 / 0.5625 = 1.33: reported, not flagged
    assert rows["Female+Native American"].ratio.value == pytest.approx((2 / 8) / 0.5625)
    flagged = sorted(g for g, r in rows.items() if r.flag.startswith("below"))
    # 0.4/0.5625 = 0.711, 0.3/0.5625 = 0.533, 26/70/0.5625 = 0.660, 0.2/0.5625 = 0.356, 60/140/0.5625 = 0.762
    assert flagged == ["Female+Asian", "Female+Black", "Female+Hispanic", "Female+White", "Male+Black"]
    assert rows["Male+Hispanic"].ratio.value == pytest.approx((46 / 90) / 0.5625)  # 0.909: not flagged
    assert rows["Male+Asian"].ratio.value == pytest.approx(0.48 / 0.5625)  # 0.853


def test_katz_interval_equals_statsmodels_riskratio_confint() -> None:
    for a, n1, c, n0 in ((30, 100, 50, 100), (7, 19, 33, 41), (1, 60, 12, 13), (128, 368, 209, 412)):
        t = Table2x2(np.array([[a, n1 - a], [c, n0 - c]]))
        rr, lo, hi = katz_interval(a, n1, c, n0)
        assert float(rr) == pytest.approx(t.riskratio)
        ref_lo, ref_hi = t.riskratio_confint(alpha=0.05)
        assert (float(lo), float(hi)) == (pytest.approx(ref_lo, rel=1e-12), pytest.approx(ref_hi, rel=1e-12))
    # 90% level
    t = Table2x2(np.array([[30, 70], [50, 50]]))
    _, lo, hi = katz_interval(30, 100, 50, 100, level=0.9)
    assert (float(lo), float(hi)) == (pytest.approx(t.riskratio_confint(alpha=0.1)[0]),
                                      pytest.approx(t.riskratio_confint(alpha=0.1)[1]))


def test_zero_counts_add_one_half_to_each_cell() -> None:
    """A group never selected: ratio 0, interval [0, upper] of the table with 0.5 added to
    its four counts (Haldane-Anscombe; statsmodels' `shift_zeros` shifts only the zero cells,
    so the reference is the shifted table given to statsmodels as is)."""
    rr, lo, hi = katz_interval(0, 20, 12, 30)
    assert float(rr) == 0.0 and float(lo) == 0.0
    shifted = Table2x2(np.array([[0.5, 20.5], [12.5, 18.5]]))
    assert float(hi) == pytest.approx(shifted.riskratio_confint()[1])
    fam = impact_ratios({"a": _01(0, 40), "b": _01(12, 30)}, min_n=10)
    [a] = [r for r in fam.rows if r.group == "a"]
    assert a.ratio.value == 0.0 and a.ratio.ci_low == 0.0 and a.ratio.ci_high is not None
    assert "0.5 added" in a.ratio.note and a.flag == "below 0.8"
    # the reference selected every time: its "not selected" count is 0, the same shift
    _, lo2, hi2 = katz_interval(10, 20, 30, 30)
    ref2 = Table2x2(np.array([[10.5, 10.5], [30.5, 0.5]])).riskratio_confint()
    assert (float(lo2), float(hi2)) == (pytest.approx(ref2[0]), pytest.approx(ref2[1]))


def test_most_favoured_rate_zero_is_undefined() -> None:
    fam = impact_ratios({"a": _01(0, 40), "b": _01(0, 35)}, min_n=10)
    assert fam.reference is None
    assert all(r.ratio.value is None and "undefined" in r.ratio.note and r.flag == "undefined" for r in fam.rows)
    low = fam.lowest()
    assert low.value is None and "no group has a selection rate above 0" in low.note
    # only small groups besides the reference: nothing judged
    fam = impact_ratios({"a": _01(10, 40), "b": _01(1, 5)}, min_n=10)
    assert fam.lowest().value is None and "at least 10 stimuli" in fam.lowest().note


def test_clustered_rows_use_effective_counts() -> None:
    # each stimulus asked twice with the same answer: n_eff = stimuli (see `effective_n`)
    a = _01(13, 24)
    b = _01(19, 24)
    fam = impact_ratios({"a": a + a, "b": b + b}, {"a": [f"a{i}" for i in range(24)] * 2,
                                                  "b": [f"b{i}" for i in range(24)] * 2}, min_n=10)
    [ra] = [r for r in fam.rows if r.group == "a"]
    ne_a, k = effective_n(np.array(a + a), [f"a{i}" for i in range(24)] * 2)
    assert k == 24 and ne_a == pytest.approx(24.0)
    rr, lo, hi = _katz_by_hand(13, 24, 19, 24)
    assert ra.ratio.method == KATZ_CLUSTERED and ra.ratio.rows == 96
    assert (ra.ratio.value, ra.ratio.ci_low, ra.ratio.ci_high) == (pytest.approx(rr), pytest.approx(lo),
                                                                   pytest.approx(hi))
    # the same rows read as 48 independent answers would give a narrower (wrong) interval
    naive = impact_ratios({"a": a + a, "b": b + b}, min_n=10)
    [na] = [r for r in naive.rows if r.group == "a"]
    assert na.ratio.ci_high < ra.ratio.ci_high


def test_katz_interval_coverage_by_simulation() -> None:
    """Independent binomial groups, 20,000 seeded draws (vectorised): the 95% interval
    covers the true ratio 0.3 / 0.5 = 0.6 within a couple of points of 95%."""
    rng = np.random.default_rng(20261126)
    reps, n1, n0, p1, p0 = 20_000, 150, 200, 0.3, 0.5
    x1, x0 = rng.binomial(n1, p1, reps), rng.binomial(n0, p0, reps)
    _, lo, hi = katz_interval(x1, n1, x0, n0)
    cover = float(np.mean((lo <= p1 / p0) & (p1 / p0 <= hi)))
    assert 0.93 <= cover <= 0.97, cover


def test_clustered_interval_coverage_by_simulation() -> None:
    """Stimuli asked under 3 prompt conditions, answers correlated within a stimulus (each
    stimulus's own rate drawn from a beta): the design-effect Katz interval keeps ~95%
    coverage where treating the rows as independent does not."""
    rng = np.random.default_rng(7)
    reps, k, m = 1500, 60, 3
    p1, p0, rho_ab = 0.3, 0.5, 4.0  # beta(a, b) with a + b = 4: strong within-stimulus correlation
    cl = [f"s{i}" for i in range(k) for _ in range(m)]
    q1 = rng.beta(p1 * rho_ab, (1 - p1) * rho_ab, (reps, k))
    q0 = rng.beta(p0 * rho_ab, (1 - p0) * rho_ab, (reps, k))
    y1 = (rng.random((reps, k, m)) < q1[..., None]).reshape(reps, k * m).astype(float)
    y0 = (rng.random((reps, k, m)) < q0[..., None]).reshape(reps, k * m).astype(float)
    ne1 = np.array([effective_n(r, cl)[0] for r in y1])
    ne0 = np.array([effective_n(r, cl)[0] for r in y0])
    r1, r0 = y1.mean(axis=1), y0.mean(axis=1)
    _, lo, hi = katz_interval(r1 * ne1, ne1, r0 * ne0, ne0)
    cover = float(np.mean((lo <= p1 / p0) & (p1 / p0 <= hi)))
    assert 0.93 <= cover <= 0.97, cover
    _, nlo, nhi = katz_interval(y1.sum(axis=1), k * m, y0.sum(axis=1), k * m)
    naive = float(np.mean((nlo <= p1 / p0) & (p1 / p0 <= nhi)))
    assert naive < 0.90, naive  # ignoring the clustering under-covers
