"""The intervals and tests of framework/biasaudit/stats/ against reference implementations
run on the same inputs (statsmodels, scipy) or published worked examples.

Where the project calls the same library function (Wilson, Holm), the check still pins
its own handling around the call (clipping at 0 and 1, the 1 - 2 alpha interval, degenerate
inputs) and the hand-written formulas that reuse it (`wilson_score` for effective sample
sizes, Newcombe's hybrid score interval, Katz's log interval) to the reference."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as st
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import binom_tost, confint_proportions_2indep, proportion_confint
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW, ttost_ind

from biasaudit.stats.adjust import exact_share
from biasaudit.stats.agreement import cohen_kappa, fleiss_kappa, krippendorff_alpha_nominal
from biasaudit.stats.contrasts import group_rate, newcombe, welch_difference
from biasaudit.stats.impact import katz_interval
from biasaudit.stats.means import mean_t
from biasaudit.stats.paired import mcnemar
from biasaudit.stats.proportions import clopper_pearson, wilson, wilson_score
from biasaudit.stats.significance import (
    benjamini_hochberg,
    holm,
    paired_t,
    welch_t,
    wilcoxon_signed_rank,
)
from biasaudit.verdicts.thresholds import judge_equivalence

CONFORMANCE = [
    {"check": "Wilson score interval of a proportion (95% and its 90% TOST interval; fractional effective n)",
     "source": "statsmodels proportion_confint(method='wilson')", "tolerance": "1e-12"},
    {"check": "Clopper-Pearson (exact binomial) interval; share_test: exact equivalence verdict",
     "source": "scipy.stats.binomtest(...).proportion_ci(method='exact'); statsmodels binom_tost",
     "tolerance": "1e-9; identical decisions for every k of n"},
    {"check": "Newcombe hybrid score interval of a difference of two proportions",
     "source": "statsmodels confint_proportions_2indep(compare='diff', method='newcomb')", "tolerance": "1e-12"},
    {"check": "Katz log interval of a ratio of two proportions (impact ratio)",
     "source": "statsmodels confint_proportions_2indep(compare='ratio', method='log')", "tolerance": "1e-12"},
    {"check": "Holm and Benjamini-Hochberg adjusted p-values",
     "source": "statsmodels multipletests(method='holm' / 'fdr_bh')", "tolerance": "1e-15"},
    {"check": "Welch t test and interval of a difference of means; TOST on means (one sample and Welch)",
     "source": "statsmodels CompareMeans.tconfint_diff(usevar='unequal'), ttest_ind(usevar='unequal'), "
               "ttost_ind(usevar='unequal'), DescrStatsW.tconfint_mean / ttost_mean",
     "tolerance": "1e-10; identical TOST decisions"},
    {"check": "Student t interval of a mean, paired t, Wilcoxon signed-rank, McNemar (exact)",
     "source": "statsmodels DescrStatsW.tconfint_mean, scipy ttest_rel, scipy wilcoxon, scipy binomtest",
     "tolerance": "1e-10"},
    {"check": "Cohen's kappa, Fleiss' kappa, Krippendorff's alpha (nominal)",
     "source": "statsmodels cohens_kappa / fleiss_kappa; Krippendorff (2011), Computing Krippendorff's "
               "Alpha-Reliability, worked example (alpha = 0.743)",
     "tolerance": "1e-10 (kappas); 5e-4 (published 3 digits)"},
]

PROPORTIONS = [(0, 10), (1, 10), (5, 10), (10, 10), (3, 17), (13, 20), (41, 69), (7, 69), (250, 1000)]


@pytest.mark.parametrize(("k", "n"), PROPORTIONS)
@pytest.mark.parametrize("level", [0.95, 0.99])
def test_wilson(k: int, n: int, level: float) -> None:
    e = wilson(k, n, level)
    lo, hi = proportion_confint(k, n, alpha=1 - level, method="wilson")
    assert (e.ci_low, e.ci_high) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))
    assert e.tost_interval is not None
    tlo, thi = proportion_confint(k, n, alpha=2 * (1 - level), method="wilson")
    assert e.tost_interval == (pytest.approx(tlo, abs=1e-12), pytest.approx(thi, abs=1e-12))
    # the hand-written score formula the effective-n intervals use
    centre, half = wilson_score(k / n, n, level)
    assert (centre - half, centre + half) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))


@pytest.mark.parametrize(("p", "n_eff"), [(0.3, 12.5), (0.62, 41.3), (0.05, 7.2)])
def test_wilson_on_an_effective_sample_size(p: float, n_eff: float) -> None:
    centre, half = wilson_score(p, n_eff)
    lo, hi = proportion_confint(p * n_eff, n_eff, alpha=0.05, method="wilson")
    assert (centre - half, centre + half) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))


@pytest.mark.parametrize(("k", "n"), PROPORTIONS)
def test_clopper_pearson(k: int, n: int) -> None:
    e = clopper_pearson(k, n)
    ref = st.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert (e.ci_low, e.ci_high) == (pytest.approx(ref.low, abs=1e-9), pytest.approx(ref.high, abs=1e-9))
    assert e.tost_interval is not None
    ref90 = st.binomtest(k, n).proportion_ci(confidence_level=0.90, method="exact")
    assert e.tost_interval == (pytest.approx(ref90.low, abs=1e-9), pytest.approx(ref90.high, abs=1e-9))


@pytest.mark.parametrize(("n", "low", "high"), [(69, 0.1, 0.3), (40, 0.4, 0.6), (200, 0.45, 0.55), (15, 0.2, 0.8)])
def test_exact_share_equivalence_is_binom_tost(n: int, low: float, high: float) -> None:
    """`share_test: exact` shows equivalence exactly when statsmodels' binom_tost rejects
    at 0.05, for every k of n (on the 0-1 scale and on a share scaled to 0-100)."""
    for k in range(n + 1):
        p_tost = binom_tost(k, n, low, high)[0]
        for scale in (1.0, 100.0):
            est = exact_share(wilson(k, n).scaled(scale), (0.0, scale))
            assert est.method == "clopper-pearson"
            verdict = judge_equivalence(est, low * scale, high * scale, (0.0, scale))[0]
            assert (verdict == "PASS") == (p_tost < 0.05), (k, n, p_tost, verdict)


@pytest.mark.parametrize(("a", "b"), [((12, 40), (20, 40)), ((0, 15), (3, 18)), ((30, 30), (25, 31)),
                                      ((55, 120), (48, 131))])
def test_newcombe(a: tuple[int, int], b: tuple[int, int]) -> None:
    xa = [1.0] * a[0] + [0.0] * (a[1] - a[0])
    xb = [1.0] * b[0] + [0.0] * (b[1] - b[0])
    e = newcombe(group_rate(xa), group_rate(xb))
    lo, hi = confint_proportions_2indep(a[0], a[1], b[0], b[1], method="newcomb", compare="diff")
    assert e.value == pytest.approx(a[0] / a[1] - b[0] / b[1], abs=1e-15)
    assert (e.ci_low, e.ci_high) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))


@pytest.mark.parametrize(("x1", "n1", "x0", "n0"), [(30, 100, 50, 100), (500, 1000, 500, 1000), (7, 40, 19, 44),
                                                    (120, 400, 160, 410)])
def test_katz_log_ratio(x1: int, n1: int, x0: int, n0: int) -> None:
    ratio, lo, hi = katz_interval(x1, n1, x0, n0)
    ref_lo, ref_hi = confint_proportions_2indep(x1, n1, x0, n0, method="log", compare="ratio")
    assert float(ratio) == pytest.approx((x1 / n1) / (x0 / n0), rel=1e-14)
    assert (float(lo), float(hi)) == (pytest.approx(ref_lo, rel=1e-12), pytest.approx(ref_hi, rel=1e-12))


@pytest.mark.parametrize("p", [[0.01, 0.04, 0.03, 0.2], [0.001, 0.5, 0.049, 0.012, 0.3], [0.04], [0.2, 0.2, 0.01]])
def test_holm_and_bh(p: list[float]) -> None:
    for ours, method in ((holm, "holm"), (benjamini_hochberg, "fdr_bh")):
        reject, adj = ours(p)
        ref_reject, ref_adj, _, _ = multipletests(p, alpha=0.05, method=method)
        assert adj == pytest.approx(ref_adj, abs=1e-15)
        assert list(reject) == list(ref_reject)


SAMPLES = [
    (np.array([2.1, 3.4, 1.9, 5.6, 4.4, 3.3, 2.8]), np.array([1.2, 0.4, 2.2, 1.9, 0.7, 1.1, 3.0, 2.5, 0.2])),
    (np.linspace(0, 1, 25) ** 2, np.linspace(0.1, 0.9, 12)),
    (np.random.default_rng(5).normal(0.1, 1.0, 60), np.random.default_rng(6).normal(0.0, 2.0, 35)),
]


@pytest.mark.parametrize(("x", "y"), SAMPLES)
def test_welch(x: np.ndarray, y: np.ndarray) -> None:
    cm = CompareMeans(DescrStatsW(x), DescrStatsW(y))
    t_ref, p_ref, df_ref = cm.ttest_ind(usevar="unequal")
    ours = welch_t(x, y)
    assert (ours.statistic, ours.p_value, ours.df) == (pytest.approx(t_ref, abs=1e-10), pytest.approx(p_ref, abs=1e-10),
                                                       pytest.approx(df_ref, abs=1e-9))
    for level in (0.95, 0.90):
        e, p = welch_difference(x, y, level)
        lo, hi = cm.tconfint_diff(alpha=1 - level, usevar="unequal")
        assert (e.ci_low, e.ci_high) == (pytest.approx(lo, abs=1e-10), pytest.approx(hi, abs=1e-10))
        assert p == pytest.approx(p_ref, abs=1e-10)
    # TOST for a Welch difference: the 90% interval inside the band <=> ttost_ind rejects at 0.05
    e90, _ = welch_difference(x, y, 0.90)
    assert e90.ci_low is not None and e90.ci_high is not None
    for band in ((-0.5, 0.5), (-1.0, 3.0), (-3.0, 3.0), (0.0, 5.0)):
        p_tost = ttost_ind(x, y, band[0], band[1], usevar="unequal")[0]
        inside = band[0] <= e90.ci_low and e90.ci_high <= band[1]
        assert inside == (p_tost < 0.05), (band, p_tost)


@pytest.mark.parametrize(("x", "_y"), SAMPLES)
def test_t_interval_and_tost_on_a_mean(x: np.ndarray, _y: np.ndarray) -> None:
    e = mean_t(x)
    d = DescrStatsW(x)
    lo, hi = d.tconfint_mean(alpha=0.05)
    assert (e.ci_low, e.ci_high) == (pytest.approx(lo, abs=1e-10), pytest.approx(hi, abs=1e-10))
    assert e.tost_interval is not None
    tlo, thi = d.tconfint_mean(alpha=0.10)
    assert e.tost_interval == (pytest.approx(tlo, abs=1e-10), pytest.approx(thi, abs=1e-10))
    m, s = float(x.mean()), float(x.std(ddof=1))
    for low, high in ((m - s, m + s), (m - 0.2 * s, m + 0.2 * s), (m - 0.3 * s, m + 2 * s), (m + 0.1, m + 5)):
        p_tost = d.ttost_mean(low, high)[0]
        verdict = judge_equivalence(e, low, high)[0]
        assert (verdict == "PASS") == (p_tost < 0.05), (low, high, p_tost, verdict)


@pytest.mark.parametrize(("x", "y"), [(s[0][:7], s[1][:7]) for s in SAMPLES])
def test_paired_tests(x: np.ndarray, y: np.ndarray) -> None:
    ref = st.ttest_rel(x, y)
    ours = paired_t(x, y)
    assert (ours.statistic, ours.p_value) == (pytest.approx(ref.statistic, abs=1e-10), pytest.approx(ref.pvalue, abs=1e-10))
    w = st.wilcoxon(x, y)
    ours_w = wilcoxon_signed_rank(x, y)
    assert (ours_w.statistic, ours_w.p_value) == (pytest.approx(w.statistic), pytest.approx(w.pvalue, abs=1e-12))


@pytest.mark.parametrize(("n10", "n01", "same"), [(3, 9, 20), (0, 5, 10), (12, 11, 4)])
def test_mcnemar_exact_is_the_binomial_test(n10: int, n01: int, same: int) -> None:
    a = [1.0] * n10 + [0.0] * n01 + [1.0] * same
    b = [0.0] * n10 + [1.0] * n01 + [1.0] * same
    ours = mcnemar(a, b)
    assert ours.method == "mcnemar-exact"
    assert ours.p_value == pytest.approx(st.binomtest(min(n10, n01), n10 + n01, 0.5).pvalue, abs=1e-12)


def test_agreement() -> None:
    from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    a = list("EEDNNEDDEENNDE")
    b = list("EDDNEEDNEENNDD")
    labels = sorted(set(a) | set(b))
    table = np.zeros((len(labels), len(labels)))
    for x, y in zip(a, b, strict=True):
        table[labels.index(x), labels.index(y)] += 1
    assert cohen_kappa(a, b) == pytest.approx(cohens_kappa(table).kappa, abs=1e-10)
    rows = [["E", "E", "D"], ["D", "D", "D"], ["N", "E", "N"], ["E", "E", "E"], ["R", "D", "R"], ["N", "N", "E"]]
    cats = sorted({x for r in rows for x in r})
    counts, _ = aggregate_raters(np.array([[cats.index(x) for x in r] for r in rows]), n_cat=len(cats))
    assert fleiss_kappa(rows) == pytest.approx(sm_fleiss(counts, method="fleiss"), abs=1e-10)
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability" (Annenberg School
    # for Communication, Departmental Papers 43), nominal example, 4 observers x 12 units
    n = None
    coders = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
        [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n],
    ]
    assert krippendorff_alpha_nominal(list(zip(*coders, strict=True))) == pytest.approx(0.743, abs=5e-4)
